package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// refusals are the last refusals (Forbidden, Unauthorized) of an
// identity's list and watch requests, by resource: an informer whose list
// is refused never syncs, and the wait for it ends in a timeout that does
// not say why. The informer keeps retrying and syncs once the identity's
// role allows it, with no restart.
type refusals struct {
	mu   sync.Mutex
	last map[schema.GroupResource]error
}

// handler is the caches' watch error handler: it notes a refusal and
// leaves the error to client-go's handler (logged, retried with backoff).
func (f *refusals) handler(ctx context.Context, r *toolscache.Reflector, err error) {
	var status apierrors.APIStatus
	if (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) && errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			f.mu.Lock()
			if f.last == nil {
				f.last = map[schema.GroupResource]error{}
			}
			f.last[schema.GroupResource{Group: d.Group, Resource: d.Kind}] = err
			f.mu.Unlock()
		}
	}
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}

// explain is err, a failed wait for the informer of gr to sync, as the
// refusal that kept it from syncing when there was one (first, for
// apierrors.IsForbidden to tell it), else err itself.
func (f *refusals) explain(gr schema.GroupResource, err error) error {
	f.mu.Lock()
	refused := f.last[gr]
	f.mu.Unlock()
	if err == nil || refused == nil {
		return err
	}
	return fmt.Errorf("%w (its informer has not synced: %v)", refused, err)
}

// synced forgets gr's refusal once its informer synced.
func (f *refusals) synced(gr schema.GroupResource) {
	f.mu.Lock()
	delete(f.last, gr)
	f.mu.Unlock()
}

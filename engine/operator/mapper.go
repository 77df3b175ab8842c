package operator

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// mappingTTL is how long a REST mapping found is reused without asking the
// dynamic mapper again.
const mappingTTL = 30 * time.Second

// cachedMapper remembers the REST mappings found, for mappingTTL. The
// reconciler asks for one at every cache read (whether a kind is namespaced)
// and every child checked and applied; the dynamic mapper answers each
// from its own cache but allocates a new mapping every time, a large share
// of the operator's allocations while CRs converge (docs/benchmarks.md).
// An error is never remembered:
// a kind not found is looked up again (and the dynamic mapper reloads).
type cachedMapper struct {
	meta.RESTMapper
	now func() time.Time

	mu sync.Mutex
	m  map[mappingKey]mappingEntry
}

type mappingKey struct {
	gk      schema.GroupKind
	version string
}

type mappingEntry struct {
	mapping *meta.RESTMapping
	expires time.Time
}

func newCachedMapper(m meta.RESTMapper) *cachedMapper {
	return &cachedMapper{RESTMapper: m, now: time.Now, m: map[mappingKey]mappingEntry{}}
}

// cachedMapperProvider is the manager's default mapper, cached.
func cachedMapperProvider(c *rest.Config, h *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(c, h)
	if err != nil {
		return nil, err
	}
	return newCachedMapper(m), nil
}

// RESTMapping is the mapper's answer, remembered for one version or none.
// Callers share the mapping returned and must not modify it.
func (c *cachedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) > 1 {
		return c.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk: gk}
	if len(versions) == 1 {
		key.version = versions[0]
	}
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.mapping, nil
	}
	m, err := c.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[key] = mappingEntry{mapping: m, expires: now.Add(mappingTTL)}
	c.mu.Unlock()
	return m, nil
}

// waitMapped waits, up to mapTimeout, until the mapper knows gvk: a CRD
// established a moment ago may not be in discovery yet, and a controller
// started before would log controller-runtime's "if kind is a CRD, it
// should be installed before calling Start" error, which a new user reads
// as a failure. A kind still unknown after that starts anyway (its source
// retries, and logs).
func waitMapped(ctx context.Context, mapper meta.RESTMapper, gvk schema.GroupVersionKind) (waited bool) {
	polls := 0
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, mapTimeout, true, func(context.Context) (bool, error) {
		polls++
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil, nil
	})
	return polls > 1
}

const mapTimeout = 30 * time.Second

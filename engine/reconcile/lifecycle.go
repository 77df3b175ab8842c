package reconcile

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// releasedKeys are the labels and annotations by which cueop manages a
// child; a released child loses them.
var releasedKeys = []string{
	wellknown.LabelManagedBy, wellknown.LabelOwnerUID, wellknown.LabelID,
	wellknown.AnnotationAppliedHash, wellknown.AnnotationPrune, wellknown.AnnotationOnDelete,
}

// release lets go of o (apply.Release), marking it with the CR it came from
// and the proof that cueop released it (releaseproof.go).
func (x releaser) release(ctx context.Context, o *unstructured.Unstructured) error {
	from := subjectOf(x.cr)
	mark := map[string]string{wellknown.AnnotationReleasedFrom: from}
	key, err := x.key(ctx)
	if err != nil {
		return err
	}
	if key != nil {
		if o.GetKind() == "" || o.GetUID() == "" {
			return fmt.Errorf("release of %s/%s: its kind and uid are not known, no proof can be made", o.GetNamespace(), o.GetName())
		}
		mark[wellknown.AnnotationReleaseProof] = ReleaseProof(key, o, from)
	}
	return x.applier.Release(ctx, o, x.cr.GetUID(), releasedKeys, mark)
}

// refusal is a child whose change the API server refused as immutable.
type refusal struct {
	child render.Child
	err   error
}

// stallImmutable stalls the CR when a child whose change is immutable may
// not be recreated: nothing is deleted, not even the children that may be.
func stallImmutable(refused []refusal) outcome {
	var lines []string
	for _, f := range refused {
		if f.child.Policy.Recreate {
			continue
		}
		o, id := f.child.Object, f.child.ID
		hint := fmt.Sprintf("nothing was deleted: change it back, delete it by hand, or let the template recreate it (policies: %q: recreate: true)", id)
		if !render.Recreatable(o.GroupVersionKind().GroupKind()) {
			hint = fmt.Sprintf("a %s is never recreated, nothing was deleted: change it back or replace it by hand", o.GetKind())
		}
		lines = append(lines, fmt.Sprintf("children.%s: %s %s/%s: the API server refuses the change as immutable (%s); %s",
			id, o.GetKind(), o.GetNamespace(), o.GetName(), strings.Join(apply.ImmutableFields(f.err), "; "), hint))
	}
	if len(lines) == 0 {
		return outcome{}
	}
	return stallOf(wellknown.ReasonImmutableChange, strings.Join(lines, "\n"))
}

package reconcile

import (
	"context"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/template"
)

// The settled check (resync.go) reads of each child its metadata (identity,
// applied hash, cueop's field set) and the paths the template reads of it
// (the inputs' digest), nothing else. Converting a cached typed child into
// an unstructured one is most of a settled CR's reconcile (a Pod's spec
// costs the most and no template of a RedisCluster reads it), so when the
// CR's status claims a convergence, observe first converts of each typed
// child only its metadata and the top-level fields the template reads
// (settleKeys); the digest of that view is the digest of the whole
// children, since both project to the same paths. If the CR is not
// settled, the children are observed again, whole, before anything else
// reads them.

// settleKeys is the set of top-level fields of the children, beside their
// metadata, that settled needs, when the CR's status claims a convergence
// settled may confirm; nil when observe must convert the children whole:
// the status claims none (the reconcile will render), the template's reads
// are unknown or take whole objects, or the kind's Ready comes from kstatus
// over whole children.
func (r *run) settleKeys() map[string]bool {
	if !r.maySettle() {
		return nil
	}
	reads := r.kind.Reads
	if reads == nil || reads.Observed.All || !r.kind.Value.LookupPath(template.PathReady).Exists() {
		return nil
	}
	keys := map[string]bool{}
	for _, byID := range reads.Observed.Sub {
		if byID == nil || byID.All {
			return nil
		}
		for k := range byID.Sub {
			keys[k] = true
		}
	}
	return keys
}

// partial is obj, a typed object the caller owns (a struct copy of the
// cache's), with every top-level field but its type, its metadata and keep
// set to its zero value; the zeroed fields' own contents are not touched.
// An object that is not a pointer to a struct is returned as is.
func partial(obj runtime.Object, keep map[string]bool) runtime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	s := v.Elem()
	t := s.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Anonymous || name == "" || name == "-" || name == "metadata" || keep[name] {
			continue
		}
		s.Field(i).SetZero()
	}
	return obj
}

// wholeAgain observes the children again, whole, when the last observe
// converted only what settled needs.
func (r *run) wholeAgain(ctx context.Context) error {
	if !r.partialView {
		return nil
	}
	return r.observe(ctx, nil)
}

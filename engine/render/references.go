// The objects a template reads but does not own: References evaluates the
// template's references from the CR alone, within the budget, and checks
// each against the readable kinds; Resolve matches them against objects
// of the CR's namespace; referencedValue is what the template sees of
// them.
//
// It must not read a cluster (the reconciler lists and reads the objects
// and passes them in Inputs.Referenced), nor resolve a reference to an
// object of another namespace.

package render

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Referenced is what one reference resolved to.
type Referenced struct {
	// Objects are the object read (a reference by name: exactly one) or
	// every object the selector matches, sorted by name.
	Objects []*unstructured.Unstructured
	// List tells a selector's list from a reference by name.
	List bool
}

// DefaultReadableKinds are the kinds a template may reference unless the
// administrator says otherwise: Secrets are left out on purpose.
const DefaultReadableKinds = "ConfigMap"

var defaultReadable = MustKindSet(DefaultReadableKinds)

// Reference is one object, or label selection of objects, a template reads,
// in the CR's namespace.
type Reference struct {
	ID         string                `json:"-"`
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Name       string                `json:"name,omitempty"`
	Selector   *metav1.LabelSelector `json:"selector,omitempty"`

	selector labels.Selector
}

// GroupVersionKind is the referenced kind at the version the template reads.
func (r Reference) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// String names the reference as errors and status messages do.
func (r Reference) String() string {
	if r.Selector != nil {
		return fmt.Sprintf("references.%s: %s selected by %s", r.ID, r.Kind, r.selector)
	}
	return fmt.Sprintf("references.%s: %s %s", r.ID, r.Kind, r.Name)
}

// Matches tells whether o, an object in the CR's namespace, is what r
// reads: same group and kind (any version) and the name, or labels the
// selector matches.
func (r Reference) Matches(o *unstructured.Unstructured) bool {
	if o.GroupVersionKind().GroupKind() != r.GroupVersionKind().GroupKind() {
		return false
	}
	if r.Selector == nil {
		return o.GetName() == r.Name
	}
	sel := r.selector
	if sel == nil { // a Reference not built by References
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(r.Selector); err != nil {
			return false
		}
	}
	return sel.Matches(labels.Set(o.GetLabels()))
}

// References evaluates the template's references for parent, sorted by id,
// and checks each against the readable kinds. A kind without references
// has none, at no cost. An error is an *Error.
func References(k *template.Kind, parent *unstructured.Unstructured, opts Options) ([]Reference, error) {
	if !k.References {
		return nil, nil
	}
	opts = opts.withDefaults()
	var refs []Reference
	err := opts.Budget.Run(k.Name, func(t *budget.Tracker) error {
		t.Phase("references")
		var err error
		refs, err = evalReferences(fill(k, parent, Inputs{}), k.Spec.Pos(), opts)
		return err
	})
	var ex *budget.Exceeded
	if errors.As(err, &ex) {
		return nil, budgetError(k, ex)
	}
	return refs, err
}

func evalReferences(v cue.Value, specPos token.Pos, opts Options) ([]Reference, error) {
	rv := v.LookupPath(template.PathReferences)
	if !rv.Exists() {
		return nil, nil
	}
	if err := rv.Validate(cue.Concrete(true)); err != nil {
		// A bad spec is named as the render names it, by its field.
		if serr := specError(v, specPos); serr != nil {
			return nil, serr
		}
		return nil, evalError(err)
	}
	ids, vals, err := sortedIDs(rv)
	if err != nil {
		return nil, err
	}
	refs := make([]Reference, 0, len(ids))
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	refused := &Error{Reason: wellknown.ReasonReferenceRefused}
	for _, id := range ids {
		ref, msg := decodeReference(id, vals[id])
		switch {
		case msg != "":
			bad.Messages = append(bad.Messages, msg)
		case !opts.ReadableKinds[ref.GroupVersionKind().GroupKind()]:
			refused.Messages = append(refused.Messages, entryError("references", id, vals[id],
				"kind %s is not in the readable kinds (%s): the administrator allows more with --readable-kinds",
				ref.GroupVersionKind().GroupKind(), opts.ReadableKinds))
		default:
			refs = append(refs, ref)
		}
	}
	if len(bad.Messages) > 0 {
		return nil, bad
	}
	if len(refused.Messages) > 0 {
		return nil, refused
	}
	return refs, nil
}

// decodeReference decodes one reference, or says why it is refused.
func decodeReference(id string, v cue.Value) (Reference, string) {
	ref := Reference{ID: id}
	if err := v.Decode(&ref); err != nil {
		return ref, entryError("references", id, v, "%v", err)
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Version == "" || ref.Kind == "" {
		return ref, entryError("references", id, v, "apiVersion %q and kind %q must name a kind", ref.APIVersion, ref.Kind)
	}
	if (ref.Name == "") == (ref.Selector == nil) {
		return ref, entryError("references", id, v, "give exactly one of name and selector")
	}
	if ref.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return ref, entryError("references", id, v, "selector: %v", err)
		}
		ref.selector = sel
	}
	return ref, ""
}

// authorPos is where the template writes v, not where a contract it is
// unified with (the policies contract, the references contract) does.
func authorPos(v cue.Value) token.Pos {
	if p := v.Pos(); p.IsValid() && !strings.HasSuffix(p.Filename(), " contract") {
		return p
	}
	if op, args := v.Expr(); op == cue.AndOp {
		for _, a := range args {
			if p := authorPos(a); p.IsValid() {
				return p
			}
		}
	}
	return token.NoPos
}

// Resolve matches the references against objects of the CR's namespace
// (those of other namespaces are ignored): what each resolved to, and the
// references by name that found no object. A selector that matches nothing
// resolves to an empty list.
func Resolve(refs []Reference, namespace string, objects []*unstructured.Unstructured) (map[string]Referenced, []Reference) {
	out := make(map[string]Referenced, len(refs))
	var missing []Reference
	for _, ref := range refs {
		got := Referenced{List: ref.Selector != nil}
		for _, o := range objects {
			if o.GetNamespace() == namespace && ref.Matches(o) {
				got.Objects = append(got.Objects, o)
			}
		}
		sort.Slice(got.Objects, func(i, j int) bool { return got.Objects[i].GetName() < got.Objects[j].GetName() })
		if !got.List && len(got.Objects) == 0 {
			missing = append(missing, ref)
			continue
		}
		if !got.List {
			got.Objects = got.Objects[:1]
		}
		out[ref.ID] = got
	}
	return out, missing
}

// referencedValue is what the template sees as `referenced`.
func referencedValue(refs map[string]Referenced) map[string]any {
	out := make(map[string]any, len(refs))
	for id, r := range refs {
		if !r.List {
			if len(r.Objects) > 0 {
				out[id] = withoutManagedFields(r.Objects[0].Object)
			}
			continue
		}
		list := make([]any, len(r.Objects))
		for i, o := range r.Objects {
			list[i] = withoutManagedFields(o.Object)
		}
		out[id] = list
	}
	return out
}

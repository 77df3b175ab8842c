package render

import (
	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Policy is what the engine may do to one child beyond applying it, as the
// template's `policies` says, defaults filled.
type Policy struct {
	// Recreate allows deleting and recreating the child when the API server
	// refuses a change as immutable. Without it such a change stalls the CR.
	Recreate bool `json:"recreate,omitempty"`
	// Cascade is how the child's dependents fare when it is deleted to be
	// recreated: CascadeOrphan (they stay, and the new object adopts those
	// its selector matches) or CascadeBackground (they are deleted with it).
	Cascade string `json:"cascade,omitempty"`
	// Prune is PruneAlways (a child the template stops rendering is
	// deleted) or PruneNever (it is released: left in place, no longer
	// owned by cueop).
	Prune string `json:"prune,omitempty"`
	// OnDelete is OnDeleteDelete (the child goes with its CR) or
	// OnDeleteRetain (it is released when its CR is deleted).
	OnDelete string `json:"onDelete,omitempty"`
	// Adopt is which existing object of the child's name that the CR does
	// not control it may take over (adopt.go).
	Adopt string `json:"adopt,omitempty"`
}

// Policy values.
const (
	CascadeOrphan     = "orphan"
	CascadeBackground = "background"
	PruneAlways       = "always"
	PruneNever        = "never"
	OnDeleteDelete    = "delete"
	OnDeleteRetain    = "retain"
)

// The engine's defaults: Pods exist to be replaced and are recreated on an
// immutable change unless the template says otherwise (deleted in the
// background: a Pod has no dependents, and an orphaning delete would wait
// for the garbage collector); a PersistentVolumeClaim holds data and is
// never recreated, whatever the template says. Every other kind stalls its
// CR unless opted in, and is then recreated with its dependents orphaned.
// A data kind (Options.DataKinds) is released, not deleted, on prune and
// with its CR unless the template says prune: "always" or onDelete:
// "delete".
var (
	recreatedByDefault = map[schema.GroupKind]bool{{Kind: "Pod"}: true}
	neverRecreated     = map[schema.GroupKind]bool{{Kind: "PersistentVolumeClaim"}: true}
)

// DefaultPolicy is the policy of a child of kind gk that the template gives
// none, where data lists the data kinds (nil: DefaultDataKinds).
func DefaultPolicy(gk schema.GroupKind, data KindSet) Policy {
	p := Policy{Recreate: recreatedByDefault[gk], Cascade: CascadeOrphan, Prune: PruneAlways, OnDelete: OnDeleteDelete, Adopt: AdoptReleased}
	if p.Recreate {
		p.Cascade = CascadeBackground
	}
	if dataKinds(data)[gk] {
		p.Prune, p.OnDelete = PruneNever, OnDeleteRetain
	}
	return p
}

// Recreatable is false for the kinds the engine never recreates, whatever
// the template says.
func Recreatable(gk schema.GroupKind) bool { return !neverRecreated[gk] }

// applyPolicies reads the template's policies, checks that each names a
// rendered child and suits it, and gives each child its policy and the
// annotations that carry it.
func applyPolicies(v cue.Value, children []Child, data KindSet) error {
	pv := v.LookupPath(template.PathPolicies)
	if !pv.Exists() {
		for i := range children {
			children[i].Policy = DefaultPolicy(children[i].Object.GroupVersionKind().GroupKind(), data)
			annotatePolicy(&children[i], data)
		}
		return nil
	}
	if err := pv.Validate(cue.Concrete(true)); err != nil {
		return evalError(err)
	}
	ids, vals, err := sortedIDs(pv)
	if err != nil {
		return err
	}
	byID := make(map[string]*Child, len(children))
	for i := range children {
		c := &children[i]
		c.Policy = DefaultPolicy(c.Object.GroupVersionKind().GroupKind(), data)
		byID[c.ID] = c
	}
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	for _, id := range ids {
		if msg := setPolicy(id, vals[id], byID[id]); msg != "" {
			bad.Messages = append(bad.Messages, msg)
		}
	}
	if len(bad.Messages) > 0 {
		return bad
	}
	for i := range children {
		annotatePolicy(&children[i], data)
	}
	return nil
}

// setPolicy decodes the policy of child c over its defaults, or says why it
// is refused.
func setPolicy(id string, v cue.Value, c *Child) string {
	if c == nil {
		return entryError("policies", id, v, "no child %q is rendered: write the policy under the same condition as its child", id)
	}
	if err := v.Decode(&c.Policy); err != nil {
		return entryError("policies", id, v, "%v", err)
	}
	gk := c.Object.GroupVersionKind().GroupKind()
	if c.Policy.Recreate && neverRecreated[gk] {
		return entryError("policies", id, v, "recreate: a %s is never recreated: its data would be lost", gk.Kind)
	}
	if cv := v.LookupPath(cue.ParsePath("cascade")); cv.Exists() && !c.Policy.Recreate {
		return entryError("policies", id, cv, "cascade applies only to a child with recreate: true")
	}
	return ""
}

// annotatePolicy records on c the parts of its policy that act on live
// objects, and removes annotations of the same names the template wrote. A
// child of a kind that holds no data, with the default policy and none of
// these annotations, the common case, is left as it is.
func annotatePolicy(c *Child, data KindSet) {
	md, _ := c.Object.Object["metadata"].(map[string]any)
	raw, _ := md["annotations"].(map[string]any)
	_, hasPrune := raw[wellknown.AnnotationPrune]
	_, hasOnDelete := raw[wellknown.AnnotationOnDelete]
	isData := dataKinds(data)[c.Object.GroupVersionKind().GroupKind()]
	if !isData && !hasPrune && !hasOnDelete && c.Policy.Prune == PruneAlways && c.Policy.OnDelete == OnDeleteDelete {
		return
	}
	ann := c.Object.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	delete(ann, wellknown.AnnotationPrune)
	delete(ann, wellknown.AnnotationOnDelete)
	if isData || c.Policy.Prune != PruneAlways {
		ann[wellknown.AnnotationPrune] = c.Policy.Prune
	}
	if isData || c.Policy.OnDelete != OnDeleteDelete {
		ann[wellknown.AnnotationOnDelete] = c.Policy.OnDelete
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object.Object, "metadata", "annotations")
		return
	}
	c.Object.SetAnnotations(ann)
}

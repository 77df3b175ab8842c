package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// Ownership is explicit: cueop creates a child only where no object of its
// group, kind, namespace and name exists, and writes only to objects whose
// controller owner reference is the CR. The cache holds only what carries
// cueop's labels, so it cannot tell that a name is taken: a child the
// cache does not hold is sent as a create-only apply (apply.ErrExists when
// the name is taken), and the object found is then read from the API server
// and claimed, adopted or reported as a conflict.

// Adopted is the action of taking over an existing object (policies:
// adopt), for events and metrics.
const Adopted apply.Action = "adopted"

// conflictRecheck is how often a CR in conflict looks again at the objects
// that hold its children's names, besides its own events: they are not
// cueop's, so their deletion or release brings no event.
const conflictRecheck = time.Minute

// Claim is what a CR may do with an existing object of a rendered child's
// name.
type Claim struct {
	// Adopt is set when the CR does not control the object but its policy
	// lets it take it over.
	Adopt bool
	// Released is set with Adopt when the adoption rests on the object's
	// wellknown.AnnotationReleasedFrom alone: it holds only if the object's
	// wellknown.AnnotationReleaseProof verifies (releaseproof.go).
	Released bool
	// Conflict, when not "", says why the CR may not write to the object:
	// the child id, the object and its controller.
	Conflict string
}

// ClaimOf is what cr may do with obj, the live object of its child c: apply
// over it when cr controls it; adopt it when it has no controller and c's
// policy allows (adopt: "uncontrolled", or the default "released" for an
// object cueop released from a CR of cr's kind, namespace and name);
// otherwise leave it alone, a conflict. An adoption by the released-from
// mark (Claim.Released) holds only once the mark's proof verifies, which
// the reconciler checks with its key.
func ClaimOf(cr *unstructured.Unstructured, c render.Child, obj *unstructured.Unstructured) Claim {
	ctl := metav1.GetControllerOfNoCopy(obj)
	if ctl != nil && ctl.UID == cr.GetUID() {
		return Claim{}
	}
	head := fmt.Sprintf("children.%s: %s %s/%s exists", c.ID, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	if ctl != nil {
		return Claim{Conflict: head + " and is controlled by " + controllerText(cr, ctl, obj.GetNamespace())}
	}
	from := obj.GetAnnotations()[wellknown.AnnotationReleasedFrom]
	switch {
	case c.Policy.Adopt == render.AdoptUncontrolled:
		return Claim{Adopt: true}
	case c.Policy.Adopt == render.AdoptReleased && from == subjectOf(cr):
		return Claim{Adopt: true, Released: true}
	case c.Policy.Adopt == render.AdoptReleased && from == fmt.Sprintf("%s %s/%s", cr.GetKind(), cr.GetNamespace(), cr.GetName()):
		// The mark of a cueop that did not name the group: it may be of
		// a kind of the same name in another group, and it carries no
		// proof (releaseproof.go), so only a person may say it is this
		// CR's, by its policy.
		head += fmt.Sprintf(" with no controller (released from %s, a mark without the kind's group or a proof, as cueop wrote it before it named the group)", from)
	case from != "":
		head += " with no controller (released from " + from + ")"
	default:
		head += " with no controller"
	}
	return Claim{Conflict: fmt.Sprintf("%s; policies: %s: adopt: %q would take it over", head, c.ID, render.AdoptUncontrolled)}
}

// controllerText names ctl, the controller of an object in ns; a CR of
// cr's kind and name with another uid is an earlier one, deleted (the
// garbage collector deletes the object in time).
func controllerText(cr *unstructured.Unstructured, ctl *metav1.OwnerReference, ns string) string {
	name := fmt.Sprintf("%s %s/%s", ctl.Kind, ns, ctl.Name)
	gv, err := schema.ParseGroupVersion(ctl.APIVersion)
	if err != nil || gv.Group != cr.GroupVersionKind().Group || ctl.Kind != cr.GetKind() || ctl.Name != cr.GetName() {
		return name
	}
	return fmt.Sprintf("an earlier %s (uid %s), not this one (uid %s)", name, ctl.UID, cr.GetUID())
}

// subjectOf names a CR as its released children's wellknown.AnnotationReleasedFrom
// does: "Kind.group ns/name". The group is part of the name: a kind of the
// same name in another group is another kind, and its CR of the same
// namespace and name may not adopt what this one released.
func subjectOf(cr *unstructured.Unstructured) string {
	gk := cr.GroupVersionKind().GroupKind()
	return fmt.Sprintf("%s %s/%s", gk.String(), cr.GetNamespace(), cr.GetName())
}

// claimed is an existing object of a child's name, the child a reconcile
// did not find in its cache, and what the CR may do with it.
type claimed struct {
	child render.Child
	obj   *unstructured.Unstructured
	Claim
}

// createAbsent applies, first of all, every child (of the waves not held)
// that the cache does not hold: each is created where its name is free,
// then, unless an object found is in conflict, applied over the objects
// found that the CR controls or may adopt. When any is in conflict the CR
// stalls: nothing that exists is changed, here or in applyAll.
func (w childWriter) createAbsent(ctx context.Context, res *render.Result, v *view, held map[string]bool) (outcome, []error) {
	var failed []error
	var lines []string
	var claims []claimed
	ids := map[string]bool{}
	for _, c := range res.Children {
		if held[c.ID] || v.live(c) != nil {
			continue
		}
		action, cl, err := w.create(ctx, c)
		switch {
		case err != nil:
			w.tally.applied("", err)
			failed = append(failed, err)
		case cl != nil && cl.Conflict != "":
			lines, ids[c.ID] = append(lines, cl.Conflict), true
		case cl != nil:
			claims = append(claims, *cl)
		default:
			w.tally.done(action, c.Object, nil)
		}
	}
	w.records.setConflicts(client.ObjectKeyFromObject(w.cr), ids)
	if len(lines) > 0 {
		return stallOf(wellknown.ReasonChildConflict, strings.Join(lines, "\n")), failed
	}
	return outcome{}, append(failed, w.claimAll(ctx, claims)...)
}

// create creates c where its name is free, with a create-only apply, or
// else reads the object of its name: for a child found in conflict before,
// the read comes first, so that a CR in conflict sends no write.
func (w childWriter) create(ctx context.Context, c render.Child) (apply.Action, *claimed, error) {
	a := w.applier
	if !w.records.hadConflict(client.ObjectKeyFromObject(w.cr), c.ID) {
		action, err := a.Apply(ctx, c.Object, nil)
		if !apply.IsExists(err) {
			return action, nil, deny("create "+objectText(c.Object), err) // forbidden.go
		}
	}
	obj, err := a.Get(ctx, c.Object)
	if err != nil {
		return "", nil, deny("get "+objectText(c.Object), err)
	}
	if obj == nil { // gone meanwhile
		action, err := a.Apply(ctx, c.Object, nil)
		return action, nil, deny("create "+objectText(c.Object), err)
	}
	cl := &claimed{child: c, obj: obj, Claim: ClaimOf(w.cr, c, obj)}
	if err := w.rel.prove(ctx, cl); err != nil { // releaseproof.go
		return "", nil, err
	}
	return "", cl, nil
}

// claimAll applies each child over the object of its name, which the CR
// controls (its cache had not seen it) or adopts.
func (w childWriter) claimAll(ctx context.Context, claims []claimed) []error {
	var failed []error
	for _, cl := range claims {
		apply := w.applier.Apply
		if cl.Released {
			// Over the object whose proof verified, not one that took
			// its name since.
			apply = w.applier.ApplyOver
		}
		action, err := apply(ctx, cl.child.Object, cl.obj)
		err = deny("apply "+objectText(cl.child.Object), err) // forbidden.go
		if err == nil && cl.Adopt {
			action = Adopted
		}
		w.tally.done(action, cl.child.Object, err)
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}

// dropReleasedMark removes wellknown.AnnotationReleasedFrom, and its proof, from live, a child the CR
// controls again (adopted), unless the template renders it; action is what
// the apply before it did, and what the reconcile did to the child.
func (w childWriter) dropReleasedMark(ctx context.Context, c render.Child, live *unstructured.Unstructured, action apply.Action) (apply.Action, error) {
	if _, ok := live.GetAnnotations()[wellknown.AnnotationReleasedFrom]; !ok {
		return action, nil
	}
	if _, rendered := c.Object.GetAnnotations()[wellknown.AnnotationReleasedFrom]; rendered {
		return action, nil
	}
	if action == apply.Unchanged {
		action = apply.Updated
	}
	return action, deny("patch "+objectText(live), w.applier.RemoveAnnotations(ctx, live, wellknown.AnnotationReleasedFrom, wellknown.AnnotationReleaseProof))
}

// setConflicts remembers the children of key found in conflict by its
// last reconcile.
func (s *crs) setConflicts(key types.NamespacedName, ids map[string]bool) {
	s.change(key, func(c *crRecord) { c.conflicts = ids })
}

// hadConflict says whether key's last reconcile found child id in conflict.
func (s *crs) hadConflict(key types.NamespacedName, id string) bool {
	had := false
	s.read(key, func(c *crRecord) { had = c.conflicts[id] })
	return had
}

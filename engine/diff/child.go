package diff

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// child classifies one rendered child of cr against live (nil when absent)
// with a dry-run apply. It returns the child unchanged when nothing would
// change.
func (d *differ) child(ctx context.Context, cr *unstructured.Unstructured, c render.Child, live *unstructured.Unstructured) Child {
	out := childOf(c.ID, c.Object)
	if live != nil {
		if need, _, err := d.applier.NeedsApply(c.Object, live); err == nil && !need {
			out.Action = Unchanged
			return out
		}
	}
	var got *unstructured.Unstructured
	var err error
	if live == nil {
		got, err = d.applier.DryRunCreate(ctx, c.Object)
	} else {
		got, err = d.applier.DryRun(ctx, c.Object, "")
	}
	switch {
	case apply.IsExists(err):
		return d.existing(ctx, cr, c)
	case err == nil && live == nil:
		out.Action = Create
		out.Diff = d.unified(out, nil, got)
	case err == nil:
		out.Action, out.Diff = Update, d.unified(out, live, got)
		if out.Diff == "" {
			out.Action = Unchanged // only cueop's bookkeeping would change
		}
	case apply.IsImmutable(err) && live != nil:
		d.immutable(ctx, &out, c, live, err)
	default:
		out.Action, out.Destructive, out.Reason = Refused, true, fmt.Sprintf("children.%s: %v", c.ID, err)
		out.Diff = d.unified(out, live, stamped(c.Object))
	}
	return out
}

// existing classifies a child whose name is taken by an object the list of
// cr's children did not hold, as the controller's claim does: a conflict
// (the CR would stall with ChildConflict, nothing written), an adoption, or
// an object cr controls that lacks cueop's labels (an update).
func (d *differ) existing(ctx context.Context, cr *unstructured.Unstructured, c render.Child) Child {
	out := childOf(c.ID, c.Object)
	obj, err := d.applier.Get(ctx, c.Object)
	if err != nil || obj == nil {
		out.Action, out.Reason = Refused, fmt.Sprintf("children.%s: the name is taken, and reading the object failed: %v", c.ID, err)
		return out
	}
	claim := reconcile.ClaimOf(cr, c, obj)
	if claim.Released && !reconcile.HasReleaseProof(obj) {
		// A released-from mark without its proof: the controller stalls
		// the CR whatever its key (reconcile/converge.go: ReleaseProof).
		claim = reconcile.ProveClaim(nil, c, obj, claim)
	}
	if claim.Conflict != "" {
		out.Action, out.Reason = Conflict, claim.Conflict+": the CR would stall (ChildConflict) and write nothing to it"
		return out
	}
	out = d.child(ctx, cr, c, obj)
	if claim.Adopt && out.Action != Refused {
		out.Action = Adopt
		out.Reason = fmt.Sprintf("no controller: taken over (policies: %s: adopt: %q)", c.ID, c.Policy.Adopt)
		if claim.Released {
			out.Reason = fmt.Sprintf("no controller, marked released from this CR: taken over if its %s verifies under the operator's key, which diff does not read; else the CR would stall (ChildConflict) and write nothing to it", wellknown.AnnotationReleaseProof)
		}
	}
	return out
}

// immutable classifies a change the API server refuses as immutable: a
// recreate when the child's policy allows it, else a refusal that stalls
// the CR (reconcile: ImmutableChange).
func (d *differ) immutable(ctx context.Context, out *Child, c render.Child, live *unstructured.Unstructured, err error) {
	fields := shorten(strings.Join(apply.ImmutableFields(err), "; "))
	out.Destructive = true
	if !c.Policy.Recreate || !render.Recreatable(c.Object.GroupVersionKind().GroupKind()) {
		out.Action = Refused
		out.Reason = fmt.Sprintf("children.%s: %s %s/%s: the API server refuses the change as immutable (%s); the CR would stall (ImmutableChange) and nothing be deleted",
			c.ID, out.Kind, out.Namespace, out.Name, fields)
		out.Diff = d.unified(*out, live, stamped(c.Object))
		return
	}
	// What creating it anew gives: the same apply under a free name.
	tmp := previewName(c.Object)
	anew, derr := d.applier.DryRun(ctx, c.Object, tmp)
	if derr != nil {
		out.Action = Refused
		out.Reason = fmt.Sprintf("children.%s: immutable field changed (%s): the controller would delete it, and the API server refuses to create it anew: %s",
			c.ID, fields, strings.ReplaceAll(derr.Error(), tmp, c.Object.GetName()))
		out.Diff = d.unified(*out, live, stamped(c.Object))
		return
	}
	out.Action = Recreate
	out.Reason = fmt.Sprintf("immutable field changed (%s): deleted (cascade %s) and created anew", fields, c.Policy.Cascade)
	out.Diff = d.unified(*out, live, anew)
}

// previewName is a name no object has, valid for every kind (a DNS-1035
// label), to dry-run the creation of an object that exists.
func previewName(o *unstructured.Unstructured) string {
	sum := sha256.Sum256([]byte(o.GetNamespace() + "/" + o.GetName()))
	return "cueop-diff-" + hex.EncodeToString(sum[:])[:16]
}

// stamped is desired as the applier would send it, for a diff where the API
// server gave no answer.
func stamped(desired *unstructured.Unstructured) *unstructured.Unstructured {
	return desired.DeepCopy()
}

// prune classifies an owned child the render no longer has.
func (d *differ) prune(o *unstructured.Unstructured) Child {
	out := childOf(o.GetLabels()[wellknown.LabelID], o)
	if d.o.Render.LivePolicy(o).Prune == render.PruneNever {
		out.Action, out.Reason = Release, "policy prune: never: left in place, no longer owned by cueop"
		return out
	}
	out.Action = Prune
	if d.o.Render.IsDataKind(o) {
		out.Destructive, out.Reason = true, fmt.Sprintf("deleting a %s deletes its data", o.GetKind())
	}
	out.Diff = d.unified(out, o, nil)
	return out
}

func childOf(id string, o *unstructured.Unstructured) Child {
	return Child{ID: id, APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
}

// unified is the diff from live to after (either may be nil) of the
// fields cueop owns on either, "" when they agree.
func (d *differ) unified(c Child, live, after *unstructured.Unstructured) string {
	owned := union(ownedBy(live, d.manager), ownedBy(after, d.manager))
	from := view(live, owned)
	toOwned := owned
	if after != nil && after.GetManagedFields() == nil {
		toOwned = nil // a rendered object: all of it is cueop's
	}
	to := view(after, toOwned)
	if from == nil && to == nil || reflect.DeepEqual(from, to) {
		return ""
	}
	name := fmt.Sprintf("%s %s/%s (children.%s)", c.Kind, c.Namespace, c.Name, c.ID)
	fromName, toName := name+" live", name+" after"
	if live == nil {
		fromName = name + " absent"
	}
	if after == nil {
		toName = name + " deleted"
	}
	return Unified(fromName, toName, toYAML(from), toYAML(to))
}

func toYAML(m map[string]any) string {
	if m == nil {
		return ""
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return fmt.Sprintf("# %v\n", err)
	}
	return string(b)
}

// shorten cuts an API server message that lists every mutable field.
func shorten(s string) string {
	const most = 160
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}

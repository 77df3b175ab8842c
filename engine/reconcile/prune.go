// Stage 6, prune: delete the owned children the render no longer has, or
// release those whose policy says prune: never; the pruner is the deletion
// path's hands too (deletion.go).
//
// It must not run unless every apply succeeded, nor delete a child the API
// server no longer lists as the CR's (confirmed: the cache may lag) or one
// to retain.

package reconcile

import (
	"context"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
)

// pruner is stage 6, and the deletion path's hands (deletion.go,
// deletion.go): it deletes or releases the children a CR no longer has.
type pruner struct {
	applier *apply.Applier
	cluster Cluster // nil: prunes are confirmed by the cache alone
	opts    render.Options
	rel     releaser
	tally   tally
	log     logger
	cr      *unstructured.Unstructured
}

// prune deletes every child in owned that the render's children no longer
// have, or releases it when its policy says prune: never. It runs only
// after every apply succeeded.
func (p pruner) prune(ctx context.Context, children []render.Child, owned liveChildren) error {
	var errs []error
	victims, err := p.confirmed(ctx, pruneVictims(children, owned))
	if err != nil {
		return err
	}
	for _, o := range victims {
		action, err := p.pruneOne(ctx, o)
		p.tally.done(action, o, err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pruneOne deletes a child the template no longer renders, or releases it
// when its live policy says prune: never (recorded on it, or its kind's
// default: a data kind is released).
func (p pruner) pruneOne(ctx context.Context, o *unstructured.Unstructured) (apply.Action, error) {
	if p.opts.LivePolicy(o).Prune == render.PruneNever {
		return apply.Released, deny("release "+objectText(o), p.rel.release(ctx, o)) // forbidden.go
	}
	return apply.Pruned, deny("delete "+objectText(o), p.applier.Prune(ctx, o))
}

// confirmed are the victims of a prune that the API server lists as the
// CR's children now (Cluster.Owned): the cache's view decides nothing
// is deleted on its own. A list refused (a denial: forbidden.go) or failed
// prunes nothing. Without a Cluster (tests) the victims are the cache's.
func (p pruner) confirmed(ctx context.Context, victims []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if len(victims) == 0 || p.cluster == nil {
		return victims, nil
	}
	live, err := ownedNow(ctx, p.cluster, p.cr) // deletion.go
	if err != nil {
		return nil, err
	}
	there := map[types.UID]bool{}
	for _, o := range live {
		there[o.GetUID()] = o.GetDeletionTimestamp() == nil
	}
	return slices.DeleteFunc(victims, func(o *unstructured.Unstructured) bool { return !there[o.GetUID()] }), nil
}

// retained says whether o, a live child, is released rather than deleted
// with its CR (render.Options.LivePolicy).
func retained(opts render.Options, o *unstructured.Unstructured) bool {
	return opts.LivePolicy(o).OnDelete == render.OnDeleteRetain
}

package reconcile

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// TestForgetDropsTheWholeRecord: what the reconciler keeps of a CR, its
// rollout turn and what it references included, is one record, and
// forgetting the CR gone drops all of it; what an index handed to the
// reconciler learnt before the reconciler bound it is kept.
func TestForgetDropsTheWholeRecord(t *testing.T) {
	k := &template.Kind{Revision: "r1"}
	r := NewReconciler(k)
	r.Refs = NewRefIndex()
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	r.Refs.Set(key, []render.Reference{{ID: "s", APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}})
	r.Refs.bind(&r.crs)
	if got := r.Rollout.Choose(key, "", false); got != k {
		t.Fatalf("Choose = %v, want the current revision", got)
	}
	r.Rollout.Done(key, k, true, false)
	r.crs.busyQuiet(key, time.Now())
	if n := len(r.crs.m); n != 1 {
		t.Fatalf("%d records, want the CR's one", n)
	}
	if got := r.Refs.Match(cm("ns", "settings", nil)); len(got) != 1 || got[0] != key {
		t.Fatalf("Match = %v, want %v", got, key)
	}
	if p := r.Rollout.Progress(); p.PerRevision["r1"] != 1 {
		t.Fatalf("progress %+v, want the CR on r1", p)
	}
	r.forget(context.Background(), key, true)
	if len(r.crs.m) != 0 || len(r.crs.refNS) != 0 {
		t.Errorf("after forget: records %v, references by namespace %v", r.crs.m, r.crs.refNS)
	}
	if got := r.Refs.Match(cm("ns", "settings", nil)); len(got) != 0 {
		t.Errorf("Match after forget = %v", got)
	}
	if p := r.Rollout.Progress(); len(p.PerRevision) != 0 || p.InFlight != 0 {
		t.Errorf("progress after forget %+v", p)
	}
}

package golden

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
)

// SectionHeld lists the children a reconcile would hold back behind a wave
// not ready, and why: its first line is the CR's Reconciling message
// (`wave 1 waits for children.migrate: Job ns/x-migrate to be ready
// (readyWhen)`), then one line per held child, `id: Kind ns/name (wave
// N)`. Held children are left out of children.yaml: a case shows what the
// operator applies at that step. The gate is the operator's
// (reconcile.GateWaves) over observed.yaml, but without StorageClasses: a
// Pending claim holds its wave.
const SectionHeld = "held.txt"

// gateCase splits the children of res into those applied now and, for a
// kind with waves whose lower waves are not all observed and ready, the
// held.txt section; held is nil when nothing is held.
func gateCase(res *render.Result, observed map[string]*unstructured.Unstructured) (applied []render.Child, held []byte) {
	live := func(c render.Child) *unstructured.Unstructured { return observed[c.ID] }
	g := reconcile.GateWaves(context.Background(), res.Children, live, nil)
	if g.Held == nil {
		return res.Children, nil
	}
	var b strings.Builder
	b.WriteString(g.Message() + "\n")
	for _, c := range res.Children {
		if !g.Held[c.ID] {
			applied = append(applied, c)
			continue
		}
		o := c.Object
		fmt.Fprintf(&b, "%s: %s %s/%s (wave %d)\n", c.ID, o.GetKind(), o.GetNamespace(), o.GetName(), c.Wave)
	}
	return applied, []byte(b.String())
}

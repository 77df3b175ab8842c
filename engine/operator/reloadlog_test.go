package operator_test

import (
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestBrokenReloadLoggedOnce: a template edit that does not load is one
// ERROR record ("templates did not load", with its position), not two: the
// templates watch does not log the same error again as a failed reload.
func TestBrokenReloadLoggedOnce(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"scaled/scaled.cue": scaledTemplate})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "scaleds.absent.test.example", "--ignore-not-found") })
	act, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	defer stop()
	act.WaitLog(t, time.Minute, "serving kind", "kind", "Scaled")

	testkit.WriteKind(t, dir, "scaled", scaledTemplate+"\nbroken: 1 & 2\n")
	act.WaitLog(t, time.Minute, "templates did not load")
	// A fixed edit is a new revision served: the watch has returned from
	// the broken reload, and logged whatever it would log of it.
	testkit.WriteKind(t, dir, "scaled", scaledTemplate+"\n// fixed\n")
	act.WaitLog(t, time.Minute, "template changed", "kind", "Scaled")
	if got := act.Logged("templates did not load"); len(got) != 1 {
		t.Errorf("%d load errors logged, want 1: %v", len(got), got)
	}
	if got := act.Logged("template reload"); len(got) != 0 {
		t.Errorf("the load error logged again by the templates watch: %v", got)
	}
}

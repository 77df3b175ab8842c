package apply_test

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
)

func TestScratchPod(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := rendered(t, e.ns, "r")["pod-0"]
	live := e.mustApply(t, a, desired, apply.Created)
	b, _ := yaml.Marshal(live.Object)
	t.Logf("%s", b)
}

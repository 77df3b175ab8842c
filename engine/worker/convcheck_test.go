package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/engine/worker/workertest"
)

func loadVersionsKind(t *testing.T, src string) *template.Kind {
	t.Helper()
	set, err := template.Load(workertest.Templates(t, map[string]string{"hostileversions/hostileversions.cue": src}))
	if err != nil {
		t.Fatal(err)
	}
	return set.Kinds[0]
}

func generatedSpecs(t *testing.T, k *template.Kind) []convert.Spec {
	t.Helper()
	crd, err := crdgen.Generate(k)
	if err != nil {
		t.Fatal(err)
	}
	return convert.GeneratedSpecs(crd)
}

// TestCheckConversionsInWorker: a new revision's round trips run in a
// worker. Conversions that explode on a spec at the schema's bounds (a
// terabyte repeated, three nested loops over 2000 items) end that worker
// and refuse the revision, naming the check; this process lives on. A
// lossy conversion is refused with the message `cueop vet` gives; the
// kind as shipped passes.
func TestCheckConversionsInWorker(t *testing.T) {
	p := newPool(t, worker.Options{})
	ctx := context.Background()
	b := budget.Budget{Time: 300 * time.Millisecond}

	good := loadVersionsKind(t, workertest.HostileVersionsKind)
	if err := p.CheckConversions(ctx, good, generatedSpecs(t, good), b); err != nil {
		t.Fatalf("the shipped kind's check: %v", err)
	}

	bomb := loadVersionsKind(t, strings.Replace(workertest.HostileVersionsKind,
		"if in.spec.trigger != _|_ {\n\t\t\t\ttrigger: in.spec.trigger\n\t\t\t\tif in.spec.trigger == \"now\" {",
		"if in.spec.trigger != _|_ {trigger: in.spec.trigger}\n\t\t\tif true {\n\t\t\t\tif true {", 1))
	err := p.CheckConversions(ctx, bomb, generatedSpecs(t, bomb), b)
	if err == nil || !strings.Contains(err.Error(), "kind hostileversions: ") ||
		!strings.Contains(err.Error(), "budget") && !strings.Contains(err.Error(), "crashed its worker") {
		t.Fatalf("check of conversions that explode at the bounds = %v, want the revision refused over its budget", err)
	}
	t.Log(err)
	if _, killed := p.Stats(); killed == 0 {
		t.Error("no worker ended")
	}

	lossy := loadVersionsKind(t, strings.Replace(workertest.HostileVersionsKind, "\t\t\titems: in.spec.items\n\t\t\tif in.spec.trigger", "\t\t\tif in.spec.trigger", 1))
	err = p.CheckConversions(ctx, lossy, generatedSpecs(t, lossy), b)
	if err == nil || !strings.Contains(err.Error(), "kind hostileversions: ") || !strings.Contains(err.Error(), "spec.items") {
		t.Fatalf("check of a fromHub that drops items = %v, want it refused naming spec.items", err)
	}
	inProcess, _ := convert.New(lossy)
	// In process the whole test binary's CPU counts (a loaded machine, the
	// race detector): a budget no round trip here nears, the message alone
	// compared.
	inProcess = inProcess.WithBudget(budget.Budget{Time: time.Minute})
	if want := inProcess.CheckSpecs(generatedSpecs(t, lossy)); want == nil || err.Error() != want.Error() {
		t.Errorf("refused in a worker with %q, in process (cueop vet) with %v", err, want)
	}
}

package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/engine/worker/workertest"
)

func TestMain(m *testing.M) {
	worker.Main()
	os.Exit(m.Run())
}

// loadHostile writes the hostile kind into a templates directory and
// loads it.
func loadHostile(t testing.TB) *template.Kind {
	t.Helper()
	set, err := template.Load(workertest.Templates(t, map[string]string{"hostile/hostile.cue": workertest.HostileKind}))
	if err != nil {
		t.Fatal(err)
	}
	return set.Kinds[0]
}

func cr(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hostile.test.example/v1", "kind": "Hostile",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "generation": int64(1)},
		"spec":     spec,
	}}
}

func newPool(t testing.TB, opts worker.Options) *worker.Pool {
	p := worker.New(opts)
	t.Cleanup(p.Close)
	return p
}

// TestRenderInWorker: a render in a worker is the render in process.
func TestRenderInWorker(t *testing.T) {
	k := loadHostile(t)
	p := newPool(t, worker.Options{})
	in := render.Inputs{Kind: k, Parent: cr("ns", "a", map[string]any{"line": "ab", "count": int64(3)})}
	want, err := render.RenderInputs(in, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds the kind compiled
		got, err := p.Render(context.Background(), in, render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("worker render = %#v\nwant %#v", got, want)
		}
	}
	// The result came packed, and the memo keeps it as it came.
	got, packed, err := p.RenderPacked(context.Background(), in, render.Options{})
	if err != nil || packed == nil {
		t.Fatalf("RenderPacked: packed %v, error %v", packed, err)
	}
	if again := render.Reuse(in, packed.Unpack()); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(again, want) {
		t.Errorf("packed render = %#v, unpacked again %#v\nwant %#v", got, again, want)
	}
	if started, killed := p.Stats(); started != 1 || killed != 0 {
		t.Errorf("workers started %d, killed %d; want 1, 0", started, killed)
	}
}

// TestFatalAllocationEndsOnlyItsWorker: a CR at the schema's bounds makes
// the render allocate a terabyte at once, which no budget sees coming and
// Go cannot survive: the worker dies, the CR gets a RenderBudget error that
// names it, and the next CR renders on a new worker.
func TestFatalAllocationEndsOnlyItsWorker(t *testing.T) {
	k := loadHostile(t)
	p := newPool(t, worker.Options{})
	bomb := cr("tenant-a", "bomb", workertest.BombSpec())
	_, err := p.Render(context.Background(), render.Inputs{Kind: k, Parent: bomb}, render.Options{})
	var rerr *render.Error
	if !errors.As(err, &rerr) || rerr.Reason != wellknown.ReasonRenderBudget {
		t.Fatalf("render of the bomb = %v, want a %s error", err, wellknown.ReasonRenderBudget)
	}
	for _, want := range []string{"hostile: render crashed its worker (", "out of memory", "of CPU", render.BudgetRevision(k)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
	res, err := p.Render(context.Background(), render.Inputs{Kind: k, Parent: cr("tenant-b", "fine", map[string]any{"count": int64(2)})}, render.Options{})
	if err != nil || res.Status["lines"] != int64(2) {
		t.Fatalf("render after the crash = %v, %v", res, err)
	}
	if started, killed := p.Stats(); started != 2 || killed != 1 {
		t.Errorf("workers started %d, killed %d; want 2, 1", started, killed)
	}
}

// TestSlowRenderIsKilled: three nested loops over 2000 items run out of
// the CPU budget; the worker is killed rather than left evaluating, so the
// stall names the CPU the evaluation itself used.
func TestSlowRenderIsKilled(t *testing.T) {
	k := loadHostile(t)
	p := newPool(t, worker.Options{})
	opts := render.Options{Budget: budget.Budget{Time: 200 * time.Millisecond}}
	_, err := p.Render(context.Background(), render.Inputs{Kind: k, Parent: slow("tenant-a", "slow")}, opts)
	var rerr *render.Error
	if !errors.As(err, &rerr) || rerr.Reason != wellknown.ReasonRenderBudget || !strings.Contains(err.Error(), "of CPU") {
		t.Fatalf("slow render = %v, want a %s error naming the CPU used", err, wellknown.ReasonRenderBudget)
	}
	t.Log(err)
	if _, killed := p.Stats(); killed != 1 {
		t.Errorf("workers killed %d, want 1", killed)
	}
}

func slow(ns, name string) *unstructured.Unstructured {
	return cr(ns, name, workertest.SlowSpec())
}

// TestFairShare: while one tenant's slow render holds its share of the
// workers, its further renders are refused as Busy at once (they retry
// later) and another tenant's render is served by another worker, long
// before the slow one ends.
func TestFairShare(t *testing.T) {
	k := loadHostile(t)
	p := newPool(t, worker.Options{Workers: 2})
	opts := render.Options{Budget: budget.Budget{Time: 2 * time.Second}}
	slowDone := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), render.Inputs{Kind: k, Parent: slow("tenant-a", "slow-1")}, opts)
		slowDone <- err
	}()
	var busy *worker.Busy
	for !errors.As(tryRender(t, p, k, slow("tenant-a", "slow-2"), opts), &busy) {
	} // the first slow render runs, and has for a while
	if busy.Tenant != "tenant-a" || busy.Running != 1 {
		t.Errorf("Busy = %+v, want tenant-a with 1 running", busy)
	}
	res, err := p.Render(context.Background(), render.Inputs{Kind: k, Parent: cr("tenant-b", "quick", nil)}, opts)
	if err != nil || res.Status["lines"] != int64(1) {
		t.Fatalf("quick render = %v, %v", res, err)
	}
	select {
	case err := <-slowDone:
		t.Errorf("the quick render of tenant-b waited for the slow render of tenant-a (%v)", err)
	default:
		if err := <-slowDone; !strings.Contains(fmt.Sprint(err), wellknown.ReasonRenderBudget) && !strings.Contains(fmt.Sprint(err), "budget") {
			t.Errorf("slow render = %v, want it over budget", err)
		}
	}
}

// tryRender renders parent, and fails the test when it succeeds: the
// caller waits for a refusal.
func tryRender(t *testing.T, p *worker.Pool, k *template.Kind, parent *unstructured.Unstructured, opts render.Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := p.Render(ctx, render.Inputs{Kind: k, Parent: parent}, opts)
	if err == nil {
		t.Fatal("render of a slow CR succeeded")
	}
	return err
}

// TestLoadCompilesInWorkersFirst: a package that allocates a terabyte when
// compiled crashes a worker and is refused (Broken, the worker's crash
// named); the other package is compiled, and its kind renders.
func TestLoadCompilesInWorkersFirst(t *testing.T) {
	dir := workertest.Templates(t, map[string]string{"hostile/hostile.cue": workertest.HostileKind, "templatebomb/bomb.cue": workertest.TemplateBomb})
	p := newPool(t, worker.Options{Workers: 1})
	admit := func(root, name string) (func(*template.Kind) error, error) {
		return p.Compile(context.Background(), root, name, budget.Budget{})
	}
	set, err := template.LoadWith(dir, template.LoadOptions{Admit: admit})
	if err == nil || set == nil || len(set.Kinds) != 1 || set.Kinds[0].Name != "hostile" {
		t.Fatalf("LoadWith = %v, %v; want the hostile kind and an error", set, err)
	}
	if why := set.Broken["templatebomb"]; why == nil || !strings.Contains(why.Error(), "package templatebomb: compile crashed its worker (") || !strings.Contains(why.Error(), "out of memory") {
		t.Errorf("templatebomb broken with %v", why)
	}
	if _, err := p.Render(context.Background(), render.Inputs{Kind: set.Kinds[0], Parent: cr("ns", "a", nil)}, render.Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestLastGoodRevisionRendersAfterEdit: the templates on disk changed to
// a revision the operator compiled (in a worker) and refused; the kind the
// operator still serves, the last good revision, keeps rendering in every
// worker, the one that compiled the new revision and a fresh one alike.
func TestLastGoodRevisionRendersAfterEdit(t *testing.T) {
	dir := workertest.Templates(t, map[string]string{"hostile/hostile.cue": workertest.HostileKind})
	set := templatetest.Load(t, dir)
	good := set.Kinds[0]
	in := render.Inputs{Kind: good, Parent: cr("ns", "a", map[string]any{"count": int64(2)})}
	want, err := render.RenderInputs(in, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(workertest.HostileKind, "status: lines: parent.spec.count", "status: lines: parent.spec.count + 1", 1)
	if err := os.WriteFile(good.Dir+"/hostile.cue", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := newPool(t, worker.Options{})
	compiled := newPool(t, worker.Options{Workers: 1})
	if _, err := compiled.Compile(context.Background(), good.Root(), good.Name, budget.Budget{}); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*worker.Pool{"a fresh worker": fresh, "the worker that compiled the edit": compiled} {
		got, err := p.Render(context.Background(), in, render.Options{})
		if err != nil {
			t.Fatalf("%s: render of revision %s: %v", name, good.Revision, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: render = %#v\nwant %#v", name, got, want)
		}
	}
}

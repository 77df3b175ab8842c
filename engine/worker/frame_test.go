package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/engine/worker"
)

// returns runs f and fails the test when it has not returned within d.
func returns(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still waiting after %s", d)
		return nil
	}
}

// TestOversizedRequestRefusedBeforeAWorker: a render whose inputs do not
// fit in one message to a worker (65 referenced ConfigMaps of 1 MiB) is
// refused at once, before any worker is taken, as a RenderBudget error
// that names the CR, the size and the inputs that made it; the tenant's
// next render is served.
func TestOversizedRequestRefusedBeforeAWorker(t *testing.T) {
	k := loadHostile(t)
	p := newPool(t, worker.Options{Workers: 2})
	var cms []*unstructured.Unstructured
	for i := range 65 {
		cms = append(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i), "namespace": "tenant-a"},
			"data":     map[string]any{"d": strings.Repeat("x", 1<<20)}}})
	}
	in := render.Inputs{Kind: k, Parent: cr("tenant-a", "big", nil), Referenced: map[string]render.Referenced{"cms": {List: true, Objects: cms}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	// Encoding 65 MiB takes seconds under the race detector.
	err := returns(t, time.Minute, func() error { _, err := p.Render(ctx, in, render.Options{}); return err })
	var rerr *render.Error
	if !errors.As(err, &rerr) || rerr.Reason != wellknown.ReasonRenderBudget {
		t.Fatalf("render of the oversized request = %v, want a %s error", err, wellknown.ReasonRenderBudget)
	}
	for _, want := range []string{"Hostile tenant-a/big: render request of 65.0 MiB", "64.0 MiB", "references.cms 65.0 MiB (65 objects)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
	if started, _ := p.Stats(); started != 0 {
		t.Errorf("%d workers started for a refused request, want 0", started)
	}
	err = returns(t, 30*time.Second, func() error {
		_, err := p.Render(context.Background(), render.Inputs{Kind: k, Parent: cr("tenant-a", "small", nil)}, render.Options{})
		return err
	})
	if err != nil {
		t.Fatalf("the tenant's next render = %v", err)
	}
}

// TestDeadlineReturnsFromAWorkerThatDoesNotRead: a worker that stopped
// reading its requests (hung) does not hold the caller past its context's
// deadline, and is ended.
func TestDeadlineReturnsFromAWorkerThatDoesNotRead(t *testing.T) {
	k := loadHostile(t)
	// Says hello as a worker does, then reads nothing.
	hello := `{"hello":{"pid":1},"cpu":0}`
	script := fmt.Sprintf(`printf '\000\000\000\%03o%s'; exec sleep 3600`, len(hello), hello)
	p := newPool(t, worker.Options{Workers: 1, Command: func() (*exec.Cmd, error) { return exec.Command("sh", "-c", script), nil }})
	// More than a pipe holds: the write blocks.
	in := render.Inputs{Kind: k, Parent: cr("tenant-a", "a", map[string]any{"line": strings.Repeat("x", 4<<20)})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := returns(t, 10*time.Second, func() error { _, err := p.Render(ctx, in, render.Options{}); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("render = %v, want the context's deadline", err)
	}
	if _, killed := p.Stats(); killed != 1 {
		t.Errorf("workers killed %d, want 1", killed)
	}
}

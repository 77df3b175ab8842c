package worker

import (
	"context"
	"testing"
	"time"
)

// TestReleaseAfterCloseEndsTheWorker: a worker whose evaluation ends after
// the pool closed (a handover of the operator's work) ends too, rather
// than wait in the idle list of a pool nobody uses.
func TestReleaseAfterCloseEndsTheWorker(t *testing.T) {
	p := New(Options{Workers: 2})
	defer p.Close()
	w, err := p.acquire(context.Background(), "tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.release(w, true)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		w.kill()
		t.Fatal("the worker released after Close still runs")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) != 0 || p.procs != 0 {
		t.Errorf("after Close: %d idle workers, %d counted; want 0, 0", len(p.idle), p.procs)
	}
}

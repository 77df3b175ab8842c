package budget_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
)

// TestRunWithinBudget returns f's own result.
func TestRunWithinBudget(t *testing.T) {
	want := errors.New("f's error")
	if err := (budget.Budget{}).Run("ok", func(*budget.Tracker) error { return want }); err != want {
		t.Errorf("Run = %v, want f's error", err)
	}
	err := (budget.Budget{}).Run("panic", func(*budget.Tracker) error { panic("boom") })
	if err == nil || err.Error() != "panic: evaluation panicked: boom" {
		t.Errorf("Run of a panic = %v", err)
	}
}

// TestRunWallAbandonsAndBounds: an evaluation that does not end within
// WallFactor times its CPU budget is abandoned; MaxAbandoned abandoned ones
// of a key refuse the next of that key (and only that key) until one ends.
//
// The CPU charged is the process's, shared among the running evaluations,
// so the budget is large enough that the idle test process (its start under
// -race, the watchdog's ticks) cannot use it within the wall-clock bound:
// 5 ms was used up by the start once on a loaded machine.
func TestRunWallAbandonsAndBounds(t *testing.T) {
	b := budget.Budget{Time: 200 * time.Millisecond, Memory: -1, MaxAbandoned: 2}
	release := make(chan struct{})
	defer close(release)
	block := func(tr *budget.Tracker) error {
		tr.Phase("children.x")
		<-release
		return nil
	}
	for i := range 2 {
		start := time.Now()
		err := b.Run("bomb", block)
		var ex *budget.Exceeded
		if !errors.As(err, &ex) || ex.Limit != "wall" || ex.Phase != "children.x" {
			t.Fatalf("run %d = %v, want a wall Exceeded while evaluating children.x", i, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("run %d returned after %s, budget 200ms of CPU, 2s wall", i, d)
		}
	}
	if n := budget.Abandoned("bomb"); n != 2 {
		t.Errorf("Abandoned = %d, want 2", n)
	}
	var busy *budget.Busy
	if err := b.Run("bomb", block); !errors.As(err, &busy) {
		t.Errorf("third run = %v, want Busy", err)
	}
	if err := b.Run("other", func(*budget.Tracker) error { return nil }); err != nil {
		t.Errorf("another key = %v, want it to run", err)
	}
	release <- struct{}{} // one abandoned evaluation ends
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	budget.WaitAbandoned(ctx, "bomb", 1)
	if err := b.Run("bomb", func(*budget.Tracker) error { return nil }); err != nil {
		t.Errorf("after one abandoned evaluation ended, Run = %v", err)
	}
}

// TestRunCPU: an evaluation that keeps the CPU busy is abandoned when it
// has used its CPU budget.
func TestRunCPU(t *testing.T) {
	b := budget.Budget{Time: 100 * time.Millisecond, Memory: -1}
	stop := make(chan struct{})
	defer close(stop)
	err := b.Run("spin", func(*budget.Tracker) error {
		for x := 0; ; x++ {
			if x%1024 == 0 {
				select {
				case <-stop:
					return nil
				default:
				}
			}
		}
	})
	var ex *budget.Exceeded
	if !errors.As(err, &ex) || (ex.Limit != "cpu" && ex.Limit != "wall") || ex.CPU < 50*time.Millisecond && ex.Limit == "cpu" {
		t.Fatalf("Run = %v, want a cpu Exceeded", err)
	}
}

// TestRunMemory: an evaluation that keeps allocating is abandoned when it
// has allocated its budget, long before its time runs out.
func TestRunMemory(t *testing.T) {
	b := budget.Budget{Time: time.Minute, Memory: 32 << 20}
	stop := make(chan struct{})
	defer close(stop)
	var keep [][]byte
	start := time.Now()
	err := b.Run("hog", func(*budget.Tracker) error {
		for {
			select {
			case <-stop:
				keep = nil
				return nil
			default:
				keep = append(keep, make([]byte, 1<<20))
				if len(keep) > 64 {
					keep = keep[:0]
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	})
	var ex *budget.Exceeded
	if !errors.As(err, &ex) || ex.Limit != "memory" || ex.Allocated < 32<<20 {
		t.Fatalf("Run = %v, want a memory Exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("abandoned after %s", d)
	}
}

// TestRunShares: evaluations that allocate a little each, side by side,
// stay within a budget that their sum exceeds.
func TestRunShares(t *testing.T) {
	// The watchdog shares what the process allocated among the evaluations
	// running at that tick, so all four start allocating together (an
	// evaluation running alone for a tick is charged the whole process), and
	// the budget is twice an evaluation's own allocation but half their sum.
	b := budget.Budget{Time: time.Minute, Memory: 32 << 20}
	errs := make(chan error, 4)
	var ready sync.WaitGroup
	ready.Add(4)
	for range 4 {
		go func() {
			errs <- b.Run("fair", func(*budget.Tracker) error {
				ready.Done()
				ready.Wait()
				var keep [][]byte
				for range 16 { // 16 MiB each, 64 MiB in all
					keep = append(keep, make([]byte, 1<<20))
					time.Sleep(2 * time.Millisecond)
				}
				_ = keep
				return nil
			})
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Run = %v, want each within its share", err)
		}
	}
}

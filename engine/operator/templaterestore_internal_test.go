package operator

import (
	"testing"
	"time"
)

// TestRestoreBudget: a Template is restored at most templateRestoreBurst
// times within templateRestoreWindow; the next restore waits until the
// oldest leaves the window.
func TestRestoreBudget(t *testing.T) {
	var b restoreBudget
	t0 := time.Unix(1000, 0)
	for i := range templateRestoreBurst {
		if wait := b.take(t0.Add(time.Duration(i) * time.Second)); wait != 0 {
			t.Fatalf("restore %d waits %v, want none", i+1, wait)
		}
	}
	now := t0.Add(10 * time.Second)
	if wait := b.take(now); wait != templateRestoreWindow-10*time.Second {
		t.Fatalf("restore past the burst waits %v, want %v", wait, templateRestoreWindow-10*time.Second)
	}
	if wait := b.take(t0.Add(templateRestoreWindow)); wait != 0 {
		t.Fatalf("restore once the first left the window waits %v, want none", wait)
	}
}

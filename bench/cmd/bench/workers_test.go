package main

import (
	"os/exec"
	"slices"
	"testing"
)

// TestChildrenFindsStartedProcesses: children (from the threads' children
// files) finds the processes this one started, as the scan of every
// process does, and none once they ended.
func TestChildrenFindsStartedProcesses(t *testing.T) {
	var cmds []*exec.Cmd
	for range 3 {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var want []int
	for _, c := range cmds {
		want = append(want, c.Process.Pid)
	}
	slices.Sort(want)
	got, scanned := children(), childrenByScan()
	slices.Sort(got)
	slices.Sort(scanned)
	for _, c := range cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if !slices.Equal(got, want) || !slices.Equal(scanned, want) {
		t.Errorf("children() = %v, childrenByScan() = %v, want %v", got, scanned, want)
	}
	if left := children(); len(left) != 0 {
		t.Errorf("children() after they ended = %v", left)
	}
}

package template

import (
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestSnapshotKeepsFirstRead: a file changed while a load reads it is
// served, and hashed into the revision, as first read: what CUE compiled is
// what the revision names.
func TestSnapshotKeepsFirstRead(t *testing.T) {
	root := testkit.Dir(t, map[string]string{"app/app.cue": "package app\nx: 1\n"})
	snap, err := openSnapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	first, err := snap.ReadFile("app/app.cue")
	if err != nil {
		t.Fatal(err)
	}
	rev := snap.revision([]string{"app"})
	testkit.Write(t, root, map[string]string{"app/app.cue": "package app\nx: 2\n"})
	again, err := snap.ReadFile("app/app.cue")
	if err != nil || string(again) != string(first) {
		t.Errorf("second read = %q (%v), want the first %q", again, err, first)
	}
	if got := snap.revision([]string{"app"}); got != rev {
		t.Errorf("revision changed from %s to %s after the file changed on disk", rev, got)
	}
	f, err := snap.Open("app/app.cue")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.Read(buf)
	if string(buf[:n]) != string(first) {
		t.Errorf("Open reads %q, want the first %q", buf[:n], first)
	}
}

package operator

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
)

// TestAddWatchesKeepsQueuedEvents edits a watched directory while nobody
// reads the watcher's events, as happens while a reload runs, then sets up
// the watches again as the next reload does: the edit's events still
// arrive, so the reload after it comes. (Removing a watch and adding it
// again dropped them: a removal under way during a reload left its kind
// served, and its CRs' finalizers on, until the next edit.)
func TestAddWatchesKeepsQueuedEvents(t *testing.T) {
	root := t.TempDir()
	kind := filepath.Join(root, "webapp")
	if err := os.Mkdir(kind, 0o755); err != nil {
		t.Fatal(err)
	}
	o, w := watchingOperator(t, root)
	for _, name := range []string{"a.cue", "b.cue", "c.cue"} {
		if err := os.WriteFile(filepath.Join(kind, name), []byte("package webapp\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o.add(w)
	last := filepath.Join(kind, "c.cue")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if ev.Name == last {
				return
			}
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("no event for %s after the watches were set up again", last)
		}
	}
}

// TestAddWatchesFollowsTheTree: a directory moved out of the templates
// stops being watched, one added is watched.
func TestAddWatchesFollowsTheTree(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o, w := watchingOperator(t, root)
	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(outside, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.add(w)
	got := w.WatchList()
	slices.Sort(got)
	want := []string{root, filepath.Join(root, "b"), filepath.Join(root, "c")}
	if !slices.Equal(got, want) {
		t.Errorf("watched %v, want %v", got, want)
	}
}

// watchingOperator is the templates watch of root with a watcher whose
// watches it has set up, closed when t ends.
func watchingOperator(t *testing.T, root string) (templatesWatch, *fsnotify.Watcher) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	o := templatesWatch{dir: root, log: logr.Discard()}
	o.add(w)
	return o, w
}

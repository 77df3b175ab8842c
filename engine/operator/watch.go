package operator

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/cueop/cueop/engine/template"
)

// debounce gathers the events of one edit (an editor's write and rename, a
// ConfigMap's symlink swap) into one reload.
const debounce = 200 * time.Millisecond

// templatesWatch follows the templates directory dir for edits.
type templatesWatch struct {
	dir string
	log logr.Logger
}

// run reloads the templates whenever a file below the directory
// changes, until ctx is done. A mounted ConfigMap swaps its `..data`
// symlink atomically: that is an event on the root, and every directory is
// watched anew after each reload.
func (t templatesWatch) run(ctx context.Context, w *fsnotify.Watcher, reload func(context.Context) error) error {
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events:
			if templateChange(ev) {
				timer = time.After(debounce)
			}
		case err := <-w.Errors:
			t.log.Error(err, "templates watch")
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				timer = time.After(debounce) // events were lost: load again
			}
		case <-timer:
			timer = nil
			t.add(w)
			if err := reload(ctx); err != nil {
				t.log.Error(err, "template reload")
			}
		}
	}
}

// add watches the templates root and every directory below it,
// following symlinks one level as a ConfigMap volume lays them out. A
// directory watched already keeps its watch: removing it and adding it
// again would drop the events queued for it meanwhile (fsnotify skips an
// event of a watch it no longer knows), such as those of a removal still
// under way while the last reload read the tree, and no reload would
// follow. Only the watches of directories no longer in the tree go.
func (t templatesWatch) add(w *fsnotify.Watcher) {
	want := map[string]bool{}
	root := t.dir
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() || (d.Type()&fs.ModeSymlink != 0 && isDir(p)) {
			want[p] = true
			if err := w.Add(p); err != nil {
				t.log.Error(err, "watch templates directory", "dir", p)
			}
		}
		return nil
	})
	for _, p := range w.WatchList() {
		if !want[p] {
			_ = w.Remove(p)
		}
	}
}

func isDir(p string) bool {
	fi, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	return fi != "" && dirExists(fi)
}

// templateChange tells the events that may change a template: not a chmod,
// and not an editor's swap or backup file (template.IsEditorFile), which
// the loader never reads.
func templateChange(ev fsnotify.Event) bool {
	return ev.Op != fsnotify.Chmod && !template.IsEditorFile(ev.Name)
}

package operator

import (
	"testing"

	"github.com/fsnotify/fsnotify"
)

// TestTemplateChangeIgnoresEditorFiles: an editor's swap, backup and lock
// files are no template change, so writing them reloads nothing.
func TestTemplateChangeIgnoresEditorFiles(t *testing.T) {
	for name, want := range map[string]bool{
		"/t/app/app.cue":        true,
		"/t/app/conf.yaml":      true,
		"/t/app/.app.cue.swp":   false,
		"/t/app/.app.cue.swx":   false,
		"/t/app/app.cue~":       false,
		"/t/app/.#app.cue":      false,
		"/t/app/#app.cue#":      false,
		"/t/cue.mod/module.cue": true,
	} {
		if got := templateChange(fsnotify.Event{Name: name, Op: fsnotify.Write}); got != want {
			t.Errorf("templateChange(write %s) = %v, want %v", name, got, want)
		}
	}
	if templateChange(fsnotify.Event{Name: "/t/app/app.cue", Op: fsnotify.Chmod}) {
		t.Error("a chmod counts as a template change")
	}
}

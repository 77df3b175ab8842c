package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cueop/cueop/internal/testkit"
)

// TestCommandsRefuseSpecialAndLargeFiles: render and vet refuse a FIFO
// named extra.cue at once, naming it (they would block on it forever), and
// a file over --template-max-file-size, which loads once the flag is
// raised.
func TestCommandsRefuseSpecialAndLargeFiles(t *testing.T) {
	templates, testdata := writeHostile(t, map[string]string{
		"templates/app/app.cue":  hostileKind(`_data: _ @embed(file="conf.txt", type=text)`),
		"templates/app/conf.txt": strings.Repeat("x", 2000),
	})
	cr := filepath.Join(filepath.Dir(templates), "cr.yaml")
	fifo := filepath.Join(templates, "app", "extra.cue")
	must(t, syscall.Mkfifo(fifo, 0o644))
	start := time.Now()
	for _, args := range [][]string{{"render", "-f", cr}, {"vet", "--testdata", testdata}} {
		_, err := runIn(templates, args...)
		if want := fifo + ": a named pipe (FIFO), not a regular file: refused"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args[0], err, want)
		}
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("render and vet took %s", d)
	}
	must(t, os.Remove(fifo))

	conf := filepath.Join(templates, "app", "conf.txt")
	for _, args := range [][]string{{"render", "-f", cr}, {"vet", "--testdata", testdata}} {
		_, err := runIn(templates, append([]string{"--template-max-file-size", "1Ki"}, args...)...)
		if want := conf + ": it holds 2000 bytes, more than the 1024"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s --template-max-file-size 1Ki: %v, want %q", args[0], err, want)
		}
		if _, err := runIn(templates, append([]string{"--template-max-file-size", "2Ki"}, args...)...); err != nil {
			t.Errorf("%s --template-max-file-size 2Ki: %v", args[0], err)
		}
	}
	_, err := runIn(templates, "--template-max-total-size", "1Ki", "render", "-f", cr)
	if want := "its files hold "; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--template-max-total-size") {
		t.Errorf("render --template-max-total-size 1Ki: %v, want %q", err, want)
	}
}

var must = testkit.Must

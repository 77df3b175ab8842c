package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
)

// TestSpecMessages: a required field the CR leaves out says so by its CR
// field path (not CUE's `incomplete value =~"..."`), and an unknown spec
// field names the template position of #Spec, as every spec error does.
func TestSpecMessages(t *testing.T) {
	k := loadBlog(t)
	for name, c := range map[string]struct {
		spec map[string]any
		want string
	}{
		"required": {map[string]any{"settings": map[string]any{}},
			"required field missing: spec.settings.name (template templates/blog/blog.cue:"},
		"required struct": {map[string]any{},
			"required field missing: spec.settings.name (template templates/blog/blog.cue:"},
		"unknown": {map[string]any{"settings": map[string]any{"name": "s"}, "replica": int64(2)},
			"spec.replica: field not allowed (template templates/blog/blog.cue:"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render.Render(k, blog(c.spec), nil, render.Options{})
			msg := ""
			if err != nil {
				msg = err.Error()
				if i := strings.Index(msg, "testdata/authors/"); i >= 0 {
					msg = strings.ReplaceAll(msg, msg[strings.LastIndex(msg[:i], " ")+1:i+len("testdata/authors/")], "")
				}
			}
			if !strings.HasPrefix(msg, c.want) {
				t.Errorf("error:\n%s\nwant it to start with\n%s", msg, c.want)
			}
			if strings.Contains(msg, "incomplete value") {
				t.Errorf("error %q still speaks of an incomplete value", msg)
			}
		})
	}
}

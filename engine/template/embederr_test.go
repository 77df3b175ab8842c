package template_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
)

// TestEmbedErrorsGiveTheReason: a failed @embed says why, with the
// attribute's position, not "@embed" alone.
func TestEmbedErrorsGiveTheReason(t *testing.T) {
	for name, tc := range map[string]struct {
		embed string
		files map[string]string
		want  []string
	}{
		"missing file": {`_data: _ @embed(file="missing.txt", type=text)`, nil,
			[]string{"app/app.cue:7:10: @embed: ", "missing.txt", "no such file"}},
		"parent directory": {`_data: _ @embed(file="../x.txt", type=text)`, nil,
			[]string{"app/app.cue:7:10: @embed: ", "cannot refer to parent directory"}},
		"bad yaml": {`_y: _ @embed(file="conf.yaml")` + "\n" + `_data: _y.a`, map[string]string{"app/conf.yaml": "a: [\n"},
			[]string{"app/app.cue:7:7: @embed: ", "conf.yaml", "did not find expected node content"}},
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"app/app.cue": embedKind + tc.embed + "\n"}
			for f, data := range tc.files {
				files[f] = data
			}
			_, err := template.Load(writeTemplates(t, files))
			if err == nil {
				t.Fatal("loaded, want an @embed error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

package template_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
)

// TestLoadChecksPolicies checks the policies contract at load: what is
// wrong before any CR is filled in is refused with its position; what
// depends on the CR is left to render.
func TestLoadChecksPolicies(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"not a struct":  {`policies: ["cm"]`, "policies must be a struct of policies keyed by child id"},
		"bad prune":     {`policies: cm: prune: "sometimes"`, `policies.cm.prune: `},
		"bad onDelete":  {`policies: cm: onDelete: "keep"`, `policies.cm.onDelete: `},
		"not a bool":    {`policies: cm: recreate: "yes"`, `policies.cm.recreate: `},
		"bad adopt":     {`policies: cm: adopt: true`, `policies.cm.adopt: `},
		"unknown field": {`policies: cm: recreat: true`, `policies.cm.recreat: field not allowed`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": okKind + tc.src + "\n"}))
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tc.want) || !position.MatchString(err.Error()) {
				t.Errorf("error %q lacks %q or app.cue:line:column", err, tc.want)
			}
		})
	}
	for name, src := range map[string]string{
		"none":                "",
		"literal":             `policies: cm: {recreate: true, cascade: "background", prune: "never", onDelete: "retain", adopt: "uncontrolled"}`,
		"depends on the spec": `policies: cm: prune: [if parent.spec.replicas > 1 {"never"}, "always"][0]`,
		"comprehension":       `policies: {for id, _ in children {(id): onDelete: "retain"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": okKind + src + "\n"})); err != nil {
				t.Fatal(err)
			}
		})
	}
}

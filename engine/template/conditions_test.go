package template_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
)

// TestLoadChecksConditions checks the conditions contract at load: an
// engine condition type, a status or reason that can never fit, an unknown
// field are refused at their position; what depends on the CR is left to
// render.
func TestLoadChecksConditions(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"not a struct": {`conditions: ["Migrated"]`, "conditions must be a struct of conditions keyed by type"},
		"engine type":  {`conditions: Ready: {status: true, reason: "Up"}`, "conditions.Ready: Ready is written by cueop"},
		"stalled":      {`conditions: Stalled: {status: false, reason: "No"}`, "conditions.Stalled: Stalled is written by cueop"},
		"bad status":   {`conditions: Migrated: {status: "yes", reason: "Done"}`, "conditions.Migrated.status: "},
		"bad reason":   {`conditions: Migrated: {status: true, reason: "job done"}`, "conditions.Migrated.reason: "},
		"unknown":      {`conditions: Migrated: {status: true, reason: "Done", lastTransitionTime: "now"}`, "conditions.Migrated.lastTransitionTime: field not allowed"},
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
		"literal":             `conditions: Migrated: {status: "Unknown", reason: "NotYet", message: "waiting"}`,
		"depends on the spec": `conditions: Big: {status: parent.spec.replicas > 3, reason: "Replicas"}`,
		"under an if":         `conditions: {if parent.spec.replicas > 3 {Big: {status: true, reason: "Replicas"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			k, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": okKind + src + "\n"}))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := k.Kinds[0].Conditions, src != ""; got != want {
				t.Errorf("Kind.Conditions = %v, want %v", got, want)
			}
		})
	}
}

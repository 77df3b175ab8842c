package template_test

import (
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
			loadRefused(t, okKind+tc.src+"\n", tc.want)
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
			loadRefused(t, okKind+tc.src+"\n", tc.want)
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

package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestSpecErrorLeavesDefaultsOut: a spec value that matches no branch of a
// disjunction lists the alternatives, never a default that another branch
// covers (the 2 of `*2 | int`); a default that is an alternative of its
// own ("gold") is listed.
func TestSpecErrorLeavesDefaultsOut(t *testing.T) {
	k := compileKind(t, "app/app.cue", `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {
	n:    *2 | int & >=1
	tier: *"gold" | "silver" | "bronze"
}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: {}
`)
	for field, tc := range map[string]struct {
		value     any
		want, not []string
	}{
		"n":    {2.5, []string{"spec.n: conflicting values 2.5 and int (mismatched types float and int)", "app.cue:4:"}, []string{"2 and", "not one of"}},
		"tier": {"iron", []string{`spec.tier: "iron" is not one of "bronze", "gold", "silver"`, "app.cue:5:"}, nil},
	} {
		t.Run(field, func(t *testing.T) {
			p := app(1)
			p.Object["spec"] = map[string]any{field: tc.value}
			_, err := render.Render(k, p, nil, render.Options{})
			rerr := renderError(t, err, wellknown.ReasonInvalidSpec)
			if len(rerr.Messages) != 1 {
				t.Errorf("got %d messages, want one: %q", len(rerr.Messages), rerr.Messages)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(err.Error(), not) {
					t.Errorf("error %q has %q", err, not)
				}
			}
		})
	}
}

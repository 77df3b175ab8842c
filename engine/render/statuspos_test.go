package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestStatusErrorsArePositioned: #Status fields the template leaves
// missing or not concrete are named with a template position, whether
// their declaration is a bound, a disjunction or a plain type, and whether
// status is written as #Status & {...} or not.
func TestStatusErrorsArePositioned(t *testing.T) {
	for name, status := range map[string]string{
		"plain":   `status: {count: parent.spec.n}`,
		"checked": `status: #Status & {count: parent.spec.n}`,
	} {
		t.Run(name, func(t *testing.T) {
			k := compileKind(t, "app/app.cue", `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int}
#Status: {
	ready: int & >=0
	phase: "Running" | "Pending"
	url:   string
	count: int
}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: {}
`+status+"\n")
			_, err := render.Render(k, app(1), nil, render.Options{})
			rerr := renderError(t, err, wellknown.ReasonTemplateError)
			want := map[string]string{"status.ready": "app.cue:5:", "status.phase": "app.cue:6:", "status.url": "app.cue:7:"}
			for _, msg := range rerr.Messages {
				for field, pos := range want {
					if strings.Contains(msg, field+":") {
						if !strings.Contains(msg, pos) {
							t.Errorf("message on %s has no position %s: %q", field, pos, msg)
						}
						delete(want, field)
					}
				}
			}
			if len(want) > 0 {
				t.Errorf("no message on %v: %q", want, rerr.Messages)
			}
		})
	}
}

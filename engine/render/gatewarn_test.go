package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
)

// TestGateWarnings: readiness expressions whose gate can never open are
// named with their CUE position; sound ones give no warning.
func TestGateWarnings(t *testing.T) {
	const head = "package app\nresource: {group: \"apps.test.example\", version: \"v1\", kind: \"App\"}\n#Spec: {n?: int}\n" +
		"observed: [string]: {...}\n" +
		"children: migrate: {apiVersion: \"batch/v1\", kind: \"Job\", metadata: name: \"m\", spec: template: spec: {restartPolicy: \"Never\", containers: [{name: \"m\", image: \"x\"}]}}\n" +
		"children: app: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: name: \"a\"}\n" +
		"waves: {migrate: 0, app: 1}\n"
	for name, tc := range map[string]struct{ src, want string }{
		"sound": {`_c: *observed.migrate.status.conditions | []
readyWhen: migrate: len([for c in _c if c.type == "Complete" {c}]) > 0`, ""},
		"misspelt field": {`readyWhen: migrate: *(observed.migrate.status.succeded >= 1) | false`,
			"app.cue:8:23: readyWhen.migrate: reads observed.migrate.status.succeded: no Job has that field, so migrate is never ready: the gate never opens"},
		"later wave through a field": {`_appReady: *(observed.app.data.ok == "yes") | false
readyWhen: migrate: _appReady`,
			"app.cue:8:14: readyWhen.migrate: reads observed.app.data.ok (through _appReady), a child of wave 1, which is applied only once migrate (wave 0) is ready: the gate never opens"},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := tryCompile(t, head+tc.src+"\n")
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(render.GateWarnings(render.Inputs{Kind: k, Parent: app(1)}, render.Options{}), "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("warnings:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

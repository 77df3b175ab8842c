// Package workertest holds what tests of the render workers share: a kind
// whose render a tenant can make crash or hang within its schema's
// bounds, and templates directories to load it from.
package workertest

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// HostileKind is a kind whose render a tenant controls: the bounds of
// #Spec let one CR ask for a terabyte at once (line times count: BombSpec)
// or three nested loops over 2000 items (SlowSpec). The default spec
// renders one ConfigMap at once, Ready as soon as it exists.
const HostileKind = `package hostile

import (
	"list"
	"strings"
)

resource: {group: "hostile.test.example", version: "v1", kind: "Hostile"}
#Spec: {
	line:  *"x" | string & strings.MaxRunes(1000000)
	count: *1 | int & >=0 & <=1000000
	items: *[] | [...int] & list.MaxItems(2000)
}
#Status: {lines?: int, fixed?: bool}
parent: spec: #Spec
children: cm: {
	apiVersion: "v1", kind: "ConfigMap"
	metadata: name: parent.metadata.name
	data: {
		repeated: strings.Repeat(parent.spec.line, parent.spec.count)
		loops: "\(len([for a in parent.spec.items for b in parent.spec.items for c in parent.spec.items if a+b+c < 0 {a}]))"
	}
}
status: lines: parent.spec.count
`

// TemplateBomb is a package that allocates a terabyte at once when it is
// compiled.
const TemplateBomb = `package templatebomb

import "strings"

resource: {group: "templatebomb.test.example", version: "v1", kind: "TemplateBomb"}
#Spec: {}
parent: spec: #Spec
_x: strings.Repeat(strings.Repeat("x", 1000000), 1000000)
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: x: _x}
`

// BombSpec is a spec of HostileKind at its bounds: a line of a million
// runes repeated a million times.
func BombSpec() map[string]any {
	return map[string]any{"line": strings.Repeat("x", 1000000), "count": int64(1000000)}
}

// SlowSpec is a spec of HostileKind whose render takes hours: 2000 items
// three for clauses deep.
func SlowSpec() map[string]any {
	items := make([]any, 2000)
	for i := range items {
		items[i] = int64(i)
	}
	return map[string]any{"items": items}
}

// Templates is a new templates directory of the test module holding files
// (slash path: content); files gets the module's cue.mod/module.cue.
func Templates(t testing.TB, files map[string]string) string {
	t.Helper()
	files["cue.mod/module.cue"] = testkit.Module
	return testkit.Dir(t, files)
}

// WriteFile writes data to dir/name (slash path), making its directory.
func WriteFile(t testing.TB, dir, name, data string) {
	t.Helper()
	testkit.Write(t, dir, map[string]string{name: data})
}

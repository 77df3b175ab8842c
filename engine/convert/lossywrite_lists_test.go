package convert_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// scheduled is a kind whose hub v2 holds backups with a retention each,
// and whose spoke v1 shows only their schedules, as a list of strings.
const scheduled = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Backup: {schedule: string, retention: *7 | int & >=1}
#Spec: backups: *[] | [...#Backup]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: schedules: *[] | [...string]
	toHub: {in: spec: _, out: spec: backups: [for s in in.spec.schedules {schedule: s}]}
	fromHub: {in: spec: _, out: spec: schedules: [for b in in.spec.backups {b.schedule}]}
}
`

// filtered is a kind whose spoke v1 shows only the enabled backups.
const filtered = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Backup: {schedule: string, enabled: *true | bool}
#Spec: backups: *[] | [...#Backup]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: schedules: *[] | [...string]
	toHub: {in: spec: _, out: spec: backups: [for s in in.spec.schedules {schedule: s}]}
	fromHub: {in: spec: _, out: spec: schedules: [for b in in.spec.backups if b.enabled {b.schedule}]}
}
`

// envMap is a kind whose hub v2 holds a list of variables, each maybe
// secret, and whose spoke v1 shows them as a map of name to value.
const envMap = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Env: {name: string, value: string, secret: *false | bool}
#Spec: env: *[] | [...#Env]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: env: *{} | {[string]: string}
	toHub: {in: spec: _, out: spec: env: [for k, v in in.spec.env {name: k, value: v}]}
	fromHub: {in: spec: _, out: spec: env: {for e in in.spec.env {(e.name): e.value}}}
}
`

// nodeTags is a kind whose hub v2 holds a value beside each tag of each
// node, which v1 does not show.
const nodeTags = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Spec: nodes: *[] | [...{name: string, tags: *[] | [...{k: string, v: *"" | string}]}]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: nodes: *[] | [...{name: string, tags: *[] | [...string]}]
	toHub: {in: spec: _, out: spec: nodes: [for n in in.spec.nodes {name: n.name, tags: [for t in n.tags {k: t}]}]}
	fromHub: {in: spec: _, out: spec: nodes: [for n in in.spec.nodes {name: n.name, tags: [for t in n.tags {t.k}]}]}
}
`

// firstShown is a kind whose spoke v1 shows the first of the hub's
// backups, without its storage class.
const firstShown = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Backup: {schedule: string, retention: *7 | int & >=1, class: *"standard" | string}
#Spec: backups: *[] | [...#Backup]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: backup?: {schedule: string, retention: *7 | int & >=1}
	toHub: {in: spec: _, out: spec: {if in.spec.backup != _|_ {backups: [in.spec.backup]}}}
	fromHub: {in: spec: _, out: spec: {if len(in.spec.backups) > 0 {backup: {schedule: in.spec.backups[0].schedule, retention: in.spec.backups[0].retention}}}}
}
`

// writeAtV1 reads a PostgresCluster whose v2 spec is hub at v1, edits the
// spec read, and converts it back to v2, as the API server does for a
// write at v1.
func writeAtV1(t *testing.T, src, hub string, edit func(spec map[string]any)) (map[string]any, error) {
	t.Helper()
	c, err := load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	read := mustConvert(t, c, object(t, `{"apiVersion": "db.test.example/v2", "kind": "PostgresCluster", "metadata": {"name": "two", "namespace": "t"}, "spec": `+hub+`}`), "v1")
	edit(read.Object["spec"].(map[string]any))
	out, err := c.Convert(read, "v2")
	if err != nil {
		return nil, err
	}
	again := mustConvert(t, c, out, "v1")
	if !reflect.DeepEqual(again.Object["spec"], read.Object["spec"]) {
		t.Errorf("read at v1 after the write: %v, want what was written, %v", again.Object["spec"], read.Object["spec"])
	}
	return out.Object["spec"].(map[string]any), nil
}

func spec(t *testing.T, s string) map[string]any {
	t.Helper()
	return object(t, `{"apiVersion": "db.test.example/v2", "kind": "PostgresCluster", "spec": `+s+`}`).Object["spec"].(map[string]any)
}

// TestWriteAtSpokeKeepsWhatOnlyTheHubHoldsOfAList: elements appended at
// v1 (to a list of two, to one of a hundred, to a list in a list's
// element) keep the values of the elements v2 held that v1 does not
// show, each where it was.
func TestWriteAtSpokeKeepsWhatOnlyTheHubHoldsOfAList(t *testing.T) {
	var hundred, hundredAndOne []string
	for i := range 100 {
		hundred = append(hundred, fmt.Sprintf(`{"schedule": "s%d", "retention": %d}`, i, i%5+1))
	}
	hundredAndOne = append(append(hundredAndOne, hundred...), `{"schedule": "new", "retention": 7}`)
	for _, tc := range []struct {
		name, src, hub string
		edit           func(spec map[string]any)
		want           string
	}{{
		name: "a schedule appended",
		src:  scheduled,
		hub:  `{"backups": [{"schedule": "a", "retention": 1}, {"schedule": "b", "retention": 2}]}`,
		edit: func(s map[string]any) { s["schedules"] = append(s["schedules"].([]any), "c") },
		want: `{"backups": [{"schedule": "a", "retention": 1}, {"schedule": "b", "retention": 2}, {"schedule": "c", "retention": 7}]}`,
	}, {
		name: "a schedule appended to a hundred",
		src:  scheduled,
		hub:  `{"backups": [` + strings.Join(hundred, ", ") + `]}`,
		edit: func(s map[string]any) { s["schedules"] = append(s["schedules"].([]any), "new") },
		want: `{"backups": [` + strings.Join(hundredAndOne, ", ") + `]}`,
	}, {
		name: "a variable added",
		src:  envMap,
		hub:  `{"env": [{"name": "b", "value": "1", "secret": true}, {"name": "a", "value": "2"}]}`,
		edit: func(s map[string]any) { s["env"].(map[string]any)["c"] = "3" },
		want: `{"env": [{"name": "b", "value": "1", "secret": true}, {"name": "a", "value": "2", "secret": false}, {"name": "c", "value": "3", "secret": false}]}`,
	}, {
		name: "the retention of the one backup v1 shows, beside its class v1 does not show",
		src:  firstShown,
		hub:  `{"backups": [{"schedule": "a", "retention": 1, "class": "cold"}, {"schedule": "b", "retention": 2, "class": "fast"}]}`,
		edit: func(s map[string]any) { s["backup"].(map[string]any)["retention"] = int64(5) },
		want: `{"backups": [{"schedule": "a", "retention": 5, "class": "cold"}, {"schedule": "b", "retention": 2, "class": "fast"}]}`,
	}, {
		name: "a variable changed",
		src:  envMap,
		hub:  `{"env": [{"name": "a", "value": "1", "secret": true}, {"name": "b", "value": "2"}]}`,
		edit: func(s map[string]any) { s["env"].(map[string]any)["a"] = "3" },
		want: `{"env": [{"name": "a", "value": "3", "secret": true}, {"name": "b", "value": "2", "secret": false}]}`,
	}, {
		name: "a tag of a node appended",
		src:  nodeTags,
		hub:  `{"nodes": [{"name": "n", "tags": [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}]}]}`,
		edit: func(s map[string]any) {
			n := s["nodes"].([]any)[0].(map[string]any)
			n["tags"] = append(n["tags"].([]any), "c")
		},
		want: `{"nodes": [{"name": "n", "tags": [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}, {"k": "c", "v": ""}]}]}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := writeAtV1(t, tc.src, tc.hub, tc.edit)
			if err != nil {
				t.Fatalf("write at v1: %v", err)
			}
			if want := spec(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("stored at v2: %v\nwant %v", got, want)
			}
		})
	}
}

// TestWriteAtSpokeMovingElementsRefused: a list is put together by index,
// so a write at v1 that inserts, moves or renames an element whose values
// v1 does not show, or appends to a list v1 shows filtered, cannot keep
// those values with their element (a retention would go to another
// backup, a secret to another variable, a disabled backup would be
// dropped): it is refused, naming the element and the version to write
// at, and not stored.
func TestWriteAtSpokeMovingElementsRefused(t *testing.T) {
	two := `{"backups": [{"schedule": "a", "retention": 1}, {"schedule": "b", "retention": 2}]}`
	for _, tc := range []struct {
		name, src, hub string
		edit           func(spec map[string]any)
		field          string
	}{{
		name:  "a schedule inserted in front",
		src:   scheduled,
		hub:   two,
		edit:  func(s map[string]any) { s["schedules"] = []any{"z", "a", "b"} },
		field: "spec.backups[0]",
	}, {
		name:  "a schedule inserted in front of the one there was",
		src:   scheduled,
		hub:   `{"backups": [{"schedule": "a", "retention": 1}]}`,
		edit:  func(s map[string]any) { s["schedules"] = []any{"z", "a"} },
		field: "spec.backups[0]",
	}, {
		name:  "schedules swapped",
		src:   scheduled,
		hub:   two,
		edit:  func(s map[string]any) { s["schedules"] = []any{"b", "a"} },
		field: "spec.backups[0]",
	}, {
		name:  "a variable changed, the list and the map in different orders",
		src:   envMap,
		hub:   `{"env": [{"name": "b", "value": "1", "secret": true}, {"name": "a", "value": "2"}]}`,
		edit:  func(s map[string]any) { s["env"].(map[string]any)["a"] = "3" },
		field: "spec.env[0]",
	}, {
		name:  "a schedule appended to a filtered list",
		src:   filtered,
		hub:   `{"backups": [{"schedule": "a"}, {"schedule": "b", "enabled": false}]}`,
		edit:  func(s map[string]any) { s["schedules"] = append(s["schedules"].([]any), "e") },
		field: "spec.backups[1]",
	}, {
		name:  "a schedule appended to a filtered list, the hidden one in the middle",
		src:   filtered,
		hub:   `{"backups": [{"schedule": "a"}, {"schedule": "b", "enabled": false}, {"schedule": "c"}]}`,
		edit:  func(s map[string]any) { s["schedules"] = append(s["schedules"].([]any), "e") },
		field: "spec.backups[1]",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := writeAtV1(t, tc.src, tc.hub, tc.edit)
			wantLossy(t, "write at v1", got, err, tc.field)
		})
	}
}

package convert_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/wellknown"
)

// restructured is a kind whose hub v2 holds what its spoke v1 holds in
// other shapes: a list where v1 has one element (backups, backup), a
// struct split in two (resources.requests and .limits, v1's resources)
// and a field renamed (instances, v1's replicas).
const restructured = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Backup: {schedule: string, retention: *7 | int & >=1}
#Res: {cpu: string, memory: string}
#Spec: {
	instances: *1 | int & >=1
	backups?: [...#Backup]
	resources?: {requests: #Res, limits: #Res}
}
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: {
		replicas: *1 | int & >=1
		backup?: #Backup
		resources?: #Res
	}
	toHub: {in: spec: _, out: spec: {
		instances: in.spec.replicas
		if in.spec.backup != _|_ {backups: [in.spec.backup]}
		if in.spec.resources != _|_ {resources: {requests: in.spec.resources, limits: in.spec.resources}}
	}}
	fromHub: {in: spec: _, out: spec: {
		replicas: in.spec.instances
		if in.spec.backups != _|_ {
			if len(in.spec.backups) > 0 {backup: in.spec.backups[0]}
		}
		if in.spec.resources != _|_ {resources: in.spec.resources.requests}
	}}
}
`

const restructuredHub = `{"apiVersion": "db.test.example/v2", "kind": "PostgresCluster", "metadata": {"name": "two", "namespace": "t"},
	"spec": {"instances": 1,
		"backups": [{"schedule": "0 1 * * *", "retention": 7}, {"schedule": "0 13 * * *", "retention": 3}],
		"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}}`

// TestWriteAtSpokeKeepsWhatOnlyTheHubHolds: a CR stored at the hub with
// two backups and limits apart from its requests, read at v1 and written
// there (each shape edited in turn, as kubectl patch does on what it
// read), stores at the hub what v1 said and keeps the second backup and
// the limits; read at v1 again it is what was written.
func TestWriteAtSpokeKeepsWhatOnlyTheHubHolds(t *testing.T) {
	c := mustLoad(t, restructured)
	for _, tc := range []struct {
		name string
		edit func(spec map[string]any)
		want string // the hub's spec after the write
	}{{
		name: "list restructure: the one backup v1 holds",
		edit: func(spec map[string]any) { spec["backup"].(map[string]any)["retention"] = int64(2) },
		want: `{"instances": 1,
			"backups": [{"schedule": "0 1 * * *", "retention": 2}, {"schedule": "0 13 * * *", "retention": 3}],
			"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}`,
	}, {
		name: "struct split: the requests v1 holds",
		edit: func(spec map[string]any) { spec["resources"].(map[string]any)["cpu"] = "500m" },
		want: `{"instances": 1,
			"backups": [{"schedule": "0 1 * * *", "retention": 7}, {"schedule": "0 13 * * *", "retention": 3}],
			"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}`,
	}, {
		name: "field rename: replicas",
		edit: func(spec map[string]any) { spec["replicas"] = int64(3) },
		want: `{"instances": 3,
			"backups": [{"schedule": "0 1 * * *", "retention": 7}, {"schedule": "0 13 * * *", "retention": 3}],
			"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			read := mustConvert(t, c, object(t, restructuredHub), "v1")
			if read.GetAnnotations()[wellknown.AnnotationConversionPrefix+"v2"] == "" {
				t.Fatalf("read at v1: %v, want the annotation carrying what v1 cannot hold", read.Object)
			}
			tc.edit(read.Object["spec"].(map[string]any))
			written := read.DeepCopy()
			stored := mustConvert(t, c, written, "v2")
			if want := object(t, `{"apiVersion": "db.test.example/v2", "kind": "PostgresCluster", "spec": `+tc.want+`}`).Object["spec"]; !reflect.DeepEqual(stored.Object["spec"], want) {
				t.Errorf("stored at v2: %v\nwant %v", stored.Object["spec"], want)
			}
			again := mustConvert(t, c, stored, "v1")
			if !reflect.DeepEqual(again.Object["spec"], written.Object["spec"]) {
				t.Errorf("read at v1 after the write: %v, want what was written, %v", again.Object["spec"], written.Object["spec"])
			}
		})
	}
}

// TestLossyWriteAtSpokeRefused: a write at v1 that removes the one backup
// v1 shows cannot be stored without either dropping the second backup
// only v2 holds or storing a backup v1 said to remove: it is refused,
// naming the object, the field and the version to write at.
func TestLossyWriteAtSpokeRefused(t *testing.T) {
	c := mustLoad(t, restructured)
	read := mustConvert(t, c, object(t, restructuredHub), "v1")
	delete(read.Object["spec"].(map[string]any), "backup")
	out, err := c.Convert(read, "v2")
	wantLossy(t, "write at v1 without its backup", out, err, "spec.backups")

	// The same edit of an object that holds one backup (nothing only the
	// hub holds) is taken.
	one := object(t, `{"apiVersion": "db.test.example/v2", "kind": "PostgresCluster", "metadata": {"name": "one", "namespace": "t"}, "spec": {"instances": 1, "backups": [{"schedule": "x", "retention": 7}]}}`)
	read = mustConvert(t, c, one, "v1")
	delete(read.Object["spec"].(map[string]any), "backup")
	stored := mustConvert(t, c, read, "v2")
	if want := map[string]any{"instances": int64(1)}; !reflect.DeepEqual(stored.Object["spec"], want) {
		t.Errorf("one backup removed at v1: stored %v, want %v", stored.Object["spec"], want)
	}
}

// TestWriteAtSpokeDroppingAHalfRefused: a write at v1 removing its
// resources, while v2 holds limits apart from the requests v1 shows, is
// refused as a lossy write naming the resources, not the second backup
// the write keeps (nor as an annotation that is no spec: the limits
// alone); an annotation holding a field the hub's
// #Spec does not declare is refused naming the annotation.
func TestWriteAtSpokeDroppingAHalfRefused(t *testing.T) {
	c := mustLoad(t, restructured)
	read := mustConvert(t, c, object(t, restructuredHub), "v1")
	delete(read.Object["spec"].(map[string]any), "resources")
	out, err := c.Convert(read, "v2")
	wantLossy(t, "write at v1 without its resources", out, err, "spec.resources,")
	if strings.Contains(err.Error(), "spec.backups") {
		t.Errorf("error %q names the backups, which the write keeps", err)
	}

	read = mustConvert(t, c, object(t, restructuredHub), "v1")
	delete(read.Object["spec"].(map[string]any), "resources")
	a := read.GetAnnotations()
	a[wellknown.AnnotationConversionPrefix+"v2"] = `{"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}, "evil": 1}`
	read.SetAnnotations(a)
	out, err = c.Convert(read, "v2")
	var lossy *convert.LossyWriteError
	if err == nil || errors.As(err, &lossy) || !strings.Contains(err.Error(), wellknown.AnnotationConversionPrefix+"v2") || !strings.Contains(err.Error(), "evil") {
		t.Errorf("write at v1 with a forged annotation: %v, %v; want refused naming the annotation and its field", out, err)
	}
}

// wantLossy fails the test unless err, of the write at v1 (what: what the
// write was) of PostgresCluster t/two that stored got, is a
// LossyWriteError naming the conversion, field and the version to write
// at instead.
func wantLossy(t *testing.T, what string, got any, err error, field string) {
	t.Helper()
	var lw *convert.LossyWriteError
	if !errors.As(err, &lw) {
		t.Fatalf("%s: %v, %v; want a LossyWriteError", what, got, err)
	}
	for _, want := range []string{"PostgresCluster t/two: conversion v1 to v2", field, "write it at v2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

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
	c := mustLoad(t, src)
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

package convert_test

import (
	"errors"
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
	c, err := load(t, restructured)
	if err != nil {
		t.Fatal(err)
	}
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
	c, err := load(t, restructured)
	if err != nil {
		t.Fatal(err)
	}
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
	c, err := load(t, restructured)
	if err != nil {
		t.Fatal(err)
	}
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

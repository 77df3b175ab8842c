package source

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

var (
	pinDigest = "sha256:" + strings.Repeat("a", 64)
	pinRef    = "oci://r.example/example.com/app@v1.0.0@" + pinDigest
)

func resolved(ref, digest, dep string) Resolved {
	r := Resolved{Ref: ref, Module: "example.com/app@v1", Version: "v1.0.0", Digest: digest}
	if dep != "" {
		r.Deps = []Dep{{Module: "example.com/lib@v0", Version: "v0.1.0", Digest: dep, Files: true}}
	}
	return r
}

// TestRecordEncoding: the cluster's record is pinned.json's encoding, read
// back whole; an empty one is no record, and a garbled one is an error
// naming where it was read.
func TestRecordEncoding(t *testing.T) {
	p := pinned{
		Refs:     map[string]Resolved{pinRef: resolved(pinRef, pinDigest, "sha256:1111")},
		Accepted: map[string]Resolved{"oci://r.example/example.com/app@v1": resolved("oci://r.example/example.com/app@v1", "sha256:bbbb", "")},
	}
	data, err := p.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(data, "ConfigMap ns/cueop-pins")
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("decode(encode(p)) = %+v, %v\nwant %+v", got, err, p)
	}
	if got.pin(mustRef(t, pinRef)) == nil {
		t.Errorf("the decoded record has no pin for %s", pinRef)
	}
	empty, err := decodeRecord(nil, "ConfigMap ns/cueop-pins")
	if err != nil || len(empty.Refs) != 0 || empty.Refs == nil || empty.Accepted == nil {
		t.Errorf("decode(nil) = %+v, %v; want an empty record", empty, err)
	}
	if _, err := decodeRecord([]byte("{garbled"), "pin record ConfigMap ns/cueop-pins"); err == nil || !strings.Contains(err.Error(), "ConfigMap ns/cueop-pins") {
		t.Errorf("decode of a garbled record = %v, want an error naming the ConfigMap", err)
	}
}

func mustRef(t *testing.T, s string) Ref {
	t.Helper()
	r, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRecordMerge: at a start the cluster's record wins over pinned.json
// reference by reference, and what only one of them records is kept; a
// write keeps the references of others and a pin's first record, and
// takes ours for the rest.
func TestRecordMerge(t *testing.T) {
	moving := "oci://r.example/example.com/app@v1"
	other := "oci://r.example/example.com/other@v2"
	file := pinned{
		Refs:     map[string]Resolved{pinRef: resolved(pinRef, pinDigest, "sha256:moved"), moving: resolved(moving, "sha256:new", "")},
		Accepted: map[string]Resolved{moving: resolved(moving, "sha256:new", "")},
	}
	cluster := pinned{
		Refs:     map[string]Resolved{pinRef: resolved(pinRef, pinDigest, "sha256:first"), other: resolved(other, "sha256:o", "")},
		Accepted: map[string]Resolved{},
	}
	start := overlay(file, cluster)
	if got := start.pin(mustRef(t, pinRef)); got == nil || got.Deps[0].Digest != "sha256:first" {
		t.Errorf("start: pin %+v, want the cluster's record of the dependency (sha256:first)", got)
	}
	if start.Refs[moving].Digest != "sha256:new" || start.Accepted[moving].Digest != "sha256:new" || start.Refs[other].Digest != "sha256:o" {
		t.Errorf("start: %+v, want what only one of them records kept", start)
	}

	ours := pinned{
		Refs:     map[string]Resolved{pinRef: resolved(pinRef, pinDigest, "sha256:first"), moving: resolved(moving, "sha256:newer", "")},
		Accepted: map[string]Resolved{moving: resolved(moving, "sha256:newer", "")},
	}
	saved, err := save(cluster, ours, "ConfigMap ns/cueop-pins")
	if err != nil {
		t.Fatal(err)
	}
	if got := saved.Refs[pinRef].Deps[0].Digest; got != "sha256:first" {
		t.Errorf("save: the pin's dependency = %s, want its first record sha256:first kept", got)
	}
	if saved.Refs[moving].Digest != "sha256:newer" || saved.Accepted[moving].Digest != "sha256:newer" {
		t.Errorf("save: %+v, want ours for the moving reference", saved)
	}
	if saved.Refs[other].Digest != "sha256:o" {
		t.Errorf("save: %+v, want another operator's reference kept", saved)
	}
	// A pin first recorded here is written as ours.
	ours.Refs[pinRef] = resolved(pinRef, pinDigest, "sha256:moved")
	if got, err := save(pinned{Refs: map[string]Resolved{}, Accepted: map[string]Resolved{}}, ours, "ConfigMap ns/cueop-pins"); err != nil || got.Refs[pinRef].Deps[0].Digest != "sha256:moved" {
		t.Errorf("save over an empty record: pin %+v, %v; want ours", got.Refs[pinRef], err)
	}
	// A pin recorded there with other dependencies than ours (another
	// replica's first fetch, before a tag moved) is refused, naming the
	// dependency and both digests: never two contents of one pin.
	_, err = save(cluster, ours, "ConfigMap ns/cueop-pins")
	for _, want := range []string{pinRef, "example.com/lib@v0.1.0 is digest sha256:moved here, sha256:first there", "ConfigMap ns/cueop-pins"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("save of a pin recorded with other dependencies = %v, want an error naming %q", err, want)
		}
	}
}

// TestRecordBounded: a record grown past maxRecordBytes with the
// references of others (pins given once, long ago) keeps only ours; ours
// alone past it is refused naming the record.
func TestRecordBounded(t *testing.T) {
	ours := pinned{Refs: map[string]Resolved{pinRef: resolved(pinRef, pinDigest, "sha256:dep")}, Accepted: map[string]Resolved{}}
	old := pinned{Refs: map[string]Resolved{}, Accepted: map[string]Resolved{}}
	for i := 0; i < 4000; i++ {
		ref := fmt.Sprintf("oci://r.example/example.com/old%d@v1.0.0@sha256:%064d", i, i)
		old.Refs[ref] = resolved(ref, fmt.Sprintf("sha256:%064d", i), "sha256:dep")
	}
	p, err := save(old, ours, "ConfigMap ns/pins")
	if err != nil {
		t.Fatal(err)
	}
	data, err := bounded(p, ours, "ConfigMap ns/pins")
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(data, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxRecordBytes || len(got.Refs) != 1 || got.Refs[pinRef].Digest != pinDigest {
		t.Errorf("bounded record: %d bytes, %d references, %v; want ours alone", len(data), len(got.Refs), got.Refs[pinRef])
	}
	for i := 0; i < 4000; i++ {
		ref := fmt.Sprintf("oci://r.example/example.com/ours%d@v1.0.0@sha256:%064d", i, i)
		ours.Refs[ref] = resolved(ref, fmt.Sprintf("sha256:%064d", i), "sha256:dep")
	}
	if _, err := bounded(ours, ours, "ConfigMap ns/pins"); err == nil || !strings.Contains(err.Error(), "ConfigMap ns/pins") {
		t.Errorf("ours past the bound: %v, want refused naming the record", err)
	}
}

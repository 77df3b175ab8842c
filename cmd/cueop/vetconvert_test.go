package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestVetChecksConversionRoundTrips: vet converts the golden parents and
// the generated specs of RedisCluster to the other versions and back, and
// refuses a fromHub that forgets minReady, naming the field and the
// position of the conversion.
func TestVetChecksConversionRoundTrips(t *testing.T) {
	out, err := run(t, "vet", "--testdata", "../../testdata")
	if err != nil || !strings.Contains(out, "ok   rediscluster: ") || !strings.Contains(out, "specs convert to every other version and back") {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	tmpl := testkit.CopyTemplates(t)
	forget := "\t\t\tif in.spec.minReady != _|_ {minReady: in.spec.minReady}\n\t\t}\n\t}\n}"
	v2 := filepath.Join(tmpl, "rediscluster", "v2.cue")
	testkit.EditFile(t, v2, testkit.Replace(forget, "\t\t}\n\t}\n}")) // fails if v2.cue has no fromHub of minReady to forget
	root := newRoot()
	root.SetOut(&strings.Builder{})
	root.SetErr(&strings.Builder{})
	root.SetArgs([]string{"--templates", tmpl, "vet", "--testdata", "../../testdata"})
	err = root.Execute()
	// The operator's reload refuses it with the same message
	// (engine/operator TestReloadRefusesLossyConversion).
	want := "kind rediscluster: " + v2 + ":36:2: conversion versions.v2.fromHub (v1 to v2) loses field spec.minReady in the round trip v1 to v2 and back"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("vet of a fromHub that forgets minReady: %v, want the field and the position", err)
	}
}

// TestRenderSampleAtV2: a CR given at the spoke v2 renders as its hub form
// does: size 2 is two Pods of redis:7.2.
func TestRenderSampleAtV2(t *testing.T) {
	out, err := run(t, "render", "-f", "../../config/samples/cache_v2_rediscluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: sample-v2-1", "image: redis:7.2"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sample-v2-2") {
		t.Errorf("render output has a third Pod:\n%s", out)
	}
}

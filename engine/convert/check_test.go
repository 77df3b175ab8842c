package convert_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/convert"
)

// TestCheckSpecs: each refusal once, with the kind, and the object of the
// spec that first showed it; a spec at a version the kind does not serve,
// or one its own #Spec refuses, is skipped.
func TestCheckSpecs(t *testing.T) {
	c := redisWith(t, "\t\t\tversion:  in.spec.redisVersion\n", "\t\t\tif in.spec.redisVersion != \"6.2\" {version: in.spec.redisVersion}\n")
	v1 := func(version string) map[string]any { return map[string]any{"replicas": int64(2), "version": version} }
	if err := c.CheckSpecs([]convert.Spec{
		{Version: "v1", Spec: v1("7.0"), Source: "RedisCluster ns/a"},
		{Version: "v3", Spec: v1("6.2")},
		{Version: "v1", Spec: map[string]any{"replicas": int64(0), "version": "6.2"}},
	}); err != nil {
		t.Errorf("specs that do not show the loss: %v", err)
	}
	err := c.CheckSpecs([]convert.Spec{
		{Version: "v1", Spec: v1("6.2"), Source: "RedisCluster ns/b"},
		{Version: "v1", Spec: v1("6.2"), Source: "RedisCluster ns/c"},
	})
	want := "/app/v2.cue:28:2: conversion versions.v2.toHub (v2 to v1) changes field spec.version in the round trip v1 to v2 and back (spec of RedisCluster ns/b)"
	if err == nil || !strings.HasPrefix(err.Error(), "kind app: ") || !strings.HasSuffix(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("error = %v, want once %q", err, want)
	}
}

package convert_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// redis loads the shipped RedisCluster and its converter.
func redis(t testing.TB) *convert.Converter {
	t.Helper()
	set := templatetest.Load(t, "../../templates")
	c, err := convert.New(set.Lookup("cache.example.com", "RedisCluster"))
	if err != nil || c == nil {
		t.Fatalf("New = %v, %v", c, err)
	}
	return c
}

func object(t testing.TB, src string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	// The numbers of an object read from the API server.
	c := u.DeepCopy()
	b, _ := c.MarshalJSON()
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

func mustConvert(t *testing.T, c *convert.Converter, obj *unstructured.Unstructured, to string) *unstructured.Unstructured {
	t.Helper()
	out, err := c.Convert(obj, to)
	if err != nil {
		t.Fatalf("Convert to %s: %v", to, err)
	}
	return out
}

const v1Obj = `{"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
 "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"}},
 "spec": {"replicas": 5, "version": "6.2", "minReady": 2},
 "status": {"readyReplicas": 1, "phase": "Degraded", "selector": "app=redis",
   "observedGeneration": 3, "conditions": [{"type": "Ready", "status": "False"}]}}`

func TestConvertRenamesFieldsBothWays(t *testing.T) {
	c := redis(t)
	in := object(t, v1Obj)
	v2 := mustConvert(t, c, in, "v2")
	want := map[string]any{"size": int64(5), "redisVersion": "6.2", "minReady": int64(2)}
	if got := v2.Object["spec"]; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 spec = %v, want %v", got, want)
	}
	if v2.GetAPIVersion() != "cache.example.com/v2" || v2.GetLabels()["x"] != "y" || len(v2.GetAnnotations()) != 0 {
		t.Errorf("v2 = %v: want apiVersion v2, the labels kept and no annotation", v2.Object)
	}
	if !reflect.DeepEqual(v2.Object["status"], in.Object["status"]) {
		t.Errorf("status = %v, want it unchanged", v2.Object["status"])
	}
	back := mustConvert(t, c, v2, "v1")
	if !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip = %v, want %v", back.Object, in.Object)
	}
}

func TestConvertFillsDefaultsOfTheTarget(t *testing.T) {
	c := redis(t)
	v2 := mustConvert(t, c, object(t, `{"apiVersion": "cache.example.com/v1", "kind": "RedisCluster", "metadata": {"name": "a"}, "spec": {}}`), "v2")
	want := map[string]any{"size": int64(3), "redisVersion": "7.0"}
	if got := v2.Object["spec"]; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 spec = %v, want %v", got, want)
	}
}

func TestConvertRefusesWhatTheSchemaRefuses(t *testing.T) {
	c := redis(t)
	_, err := c.Convert(object(t, `{"apiVersion": "cache.example.com/v2", "kind": "RedisCluster", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"size": 0}}`), "v1")
	if err == nil || !strings.Contains(err.Error(), "RedisCluster ns/a: conversion v2 to v1") || !strings.Contains(err.Error(), "v2.cue:") {
		t.Errorf("error = %v, want the CR, the versions and the position in v2.cue", err)
	}
	_, err = c.Convert(object(t, `{"apiVersion": "cache.example.com/v3", "kind": "RedisCluster", "metadata": {"name": "a"}}`), "v1")
	if err == nil || !strings.Contains(err.Error(), `version "v3" is not served (served: v1, v2)`) {
		t.Errorf("error = %v, want v3 not served", err)
	}
}

func TestConvertSameVersionIsACopy(t *testing.T) {
	c := redis(t)
	in := object(t, v1Obj)
	out := mustConvert(t, c, in, "v1")
	if !reflect.DeepEqual(out.Object, in.Object) {
		t.Errorf("got %v, want %v", out.Object, in.Object)
	}
}

// TestLenientConvertsAStoredSpecItsSchemaRefuses: a CR stored before a
// rule existed (minReady above replicas) is refused by the strict
// converter (golden cases, vet), with the spec's own path; the webhook's
// lenient converter converts it as declared, both ways, so that it stays
// readable and fixable at every version.
func TestLenientConvertsAStoredSpecItsSchemaRefuses(t *testing.T) {
	c := redis(t)
	old := object(t, `{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"old","namespace":"t"},
		"spec":{"replicas":3,"version":"7.0","minReady":5}}`)
	_, err := c.Convert(old, "v2")
	var se *convert.SpecError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "spec.minReady: invalid value 5") {
		t.Fatalf("strict Convert = %v, want a SpecError naming spec.minReady", err)
	}
	v2 := mustConvert(t, c.Lenient(), old, "v2")
	if got := v2.Object["spec"]; !reflect.DeepEqual(got, map[string]any{"size": int64(3), "redisVersion": "7.0", "minReady": int64(5)}) {
		t.Errorf("lenient v2 spec = %v", got)
	}
	back := mustConvert(t, c.Lenient(), v2, "v1")
	if !reflect.DeepEqual(back.Object["spec"], old.Object["spec"]) {
		t.Errorf("round trip: %v, want %v", back.Object["spec"], old.Object["spec"])
	}
}

package convert_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/convert"
)

// TestLenientKeepsTheSchemaBounds: the lenient converter converts a spec
// that breaks a rule of its #Spec (TestLenientConvertsAStoredSpecItsSchemaRefuses)
// but not one out of its schema's bounds (replicas at most 100, a string
// where a number goes): that is refused, as a SpecError naming the
// spec's field paths, both ways.
func TestLenientKeepsTheSchemaBounds(t *testing.T) {
	c := redis(t).Lenient()
	for _, tc := range []struct{ src, want string }{
		{`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"big","namespace":"t"},"spec":{"replicas":500,"version":"7.0"}}`,
			"RedisCluster t/big: conversion v1 to v2: spec at v1 is out of its schema's bounds: spec.replicas: Invalid value: 500: replicas in body should be less than or equal to 100"},
		{`{"apiVersion":"cache.example.com/v2","kind":"RedisCluster","metadata":{"name":"typed","namespace":"t"},"spec":{"size":"three","minReady":0}}`,
			"RedisCluster t/typed: conversion v2 to v1: spec at v2 is out of its schema's bounds: " +
				"spec.minReady: Invalid value: 0: minReady in body should be greater than or equal to 1; spec.size: Invalid value: \"string\": size in body must be of type integer"},
	} {
		_, err := c.Convert(object(t, tc.src), map[bool]string{true: "v2", false: "v1"}[strings.Contains(tc.src, "/v1\"")])
		var se *convert.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("lenient Convert = %v\nwant a SpecError saying %q", err, tc.want)
		}
	}
}

package convert_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
)

// redisWith loads the shipped RedisCluster with its v2.cue edited by
// replacing old with new.
func redisWith(t *testing.T, old, new string) *convert.Converter {
	t.Helper()
	main, err := os.ReadFile("../../templates/rediscluster/rediscluster.cue")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := os.ReadFile("../../templates/rediscluster/v2.cue")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("../../templates/rediscluster/redis.conf")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(v2), old, new, 1)
	if edited == string(v2) {
		t.Fatalf("%q is not in v2.cue", old)
	}
	set, err := templateLoad(t, map[string]string{"app/rediscluster.cue": string(main), "app/v2.cue": edited, "app/redis.conf": string(conf)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := convert.New(set.Kinds[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTripOfTheShippedConversions(t *testing.T) {
	c := redis(t)
	for _, tc := range []struct {
		spec     map[string]any
		from, to string
	}{
		{map[string]any{"replicas": int64(5), "version": "6.2", "minReady": int64(2)}, "v1", "v2"},
		{map[string]any{}, "v1", "v2"},
		{map[string]any{"size": int64(5), "redisVersion": "6.2", "minReady": int64(2)}, "v2", "v1"},
	} {
		if err := c.CheckRoundTrip(tc.spec, tc.from, tc.to); err != nil {
			t.Errorf("%v %s to %s: %v", tc.spec, tc.from, tc.to, err)
		}
	}
	if err := c.CheckRoundTrip(map[string]any{"replicas": int64(0)}, "v1", "v2"); !errors.Is(err, convert.ErrInvalidInput) {
		t.Errorf("an invalid v1 spec: %v, want ErrInvalidInput", err)
	}
}

func TestRoundTripRefusesALosingConversion(t *testing.T) {
	for name, tc := range map[string]struct {
		old, new, from, to, want string
	}{
		"fromHub forgets minReady": {"\t\t\tif in.spec.minReady != _|_ {minReady: in.spec.minReady}\n\t\t}\n\t}\n}", "\t\t}\n\t}\n}",
			"v1", "v2", "v2.cue:36:2: conversion versions.v2.fromHub (v1 to v2) loses field spec.minReady"},
		"toHub forgets version": {"version:  in.spec.redisVersion", "", "v1", "v2",
			"v2.cue:28:2: conversion versions.v2.toHub (v2 to v1) changes field spec.version"},
		"fromHub invents minReady": {"\t\t\tif in.spec.minReady != _|_ {minReady: in.spec.minReady}\n\t\t}\n\t}\n}", "\t\t\tminReady: 1\n\t\t}\n\t}\n}",
			"v2", "v1", "conversion versions.v2.fromHub (v1 to v2) invents field spec.minReady"},
	} {
		t.Run(name, func(t *testing.T) {
			c := redisWith(t, tc.old, tc.new)
			spec := map[string]any{"replicas": int64(5), "version": "6.2", "minReady": int64(2)}
			if tc.from == "v2" {
				spec = map[string]any{"size": int64(5), "redisVersion": "6.2"}
			}
			err := c.CheckRoundTrip(spec, tc.from, tc.to)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRoundTripWithinBudget: the round trip's conversions run within the
// converter's budget, the first ones included: with a budget no
// evaluation fits, a lossy conversion is an Exceeded, not evaluated
// unbounded to find the loss (the operator checks its tenants' specs).
func TestRoundTripWithinBudget(t *testing.T) {
	c := redisWith(t, "\t\t\tversion:  in.spec.redisVersion\n", "\t\t\tif in.spec.redisVersion != \"6.2\" {version: in.spec.redisVersion}\n")
	spec := map[string]any{"replicas": int64(2), "version": "6.2"}
	if err := c.CheckRoundTrip(spec, "v1", "v2"); err == nil || !strings.Contains(err.Error(), "changes field spec.version") {
		t.Fatalf("CheckRoundTrip = %v, want the loss", err)
	}
	var ex *budget.Exceeded
	if err := c.WithBudget(budget.Budget{Memory: 1}).CheckRoundTrip(spec, "v1", "v2"); !errors.As(err, &ex) {
		t.Errorf("CheckRoundTrip within 1 byte = %v, want a budget exceeded", err)
	}
}

package operator_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

const shiftersCRD = "shifters.hostileversions.test.example"

// createShifter creates a Shifter at v1 with kubectl (create, not apply:
// a spec of a megabyte does not fit twice, in the last-applied
// annotation).
func createShifter(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"apiVersion": "hostileversions.test.example/v1", "kind": "Shifter",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
	must(t, err)
	mustKubectl(t, string(b), "create", "-f", "-")
}

// TestConversionsInWorkers: the conversions the API server asks of the
// operator run in its workers. A CR whose conversion to v2 allocates a
// terabyte at once fails its own read at v2, naming it and the crash,
// while the operator (this process) serves on; CRs whose conversions run
// out of their budget fail their reads alone: a CR of another namespace
// reads at v2 meanwhile and afterwards, and the bomb, once its spec is
// fixed, reads at v2 and converges.
func TestConversionsInWorkers(t *testing.T) {
	nsA, nsB := clustertest.Namespace(t), clustertest.Namespace(t)
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "crd", shiftersCRD, "--ignore-not-found", "--wait", "--timeout=60s")
	})
	opts := operatortest.Options(kindsDir(t, map[string]string{"hostileversions": workertest.HostileVersionsKind}), nsA)
	opts.Budget = budget.Budget{Time: 300 * time.Millisecond}
	operatortest.Start(t, clustertest.Config(), opts)
	t.Cleanup(func() { // while the operator runs: it removes their finalizers
		_, _ = kubectl(t, "", "-n", nsA, "delete", "shifters", "--all", "--timeout=60s")
	})
	clustertest.WaitEstablished(t, 60*time.Second, shiftersCRD)
	readV2 := func(ns, name string) (map[string]any, error) {
		u, err := getAt(t, "shifters.v2.hostileversions.test.example", ns, name)
		if err != nil {
			return nil, err
		}
		spec, _ := u.Object["spec"].(map[string]any)
		return spec, nil
	}
	innocentReads := func() {
		t.Helper()
		eventually(t, 30*time.Second, func() string {
			spec, err := readV2(nsB, "fine")
			if err != nil {
				return err.Error()
			}
			if spec["repeated"] != "xx" {
				return "fine at v2: spec " + jsonText(spec)
			}
			return ""
		})
	}
	createShifter(t, nsB, "fine", map[string]any{"count": 2, "trigger": "now"})
	innocentReads()

	createShifter(t, nsA, "bomb", workertest.ConversionBombSpec())
	_, err := readV2(nsA, "bomb")
	for _, want := range []string{"Shifter " + nsA + "/bomb: conversion from v1 to v2", "conversion crashed its worker", "out of memory"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read of the bomb at v2: %v, want an error saying %q", err, want)
		}
	}
	innocentReads()

	for _, name := range []string{"slow-1", "slow-2", "slow-3"} {
		createShifter(t, nsA, name, workertest.SlowConversionSpec())
		if _, err := readV2(nsA, name); err == nil || !strings.Contains(err.Error(), "Shifter "+nsA+"/"+name+": conversion from v1 to v2") || !strings.Contains(err.Error(), "budget") {
			t.Errorf("read of %s at v2: %v, want it over its budget", name, err)
		}
	}
	innocentReads()

	mustKubectl(t, "", "-n", nsA, "patch", "shifters.v1.hostileversions.test.example", "bomb", "--type=merge", "-p", `{"spec":{"line":"ab","count":2}}`)
	eventually(t, 30*time.Second, func() string {
		spec, err := readV2(nsA, "bomb")
		if err != nil {
			return err.Error()
		}
		if spec["repeated"] != "abab" {
			return "bomb at v2: spec " + jsonText(spec)
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string { // and reconciles it
		if out, err := kubectl(t, "", "-n", nsA, "get", "configmap", "bomb", "-o", "jsonpath={.data.count}"); err != nil || out != "2" {
			return "ConfigMap bomb: " + out
		}
		return ""
	})
}

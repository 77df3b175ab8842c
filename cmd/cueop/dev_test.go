package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevExitsWhenReady runs `cueop dev --exit-when-ready` (what `make run`
// runs, on its own local control plane) and checks what a newcomer sees.
func TestDevExitsWhenReady(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"--templates", "../../templates", "dev", "--samples", "../../config/samples",
		"--kubeconfig-out", kubeconfig, "--exit-when-ready", "--timeout", "2m", "--zap-log-level", "error"})
	if err := root.Execute(); err != nil {
		t.Fatalf("cueop dev: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"control plane ready in", "kubectl --kubeconfig " + kubeconfig,
		"RedisCluster default/sample", "phase=Running readyReplicas=3", "Ready=True (Ready)",
		"StaticSite default/docs", "every sample is Ready",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Errorf("kubeconfig not written: %v", err)
	}
}

// TestDevShardedReplicas runs `cueop dev --shards 2 --replicas 2`: two
// replicas in the process share the ranges of the samples, on a local
// kube-apiserver with the ShardedListAndWatch gate on, and converge them.
func TestDevShardedReplicas(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"--templates", "../../templates", "dev", "--samples", "../../config/samples",
		"--kubeconfig-out", kubeconfig, "--exit-when-ready", "--timeout", "2m", "--zap-log-level", "error",
		"--shards", "2", "--replicas", "2"})
	if err := root.Execute(); err != nil {
		t.Fatalf("cueop dev --shards 2 --replicas 2: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"2 replicas (dev-replica-0..1) share 2 shard ranges", "get leases -n default",
		"RedisCluster default/sample", "phase=Running readyReplicas=3", "StaticSite default/docs", "every sample is Ready",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

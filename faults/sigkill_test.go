package faults_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestKilledMidConvergence SIGKILLs a running `cueop run` while 10 of 20
// RedisClusters converge, changes one CR while no operator runs, and starts
// cueop again: it resumes, converges every CR, keeps every Pod it had
// already created (same uid), prunes only what the spec no longer asks for,
// and leaves no duplicate and no orphan.
func TestKilledMidConvergence(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	dir := copyTemplates(t)
	first := startCueop(t, e, dir, ns)
	e.waitCRD(t, redisGVK)

	// Half the CRs converge; the other half is applied and the operator
	// killed at once, while it works on them.
	names := e.applyRedis(t, ns, "k", 10, 3)
	eventually(t, 60*time.Second, func() string {
		if n := e.readyCount(t, ns); n < len(names) {
			return fmt.Sprintf("%d of %d RedisClusters Ready", n, len(names))
		}
		return ""
	})
	start := time.Now()
	names = append(names, e.applyRedis(t, ns, "m", 10, 3)...)
	want := uniform(names, 3)
	first.kill(t)
	killedAt := time.Since(start)
	// What the killed operator left: the Pods it created, the CRs it had
	// converged.
	before := e.podUIDs(t, ns)
	var converged []string
	for _, name := range names {
		if redisReady(e.mustGet(t, redisGVK, ns, name), 3) == "" {
			converged = append(converged, name)
		}
	}
	t.Logf("SIGKILL after %s: %d of %d RedisClusters Ready, %d of 60 Pods created",
		killedAt.Round(time.Millisecond), len(converged), len(names), len(before))
	if len(converged) == len(names) {
		t.Fatal("every CR had converged before the kill: not a mid-convergence kill")
	}

	// While no operator runs (no conversion webhook: the storage version v1
	// is used), a converged CR is scaled down: the restarted
	// operator must prune exactly its last Pod.
	shrunk := converged[0]
	e.mustKubectl(t, "", "-n", ns, "scale", "redisclusters.v1.cache.example.com/"+shrunk, "--replicas=2")
	want[shrunk] = 2
	pruned := shrunk + "-2"

	restart := time.Now()
	startCueop(t, e, dir, ns)
	eventually(t, 120*time.Second, func() string { return e.allRedisReady(t, ns, want) })
	eventually(t, 60*time.Second, func() string { return e.checkChildren(t, ns, redisGVK, want) })
	t.Logf("converged %s after the restart", time.Since(restart).Round(time.Millisecond))

	after := e.podUIDs(t, ns)
	kept := 0
	for name, uid := range before {
		switch {
		case name == pruned:
			if _, ok := after[name]; ok {
				t.Errorf("Pod %s not pruned after %s was scaled to 2", name, shrunk)
			}
		case after[name] != uid:
			t.Errorf("Pod %s was replaced (uid %s -> %s): a restart must keep what it created", name, uid, after[name])
		default:
			kept++
		}
	}
	if len(after) != 59 {
		t.Errorf("%d Pods after the restart, want 59", len(after))
	}
	t.Logf("%d Pods created before the kill kept with their uid, 1 pruned", kept)
}

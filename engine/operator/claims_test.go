package operator_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// evilPackage declares kind Evil in RedisCluster's group with RedisCluster's
// plural: it claims the CRD redisclusters.cache.example.com, and with it
// the ServiceAccount named after that CRD.
const evilPackage = `package evil
resource: {group: "cache.example.com", version: "v1", kind: "Evil", plural: "redisclusters"}
#Spec: {}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "evil"}
`

// loadRefused waits until a logs a load error holding every one of texts.
func loadRefused(t *testing.T, a *operatortest.Activity, texts ...string) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		for _, l := range a.Logged("templates did not load") {
			found := true
			for _, text := range texts {
				found = found && strings.Contains(l.Values["error"], text)
			}
			if found {
				return ""
			}
		}
		return "no load error naming " + strings.Join(texts, ", ")
	})
}

// redisKeeps says why the RedisCluster CRD is not RedisCluster's, applied
// for package pkg, with its Template serving and naming the refused claim.
func redisKeeps(t *testing.T, pkg, refused string) string {
	out, err := kubectl(t, "", "get", "crd", redisCRD, "-o", `jsonpath={.spec.names.kind} {.metadata.annotations.cueop\.dev/package}`)
	if err != nil || out != "RedisCluster "+pkg {
		return "CRD " + redisCRD + ": kind and package " + out
	}
	if s, msg, _ := templateCondition(t, "Ready"); s != "True" {
		return "Template Ready " + s + ": " + msg
	}
	if s, msg, _ := templateCondition(t, "Degraded"); s != "True" || !strings.Contains(msg, "also claimed by "+refused) {
		return "Template Degraded " + s + ", want the refused claim of " + refused + ": " + msg
	}
	return ""
}

// TestClaimOfAnotherKindsCRDName: a package declaring kind Evil with
// RedisCluster's plural claims RedisCluster's CRD name (and so its
// ServiceAccount). Neither established, both are refused, naming both, and
// the CRD is not created for Evil; once RedisCluster serves, Evil is
// refused and RedisCluster keeps its CRD and serves on, also in an
// operator started afresh, which finds the holder on the CRD.
func TestClaimOfAnotherKindsCRDName(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	mustKubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+redisCRD)
	dir := copyTemplates(t)
	testkit.WriteKind(t, dir, "evil", evilPackage)

	a, stop := startOperatorStoppable(t, dir, ns, nil)
	a.WaitLog(t, 60*time.Second, "serving kind", "package", "webapp") // served after evil and rediscluster
	if out, err := kubectl(t, "", "get", "crd", redisCRD, "-o", "jsonpath={.spec.names.kind}"); err == nil {
		t.Fatalf("the CRD %s was created, for kind %q: neither claimant should have it", redisCRD, out)
	}
	loadRefused(t, a, "CRD "+redisCRD+": defined by both evil and rediscluster", "package evil (resource at ", "evil.cue:2:", "package rediscluster (resource at ")

	testkit.Remove(t, dir, "evil")
	waitCRD(t)
	c := newClient(t)
	readyRedis(t, c, ns, "kept", 2)

	testkit.WriteKind(t, dir, "evil", evilPackage)
	loadRefused(t, a, "CRD "+redisCRD+": claimed by both rediscluster and evil: rediscluster keeps it")
	eventually(t, 60*time.Second, func() string { return redisKeeps(t, "rediscluster", "evil") })
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/kept", "--replicas=3")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "kept", 3) })

	stop()
	a, _ = operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	loadRefused(t, a, "CRD "+redisCRD+": claimed by both rediscluster and evil: rediscluster keeps it")
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/kept", "--replicas=1")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "kept", 1) })
	eventually(t, 60*time.Second, func() string { return redisKeeps(t, "rediscluster", "evil") })
}

// widgetPackage is team B's own kind.
const widgetPackage = `package widget
resource: {group: "evil.example.com", version: "v1", kind: "Widget"}
#Spec: {}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "widget"}
`

// TestModuleClaimingAnotherModulesKind: two teams' modules from one
// registry; team B publishes a version that also declares team A's
// RedisCluster. B's claim is refused for B alone: A's RedisCluster serves
// on, takes A's next version, and its Template names B's refused claim;
// an operator started afresh on an empty module cache (a new Pod) serves
// every kind but B's claim, rather than exiting.
func TestModuleClaimingAnotherModulesKind(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate, "template/widgets.evil.example.com")
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+redisCRD, "crd/widgets.evil.example.com")
	})
	ns := clustertest.Namespace(t)
	reg := sourcetest.Start(t)
	publishRedis(t, reg, "v1.0.0", func(s string) string { return s })
	evil := map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/evil@v1", nil),
		"widget/widget.cue":  widgetPackage,
	}
	reg.Publish(t, "example.com/evil@v1", "v1.0.0", evil)
	refs := reg.Ref("example.com/redis", "v1") + "," + reg.Ref("example.com/evil", "v1")
	cache := t.TempDir()
	s := openRedisSource(t, refs, cache)
	_, stop := operatortest.StartObserved(t, clustertest.Config(), registryOptions(s, ns))
	c := newClient(t)
	waitCRD(t)
	readyRedis(t, c, ns, "team-a", 2)

	for name, src := range sourcetest.RedisModule(t, "../..", "example.com/evil@v1") {
		if strings.HasPrefix(name, "rediscluster/") {
			evil[name] = src
		}
	}
	reg.Publish(t, "example.com/evil@v1", "v1.1.0", evil)
	poll(t, s, true)
	publishRedis(t, reg, "v1.1.0", addPodLabel("cache"))
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "team-a", "tier", "cache", 2) })
	eventually(t, 60*time.Second, func() string { return redisKeeps(t, "redis/rediscluster", "evil/rediscluster") })
	if _, msg, _ := templateCondition(t, "Degraded"); !strings.Contains(msg, "example.com/evil@v1.1.0") {
		t.Errorf("Degraded does not name the refused module version: %s", msg)
	}
	eventually(t, 60*time.Second, func() string { // a restart on this cache comes back on A's new version, B's last good one
		return acceptedVersions(t, cache, reg.Ref("example.com/redis", "v1"), "v1.1.0", reg.Ref("example.com/evil", "v1"), "v1.0.0")
	})

	stop()
	fresh := openRedisSource(t, refs, t.TempDir()) // a new Pod: an empty module cache
	operatortest.StartObserved(t, clustertest.Config(), registryOptions(fresh, ns))
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/team-a", "--replicas=3")
	eventually(t, 60*time.Second, func() string {
		if why := podsLabelled(t, c, ns, "team-a", "tier", "cache", 3); why != "" {
			return why
		}
		return readyStatus(t, c, ns, "team-a", 3)
	})
	eventually(t, 60*time.Second, func() string { return redisKeeps(t, "redis/rediscluster", "evil/rediscluster") })
	eventually(t, 60*time.Second, func() string {
		if s, msg, _ := kubectlCondition(t, "template/widgets.evil.example.com", "Ready"); s != "True" {
			return "Widget's Template Ready " + s + ": " + msg
		}
		return ""
	})
}

// acceptedVersions says why the module cache does not record, for each
// reference, the version given after it as the one the operator accepted.
func acceptedVersions(t *testing.T, cache string, refVersions ...string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cache, "pinned.json"))
	if err != nil {
		return err.Error()
	}
	var p struct {
		Accepted map[string]struct{ Version string } `json:"accepted"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(refVersions); i += 2 {
		if got := p.Accepted[refVersions[i]].Version; got != refVersions[i+1] {
			return fmt.Sprintf("accepted %s: %q, want %s", refVersions[i], got, refVersions[i+1])
		}
	}
	return ""
}

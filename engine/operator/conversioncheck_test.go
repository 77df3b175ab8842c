package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// forgetMinReady is v2's fromHub (v1, the hub, to v2) without minReady:
// every reader at v2 would lose it.
func forgetMinReady(src string) string {
	return strings.Replace(src, "\t\t\tif in.spec.minReady != _|_ {minReady: in.spec.minReady}\n\t\t}\n\t}\n}", "\t\t}\n\t}\n}", 1)
}

// forgetVersion62 is v2's toHub (v2 to v1) that drops version 6.2 alone:
// no spec generated from the schemas has it, a stored CR does.
func forgetVersion62(src string) string {
	return strings.Replace(src, "\t\t\tversion:  in.spec.redisVersion\n", "\t\t\tif in.spec.redisVersion != \"6.2\" {version: in.spec.redisVersion}\n", 1)
}

// TestReloadRefusesLossyConversion: a hot reload runs `cueop vet`'s round
// trips on the new revision's conversions, over the specs generated from
// the schemas and the specs of the stored CRs. A spoke whose fromHub drops
// minReady, then one whose toHub drops the version only a stored CR has,
// are refused with vet's message and position (a TemplateError Event,
// cueop_template_refused): the last good revision keeps converting (a read
// at v2 shows the stored minReady) and serving (no Pod replaced).
func TestReloadRefusesLossyConversion(t *testing.T) {
	ns, dir := startRedisFleet(t)
	mustKubectl(t, redisYAML(ns, "one", 2, "6.2")+"  minReady: 1\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 2) })
	c := newClient(t)
	pods := podUIDs(t, c, ns, "one")
	loadErrors := metricSum(t, "cueop_template_load_errors_total")
	v2 := dir + "/rediscluster/v2.cue"
	original := testkit.ReadFile(t, v2)

	editFile(t, v2, forgetMinReady)
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, redisCRD, "TemplateError", "keeps serving and converting: kind rediscluster: "+v2+
			":36:2: conversion versions.v2.fromHub (v1 to v2) loses field spec.minReady in the round trip v1 to v2 and back")
	})
	if got := metricSum(t, "cueop_template_refused", "kind", "RedisCluster"); got != 1 {
		t.Errorf("cueop_template_refused = %v, want 1", got)
	}
	if got := metricSum(t, "cueop_template_load_errors_total"); got <= loadErrors {
		t.Errorf("cueop_template_load_errors_total = %v, want more than %v", got, loadErrors)
	}
	checkRedisAt(t, ns, "one", 2, "6.2", 1)

	editFile(t, v2, func(string) string { return forgetVersion62(original) })
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, redisCRD, "TemplateError", "keeps serving and converting: kind rediscluster: "+v2+
			":28:2: conversion versions.v2.toHub (v2 to v1) changes field spec.version in the round trip v1 to v2 and back (spec of RedisCluster "+ns+"/one)")
	})
	checkRedisAt(t, ns, "one", 2, "6.2", 1)

	editFile(t, v2, func(string) string { return original })
	eventually(t, 60*time.Second, func() string {
		if got := metricSum(t, "cueop_template_refused", "kind", "RedisCluster"); got != 0 {
			return fmt.Sprintf("cueop_template_refused = %v after the template was put back", got)
		}
		return ""
	})
	checkRedisAt(t, ns, "one", 2, "6.2", 1)
	if got := podUIDs(t, c, ns, "one"); got != pods {
		t.Errorf("Pods of one changed: %s, were %s", got, pods)
	}
}

// TestStoredSpecRefusesOnlyARegression: a stored CR whose spec the
// revision converting now fails to round-trip (its toHub drops version
// 6.2 and the CR, created after, has it) refuses no later revision that
// fails it too, and does not leave its kind unserved after a restart: a
// tenant's CR cannot hold its kind's templates back.
func TestStoredSpecRefusesOnlyARegression(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	dir := copyTemplates(t)
	v2 := dir + "/rediscluster/v2.cue"
	editFile(t, v2, forgetVersion62)
	_, stop := startOperatorStoppable(t, dir, ns, nil)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "one", 2, "6.2"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 2) })

	editFile(t, v2, func(src string) string { return src + "\n// A later revision, as lossy on 6.2.\n" })
	set, err := template.Load(dir)
	must(t, err)
	rev := set.Lookup("cache.example.com", "RedisCluster").Revision
	eventually(t, 60*time.Second, func() string {
		if got := metricSum(t, "cueop_template_revision", "kind", "RedisCluster", "revision", rev); got != 1 {
			return "revision " + rev + " of rediscluster not served"
		}
		return ""
	})

	stop()
	startOperator(t, dir, ns, nil)
	mustKubectl(t, "", "-n", ns, "patch", "redisclusters.v1.cache.example.com", "one", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
	eventually(t, 90*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 3) })
}

// TestFirstSpokeLossyOnStoredCRRefused: a revision that gives a kind of one
// version its first spoke, whose toHub drops the version only a stored CR
// has, is refused on that CR's spec: the revision before converted
// nothing, so lost nothing.
func TestFirstSpokeLossyOnStoredCRRefused(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	dir := copyTemplates(t)
	src := testkit.Read(t, dir, "rediscluster/v2.cue")
	testkit.Remove(t, dir, "rediscluster/v2.cue")
	startOperator(t, dir, ns, nil)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "one", 2, "6.2"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 2) })

	testkit.Write(t, dir, map[string]string{"rediscluster/v2.cue": forgetVersion62(src)})
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, redisCRD, "TemplateError", "changes field spec.version in the round trip v1 to v2 and back (spec of RedisCluster "+ns+"/one)")
	})
}

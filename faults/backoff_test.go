package faults_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// renders is the number of renders of kind so far, from the metrics of
// the operators of this process.
func renders(t *testing.T, kind string) float64 {
	t.Helper()
	// Gather reports an error when two operators of this process serve the
	// same kind (their rollout gauges collide) but still returns every
	// family, this one included.
	families, err := metrics.Registry.Gather()
	if err != nil && len(families) == 0 {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "cueop_render_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					n += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return n
}

// TestWaitingOnChildrenCostsNothing serves a kind whose CR is ready only
// once someone labels its ConfigMap gate=open. While it waits, cueop does
// not requeue it: no render, no request. The label (a field cueop does not
// render) wakes it through the watch on its children, at once.
func TestWaitingOnChildrenCostsNothing(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	dir := copyTemplates(t)
	writeKind(t, dir, "waiter", `package waiter

resource: {group: "faults.example.com", version: "v1", kind: "Waiter"}
#Spec: {note: *"" | string}
#Status: {gate: string}
parent: {metadata: name: string, spec: #Spec}
observed: [string]: {...}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-gate"}
_gate: [if observed.cm != _|_ if observed.cm.metadata.labels.gate != _|_ {observed.cm.metadata.labels.gate}, "closed"][0]
status: gate: _gate
ready: _gate == "open"
`)
	cfg, ct := countingConfig(e.cfg)
	startOperator(t, e, dir, ns, cfg)
	gvk := sharedGVK
	gvk.Kind = "Waiter"
	e.waitCRD(t, gvk)
	e.mustKubectl(t, "apiVersion: faults.example.com/v1\nkind: Waiter\nmetadata: {name: w, namespace: "+ns+"}\n", "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		cr := e.mustGet(t, gvk, ns, "w")
		if c := condition(cr, "Reconciling"); c == nil || c["status"] != "True" || !strings.Contains(fmt.Sprint(c["message"]), "waiting for children to be ready") {
			return fmt.Sprintf("Reconciling = %v", c)
		}
		if conditionStatus(cr, "Ready") != "False" {
			return "Ready is not False"
		}
		return ""
	})
	ct.quiet(t, 2*time.Second, 30*time.Second)

	r0, w0 := renders(t, "Waiter"), ct.count()
	time.Sleep(10 * time.Second)
	if r, w := renders(t, "Waiter")-r0, ct.since(w0); r != 0 || len(w) != 0 {
		t.Errorf("a CR waiting on its children cost %v renders and %d writes in 10s, want none: %v", r, len(w), w)
	}

	start := time.Now()
	e.mustKubectl(t, "", "-n", ns, "label", "configmap", "w-gate", "gate=open")
	eventually(t, 5*time.Second, func() string {
		if s := conditionStatus(e.mustGet(t, gvk, ns, "w"), "Ready"); s != "True" {
			return "Ready=" + s
		}
		return ""
	})
	t.Logf("woken and Ready %s after its child changed; %v renders", time.Since(start).Round(time.Millisecond), renders(t, "Waiter")-r0)
}

// TestFailingApplyBacksOff puts a RedisCluster in a namespace whose quota
// allows no Pod: every apply of its Pod is refused. cueop retries with an
// exponential backoff (200ms, doubling, at most 5min), not in a loop, and a
// change to the CR wakes it at once.
func TestFailingApplyBacksOff(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	e.mustKubectl(t, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: no-pods, namespace: "+ns+"}\nspec: {hard: {pods: \"0\"}}\n", "apply", "-f", "-")
	cfg, ct := countingConfig(e.cfg)
	startOperator(t, e, copyTemplates(t), ns, cfg)
	e.waitCRD(t, redisGVK)
	eventually(t, 30*time.Second, func() string {
		out, _ := e.kubectl(t, "", "-n", ns, "get", "resourcequota", "no-pods", "-o", "jsonpath={.status.hard.pods}")
		if out != "0" {
			return "quota not active yet"
		}
		return ""
	})
	start := time.Now()
	e.mustKubectl(t, redisYAML(ns, "q", 1), "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		return stalledWith(e.mustGet(t, redisGVK, ns, "q"), "ApplyRejected", rx(`Pod .*q-0.*exceeded quota`))
	})
	time.Sleep(time.Until(start.Add(20 * time.Second)))

	// The attempts to apply the Pod, and the gaps between them.
	var at []time.Time
	ct.mu.Lock()
	for i, w := range ct.writes {
		if w == "PATCH /api/v1/namespaces/"+ns+"/pods/q-0" {
			at = append(at, ct.at[i])
		}
	}
	ct.mu.Unlock()
	var gaps []string
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]).Round(10*time.Millisecond).String())
	}
	t.Logf("%d attempts in 20s, gaps %v", len(at), gaps)
	// 0, 0.2, 0.4, ... 6.4s: about 7 to 9 attempts in 20s; a loop would
	// make hundreds.
	if len(at) < 4 || len(at) > 12 {
		t.Errorf("%d attempts to apply the refused Pod in 20s, want an exponential backoff (4 to 12)", len(at))
	}
	if len(at) >= 3 {
		if last := at[len(at)-1].Sub(at[len(at)-2]); last < 2*time.Second {
			t.Errorf("last retry gap %s: the backoff did not grow", last)
		}
	}

	// The quota goes; a change to the CR wakes it without waiting for the
	// backoff.
	e.mustKubectl(t, "", "-n", ns, "delete", "resourcequota", "no-pods")
	time.Sleep(time.Second) // the quota admission cache
	woken := time.Now()
	e.mustKubectl(t, "", "-n", ns, "annotate", "rediscluster/q", "poke=1")
	eventually(t, 10*time.Second, func() string { return e.allRedisReady(t, ns, map[string]int{"q": 1}) })
	t.Logf("Ready %s after the poke", time.Since(woken).Round(time.Millisecond))
}

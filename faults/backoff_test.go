package faults_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// waiterTemplate is a kind whose CR is ready only once someone labels its
// ConfigMap gate=open.
const waiterTemplate = `package waiter

resource: {group: "faults.example.com", version: "v1", kind: "Waiter"}
#Spec: {note: *"" | string}
#Status: {gate: string}
parent: {metadata: name: string, spec: #Spec}
observed: [string]: {...}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-gate"}
_gate: [if observed.cm != _|_ if observed.cm.metadata.labels.gate != _|_ {observed.cm.metadata.labels.gate}, "closed"][0]
status: gate: _gate
ready: _gate == "open"
`

var waiterGVK = schema.GroupVersionKind{Group: "faults.example.com", Version: "v1", Kind: "Waiter"}

// waiting says why the Waiter ns/name is not yet in the state it settles
// in while its gate is closed, or "".
func (e *env) waiting(t *testing.T, ns, name string) string {
	t.Helper()
	cr := e.mustGet(t, waiterGVK, ns, name)
	if c := condition(cr, "Reconciling"); c == nil || c["status"] != "True" || c["message"] != "waiting for children to be ready" {
		return fmt.Sprintf("Reconciling = %v", c)
	}
	if conditionStatus(cr, "Ready") != "False" {
		return "Ready is not False"
	}
	return ""
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
	writeKind(t, dir, "waiter", waiterTemplate)
	cfg, ct := testkit.CountRequests(e.cfg)
	act := startOperator(t, e, dir, ns, cfg)
	e.waitCRD(t, waiterGVK)
	e.mustKubectl(t, "apiVersion: faults.example.com/v1\nkind: Waiter\nmetadata: {name: w, namespace: "+ns+"}\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return e.waiting(t, ns, "w") })
	// The operator's caches hold the CR and its ConfigMap as they are now:
	// the events of its own writes have reached it. Then it settles.
	eventually(t, 2*time.Minute, func() string {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(waiterGVK)
		cr.SetNamespace(ns)
		cr.SetName("w")
		if why := act.Caught(e.c, cr); why != "" {
			return why
		}
		return act.Caught(e.c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-gate"}})
	})
	act.Settled(t, 0, 60*time.Second)

	// The window starts once the operator settled; 10 s is many times what
	// a requeue or a poll would take to show.
	const window = 10 * time.Second
	r0, w0 := act.Reconciles(), ct.WriteCount()
	time.Sleep(window)
	if r, w := act.Reconciles()-r0, ct.Writes(w0); r != 0 || len(w) != 0 {
		t.Errorf("a CR waiting on its children cost %d reconciles and %d writes in %s, want none: %v\n%s",
			r, len(w), window, w, strings.Join(testkit.Bodies(w), "\n"))
	}

	start := time.Now()
	e.mustKubectl(t, "", "-n", ns, "label", "configmap", "w-gate", "gate=open")
	eventually(t, 60*time.Second, func() string {
		if s := conditionStatus(e.mustGet(t, waiterGVK, ns, "w"), "Ready"); s != "True" {
			return "Ready=" + s
		}
		return ""
	})
	t.Logf("woken and Ready %s after its child changed; %d reconciles", time.Since(start).Round(time.Millisecond), act.Reconciles()-r0)
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
	cfg, ct := testkit.CountRequests(e.cfg)
	startOperator(t, e, copyTemplates(t), ns, cfg)
	e.waitCRD(t, redisGVK)
	eventually(t, 60*time.Second, func() string {
		out, _ := e.kubectl(t, "", "-n", ns, "get", "resourcequota", "no-pods", "-o", "jsonpath={.status.hard.pods}")
		if out != "0" {
			return "quota not active yet"
		}
		return ""
	})
	e.mustKubectl(t, redisYAML(ns, "q", 1), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string {
		return stalledWith(e.mustGet(t, redisGVK, ns, "q"), "ApplyRejected", rx(`Pod .*q-0.*exceeded quota`))
	})

	// The attempts to apply the Pod, over the 20 s that follow the first.
	podApply := "PATCH /api/v1/namespaces/" + ns + "/pods/q-0"
	attempts := func() []time.Time {
		var at []time.Time
		for _, w := range ct.Writes(0) {
			if w.String() == podApply && !w.At.IsZero() { // answered
				at = append(at, w.At)
			}
		}
		return at
	}
	const window = 20 * time.Second
	first := attempts()[0]
	time.Sleep(time.Until(first.Add(window)))
	var at []time.Time
	for _, a := range attempts() {
		if a.Sub(first) <= window {
			at = append(at, a)
		}
	}
	var gaps []string
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]).Round(10*time.Millisecond).String())
	}
	t.Logf("%d attempts in %s, gaps %v", len(at), window, gaps)
	// 0, 0.2, 0.6, 1.4, 3, 6.2, 12.6 s, and one more for each status
	// write's event: about 7 to 9 attempts; a slow machine makes fewer, a
	// loop would make hundreds.
	if len(at) < 3 || len(at) > 20 {
		t.Errorf("%d attempts to apply the refused Pod in %s, want an exponential backoff (3 to 20), gaps %v", len(at), window, gaps)
	}
	// The longest gap, not the last: an event on the CR or a child (a
	// status write) wakes it once more at any point of the backoff (seen
	// once under load: 6.46 s, then 480 ms).
	var longest time.Duration
	for i := 1; i < len(at); i++ {
		longest = max(longest, at[i].Sub(at[i-1]))
	}
	if longest < 2*time.Second {
		t.Errorf("longest retry gap %s: the backoff did not grow, gaps %v", longest, gaps)
	}

	// The quota goes; a change to the CR wakes it without waiting for the
	// backoff. Right after an attempt, the next retry is at least twice the
	// longest gap so far away (each failure doubles the delay): the Pod must
	// come before.
	n := len(attempts())
	eventually(t, 10*time.Minute, func() string {
		if len(attempts()) == n {
			return fmt.Sprintf("no retry after %d attempts", n)
		}
		return ""
	})
	all := attempts()
	last, gap := all[len(all)-1], time.Duration(0)
	for i := 1; i < len(all); i++ {
		gap = max(gap, all[i].Sub(all[i-1]))
	}
	e.mustKubectl(t, "", "-n", ns, "delete", "resourcequota", "no-pods")
	// The quota admission acts on its own cache of quotas: wait until it
	// lets a Pod in (a server-side dry run goes through admission).
	eventually(t, 60*time.Second, func() string {
		pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: " + ns + "}\nspec: {containers: [{name: c, image: redis}]}\n"
		if out, err := e.kubectl(t, pod, "create", "--dry-run=server", "-f", "-"); err != nil {
			return "a Pod is still refused: " + out
		}
		return ""
	})
	woken := time.Now()
	next := last.Add(2 * gap)
	if time.Until(next) < 5*time.Second {
		t.Fatalf("the quota took %s to go: the next retry (%s away) would wake the CR anyway", woken.Sub(last).Round(time.Millisecond), time.Until(next).Round(time.Millisecond))
	}
	// At v1, the stored version: kubectl prefers v2, whose reads go through
	// the conversion webhook the CRD points at, and a `cueop run` of another
	// test may have pointed it at itself and stopped since.
	e.mustKubectl(t, "", "-n", ns, "annotate", "redisclusters.v1.cache.example.com/q", "poke=1")
	eventually(t, 60*time.Second, func() string {
		if _, err := e.get(t, podGVK, ns, "q-0"); err != nil {
			return "Pod q-0: " + err.Error()
		}
		return ""
	})
	created := time.Now()
	t.Logf("Pod created %s after the poke; the next retry was %s after it", created.Sub(woken).Round(time.Millisecond), next.Sub(woken).Round(time.Millisecond))
	if created.After(next) {
		t.Errorf("Pod created %s after the poke, after the next retry was due (%s): the poke did not wake the CR", created.Sub(woken).Round(time.Millisecond), next.Sub(woken).Round(time.Millisecond))
	}
	eventually(t, 2*time.Minute, func() string { return e.allRedisReady(t, ns, map[string]int{"q": 1}) })
	t.Logf("Ready %s after the poke", time.Since(woken).Round(time.Millisecond))
}

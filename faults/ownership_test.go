package faults_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// podLabelApply is a server-side apply configuration of one Pod label.
func podLabelApply(ns, pod, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    %s: %s\n", pod, ns, key, value)
}

// labelOwners lists the field managers that own metadata.labels.<key> of
// the Pod.
func (e *env) labelOwners(t *testing.T, ns, pod, key string) []string {
	t.Helper()
	var owners []string
	for _, mf := range e.mustGet(t, podGVK, ns, pod).GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue // not shaped like metadata.labels
		}
		if _, ok := fields["f:metadata"]["f:labels"]["f:"+key]; ok {
			owners = append(owners, mf.Manager+"/"+string(mf.Operation))
		}
	}
	return owners
}

// TestForeignFieldManager has other field managers take the `app` label
// cueop sets on its Pods: a forced server-side apply, `kubectl label
// --overwrite` and `kubectl patch`. cueop takes the field back with one
// apply per intrusion and then stays quiet (no fight, no hot loop); a label
// cueop does not render is left to its owner and costs cueop no request.
// The first intrusion lands while 20 RedisClusters converge.
func TestForeignFieldManager(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	cfg, ct := testkit.CountRequests(e.cfg)
	act := startOperator(t, e, copyTemplates(t), ns, cfg)
	e.waitCRD(t, redisGVK)
	names := e.applyRedis(t, ns, "f", 20, 3)
	want := uniform(names, 3)

	eventually(t, 60*time.Second, func() string {
		if _, err := e.get(t, podGVK, ns, "f-0-0"); err != nil {
			return err.Error()
		}
		return ""
	})
	e.mustKubectl(t, podLabelApply(ns, "f-0-0", "app", "hijacked"),
		"apply", "--server-side", "--force-conflicts", "--field-manager=intruder", "-f", "-")
	eventually(t, 120*time.Second, func() string { return e.allRedisReady(t, ns, want) })
	eventually(t, 60*time.Second, func() string { return e.checkChildren(t, ns, redisGVK, want) })
	if got := e.mustGet(t, podGVK, ns, "f-0-0").GetLabels()["app"]; got != "redis" {
		t.Errorf("Pod f-0-0 taken over during convergence: app=%q, want redis", got)
	}
	act.Settled(t, 0, 2*time.Minute)

	for _, tc := range []struct {
		name, pod string
		intrude   func(pod string)
		restored  bool // cueop renders the field and takes it back
	}{
		{"ServerSideApplyForceConflicts", "f-1-0", func(pod string) {
			e.mustKubectl(t, podLabelApply(ns, pod, "app", "hijacked"),
				"apply", "--server-side", "--force-conflicts", "--field-manager=intruder", "-f", "-")
		}, true},
		{"LabelOverwrite", "f-2-0", func(pod string) {
			e.mustKubectl(t, "", "-n", ns, "label", "pod", pod, "app=hijacked", "--overwrite")
		}, true},
		{"MergePatch", "f-3-0", func(pod string) {
			e.mustKubectl(t, "", "-n", ns, "patch", "pod", pod, "--type=merge", "-p", `{"metadata":{"labels":{"app":"hijacked"}}}`)
		}, true},
		{"FieldCueopDoesNotRender", "f-4-0", func(pod string) {
			e.mustKubectl(t, podLabelApply(ns, pod, "team", "payments"),
				"apply", "--server-side", "--field-manager=intruder", "-f", "-")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := strings.TrimSuffix(tc.pod, "-0")
			n0, r0, t0 := ct.WriteCount(), act.ReconcilesOf("name", cr), time.Now()
			tc.intrude(tc.pod)
			if tc.restored {
				eventually(t, 60*time.Second, func() string {
					if got := e.mustGet(t, podGVK, ns, tc.pod).GetLabels()["app"]; got != "redis" {
						return "app=" + got
					}
					return ""
				})
				t.Logf("app label restored %s after the intrusion", time.Since(t0).Round(time.Millisecond))
			} else {
				// The Pod's event reconciles its CR, which finds nothing
				// to apply.
				eventually(t, 60*time.Second, func() string {
					if act.ReconcilesOf("name", cr) == r0 {
						return "no reconcile after the intrusion"
					}
					return ""
				})
			}
			// The CR is converged again (its status back to
			// Reconciling=False) and the operator's caches hold it and
			// the Pod as they are now: the events of its own writes have
			// reached it, and a late one cannot start a write after the
			// settle below (on a loaded machine they come seconds late).
			// A fight or a hot loop would keep the operator busy: it
			// must settle, and what it wrote until then is all the
			// intrusion cost.
			eventually(t, 2*time.Minute, func() string {
				live := e.mustGet(t, redisGVK, ns, cr)
				if why := redisReady(live, 3); why != "" {
					return why
				}
				if tc.restored && conditionStatus(live, "Reconciling") != "False" {
					return cr + ": Reconciling is not False"
				}
				if why := act.Caught(e.c, live); why != "" {
					return why
				}
				return act.Caught(e.c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.pod}})
			})
			act.Settled(t, 0, 2*time.Minute)

			writes := testkit.Strings(ct.Writes(n0))
			podPath := "/api/v1/namespaces/" + ns + "/pods/"
			var applies, status, events, other int
			for _, w := range writes {
				switch {
				case w == "PATCH "+podPath+tc.pod:
					applies++
				case strings.HasSuffix(w, "/status"):
					status++
				case strings.Contains(w, "/events"):
					events++
				default:
					other++ // another child, or anything else
				}
			}
			t.Logf("cueop's writes from the intrusion until it settled (%s): %d %v", time.Since(t0).Round(time.Millisecond), len(writes), writes)
			want := 0
			if tc.restored {
				want = 1
			}
			// One apply and its Event; the status goes Reconciling=True
			// ("updated 1") and back to False: 2 status writes. Nothing
			// else.
			if applies != want || other != 0 || status > 2*want || events > want {
				t.Errorf("%d applies of Pod %s, %d status writes, %d events, %d other writes; want %d, at most %d, at most %d, 0",
					applies, tc.pod, status, events, other, want, 2*want, want)
			}

			pod := e.mustGet(t, podGVK, ns, tc.pod)
			if got := pod.GetLabels()["app"]; got != "redis" {
				t.Errorf("app=%q, want redis", got)
			}
			if owners := e.labelOwners(t, ns, tc.pod, "app"); strings.Join(owners, ",") != "cueop/Apply" {
				t.Errorf("metadata.labels.app owned by %v, want cueop's apply alone", owners)
			}
			if !tc.restored {
				if got := pod.GetLabels()["team"]; got != "payments" {
					t.Errorf("a label cueop does not render was changed: team=%q", got)
				}
				if owners := e.labelOwners(t, ns, tc.pod, "team"); strings.Join(owners, ",") != "intruder/Apply" {
					t.Errorf("metadata.labels.team owned by %v, want the intruder alone", owners)
				}
			}
		})
	}

	// Having lost the field, the intruder cannot take it again without
	// forcing: the API server names cueop as the conflicting manager.
	out, err := e.kubectl(t, podLabelApply(ns, "f-1-0", "app", "hijacked"),
		"apply", "--server-side", "--field-manager=intruder", "-f", "-")
	if err == nil || !strings.Contains(out, `conflict with "cueop"`) {
		t.Errorf("unforced apply of a field cueop owns: err=%v, want a conflict with cueop:\n%s", err, out)
	}
}

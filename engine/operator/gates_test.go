package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The gate tests run the test kinds of testdata/gates: Gated (a wave-0
// claim or LoadBalancer Service, a wave-1 consumer, a Pod recreated behind
// a readyWhen) and Reader (a referenced ConfigMap copied into "out").
const gatesTemplates = "../../testdata/gates/templates"

var (
	gatedGVK  = schema.GroupVersionKind{Group: "gates.example.com", Version: "v1", Kind: "Gated"}
	readerGVK = schema.GroupVersionKind{Group: "gates.example.com", Version: "v1", Kind: "Reader"}
)

// startGates runs an operator on a copy of the gates templates in a fresh
// namespace, with a rollout budget (0: the default), and waits for the
// kinds' CRDs. It returns the namespace and the templates' copy.
func startGates(t *testing.T, maxInFlight int) (string, string, *operator.Operator) {
	t.Helper()
	ns := clustertest.Namespace(t)
	dir := copyTemplatesFrom(t, gatesTemplates)
	op, _ := startPaced(t, dir, ns, maxInFlight)
	waitGatesCRDs(t)
	return ns, dir, op
}

func waitGatesCRDs(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, func() string {
		for _, crd := range []string{"crd/gateds.gates.example.com", "crd/readers.gates.example.com"} {
			if _, err := kubectl(t, "", "wait", "--for=condition=Established", crd, "--timeout=5s"); err != nil {
				return crd + " not established"
			}
		}
		return ""
	})
}

// applyCR applies a CR of the gates kinds with the given spec fields.
func applyCR(t *testing.T, ns, kind, name string, spec ...string) {
	t.Helper()
	mustKubectl(t, crYAML(ns, kind, name, spec...), "apply", "--server-side", "--field-manager=test", "-f", "-")
}

func crYAML(ns, kind, name string, spec ...string) string {
	return fmt.Sprintf("apiVersion: gates.example.com/v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\nspec: {%s}\n",
		kind, name, ns, strings.Join(spec, ", "))
}

// storageClass creates a StorageClass of binding mode mode and no
// provisioner (the claims of an Immediate one never bind, those of a
// WaitForFirstConsumer one wait for a Pod), deleted when the test ends.
func storageClass(t *testing.T, ns, mode string) string {
	t.Helper()
	name := ns + "-" + strings.ToLower(mode)
	mustKubectl(t, fmt.Sprintf("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: %s\n",
		name, mode), "apply", "-f", "-")
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "storageclass", name, "--ignore-not-found") })
	return name
}

// reconcilingMessage is the message of a CR's Reconciling condition.
func reconcilingMessage(cr *unstructured.Unstructured) string {
	if c := conditionOf(cr, "Reconciling"); c != nil {
		return fmt.Sprint(c["reason"], ": ", c["message"])
	}
	return ""
}

// TestWaveGateOpensOnClaimWaitingForFirstConsumer: a wave-0 claim of a
// WaitForFirstConsumer class (no provisioner, as on a bare cluster) stays
// Pending until a Pod uses it; the wave gate counts it ready, so the
// wave-1 consumer is created. A claim of an Immediate class that does not
// bind still holds its wave, and the CR's Ready still follows kstatus.
func TestWaveGateOpensOnClaimWaitingForFirstConsumer(t *testing.T) {
	ns, _, _ := startGates(t, 0)
	c := newClient(t)
	wffc, immediate := storageClass(t, ns, "WaitForFirstConsumer"), storageClass(t, ns, "Immediate")
	applyCR(t, ns, "Gated", "g", "storageClass: "+wffc, "consumer: true")
	applyCR(t, ns, "Gated", "h", "storageClass: "+immediate, "consumer: true")

	eventually(t, time.Minute, func() string {
		if object(t, c, podGVK, ns, "g-app") == nil {
			return "wave-1 Pod g-app not created: " + reconcilingMessage(object(t, c, gatedGVK, ns, "g"))
		}
		return ""
	})
	if phase, _, _ := unstructured.NestedString(object(t, c, pvcGVK, ns, "g-data").Object, "status", "phase"); phase != "Pending" {
		t.Errorf("claim g-data is %q, want Pending (no provisioner: it waits for its consumer)", phase)
	}
	eventually(t, time.Minute, func() string {
		msg := reconcilingMessage(object(t, c, gatedGVK, ns, "h"))
		if !strings.HasPrefix(msg, "WaitingForWave: ") || !strings.Contains(msg, "wave 1 waits for children.data: PersistentVolumeClaim "+ns+"/h-data to be ready") {
			return "h: " + msg
		}
		return ""
	})
	if object(t, c, podGVK, ns, "h-app") != nil {
		t.Error("the wave-1 Pod of a claim of an Immediate class that never binds was created")
	}
	if ready := conditionStatus(object(t, c, gatedGVK, ns, "g"), "Ready"); ready == "True" {
		t.Error("g is Ready while its claim is Pending: the CR's Ready follows kstatus")
	}
}

// TestWaveGateOpensOnLoadBalancerWithoutAddress: a wave-0 LoadBalancer
// Service that no load balancer serves (no address) opens the gate.
func TestWaveGateOpensOnLoadBalancerWithoutAddress(t *testing.T) {
	ns, _, _ := startGates(t, 0)
	c := newClient(t)
	applyCR(t, ns, "Gated", "g", "loadBalancer: true", "consumer: true")
	eventually(t, time.Minute, func() string {
		if object(t, c, podGVK, ns, "g-app") == nil {
			return "wave-1 Pod g-app not created: " + reconcilingMessage(object(t, c, gatedGVK, ns, "g"))
		}
		return ""
	})
	ingress, _, _ := unstructured.NestedSlice(object(t, c, serviceGVK, ns, "g-lb").Object, "status", "loadBalancer", "ingress")
	if len(ingress) != 0 {
		t.Errorf("Service g-lb has a load-balancer address %v: the test wants none", ingress)
	}
}

// TestRecreateGateWaitsForReadyWhen: a Pod whose immutable field changes is
// recreated only once the other children are ready by the template's
// readyWhen, not by kstatus (which calls any ConfigMap ready).
func TestRecreateGateWaitsForReadyWhen(t *testing.T) {
	ns, _, _ := startGates(t, 0)
	c := newClient(t)
	applyCR(t, ns, "Gated", "g", `worker: "a"`)
	uid := string(exists(t, c, podGVK, ns, "g-worker").GetUID())

	applyCR(t, ns, "Gated", "g", `worker: "b"`)
	eventually(t, time.Minute, func() string {
		msg := reconcilingMessage(object(t, c, gatedGVK, ns, "g"))
		if !strings.Contains(msg, "waiting for children to be ready before recreating Pod g-worker") {
			return "g: " + msg
		}
		return ""
	})
	if p := object(t, c, podGVK, ns, "g-worker"); p == nil || string(p.GetUID()) != uid {
		t.Fatal("g-worker was recreated while the ConfigMap g-gate is not ready by its readyWhen")
	}
	mustKubectl(t, "", "-n", ns, "annotate", "configmap", "g-gate", "example.com/ready=yes")
	eventually(t, time.Minute, func() string {
		p := object(t, c, podGVK, ns, "g-worker")
		if p == nil || string(p.GetUID()) == uid {
			return "g-worker not recreated after g-gate turned ready"
		}
		if env := fmt.Sprint(p.Object["spec"].(map[string]any)["containers"]); !strings.Contains(env, "value:b") {
			return "recreated g-worker lacks VALUE=b: " + env
		}
		return ""
	})
}

// readers applies n Readers named prefix-NN, each reading the ConfigMap
// settings (or settings-NN when settings is "").
func readers(t *testing.T, ns, prefix, settings string, n int) {
	t.Helper()
	var docs []string
	for i := range n {
		s := settings
		if s == "" {
			s = fmt.Sprintf("%s-settings-%02d", prefix, i)
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {set: %s}}\ndata: {k: v}\n", s, ns, prefix))
		}
		docs = append(docs, crYAML(ns, "Reader", fmt.Sprintf("%s-%02d", prefix, i), "settings: "+s))
	}
	mustKubectl(t, strings.Join(docs, "---\n"), "apply", "--server-side", "--field-manager=test", "-f", "-")
}

// readersAt counts the Readers of ns whose name starts with prefix, by
// the revision they were last rendered with, and those Ready.
func readersAt(t *testing.T, c client.Client, ns, prefix string) (byRev map[string]int, ready int) {
	t.Helper()
	list := listReaders(t, c, ns)
	byRev = map[string]int{}
	for i := range list {
		cr := &list[i]
		if !strings.HasPrefix(cr.GetName(), prefix) {
			continue
		}
		rev, _, _ := unstructured.NestedString(cr.Object, "status", "revision")
		byRev[rev]++
		if conditionStatus(cr, "Ready") == "True" {
			ready++
		}
	}
	return byRev, ready
}

// labelOut makes every Reader's "out" ConfigMap carry rev: value: a new
// revision.
func labelOut(value string) func(string) string {
	return func(src string) string {
		return strings.Replace(src, `metadata: name: "\(parent.metadata.name)-out"`,
			`metadata: {name: "\(parent.metadata.name)-out", labels: rev: "`+value+`"}`, 1)
	}
}

// TestRolloutNotFrozenByMissingReferences: 50 Readers whose referenced
// ConfigMap is gone (ReferenceNotFound) and 10 that read an existing one;
// a new revision with a budget of 10 moves the 10, as the 50 free the slots
// they are given. Their names sort first, so each slot freed goes to one
// of them: before, they kept every slot and the 10 never moved.
func TestRolloutNotFrozenByMissingReferences(t *testing.T) {
	ns, dir, op := startGates(t, 10)
	c := newClient(t)
	mustKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: %s}\ndata: {k: v}\n", ns), "apply", "-f", "-")
	readers(t, ns, "a", "", 50)
	readers(t, ns, "z", "shared", 10)
	eventually(t, 3*time.Minute, func() string {
		if _, ready := readersAt(t, c, ns, ""); ready != 60 {
			return fmt.Sprintf("%d of 60 Readers ready", ready)
		}
		return ""
	})
	r1, _ := kindProgress(op, "Reader")
	mustKubectl(t, "", "-n", ns, "delete", "configmap", "-l", "set=a")
	eventually(t, 2*time.Minute, func() string {
		if _, ready := readersAt(t, c, ns, "a-"); ready != 0 {
			return fmt.Sprintf("%d of the 50 Readers without their ConfigMap still Ready", ready)
		}
		return ""
	})

	start := time.Now()
	editFile(t, dir+"/reader/reader.cue", labelOut("two"))
	eventually(t, 3*time.Minute, func() string {
		p, _ := kindProgress(op, "Reader")
		if byRev, ready := readersAt(t, c, ns, "z-"); p.Revision == r1.Revision || byRev[p.Revision] != 10 || ready != 10 {
			return fmt.Sprintf("the 10 Readers with their ConfigMap: %v by revision, %d ready; rollout %+v", byRev, ready, p)
		}
		return ""
	})
	t.Logf("the 10 Readers moved in %v, with 50 Readers waiting on a missing reference", time.Since(start).Round(time.Millisecond))
	if byRev, _ := readersAt(t, c, ns, "a-"); byRev[r1.Revision] != 50 {
		t.Errorf("Readers waiting on a reference by revision: %v, want the 50 left on %s", byRev, r1.Revision)
	}
	// A reference that appears brings its Reader into the rollout.
	mustKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a-settings-07, namespace: %s}\ndata: {k: v}\n", ns), "apply", "-f", "-")
	eventually(t, time.Minute, func() string {
		out := object(t, c, configMapGVK, ns, "a-07-out")
		if out == nil || out.GetLabels()["rev"] != "two" {
			return "a-07-out not at the new revision"
		}
		return ""
	})
}

// TestDriftRepairedWhileWaitingAfterRestart: the operator restarts on a
// revision whose CRs never get ready (readyWhen false), with a budget of
// 2: two Readers hold the slots for good and the others wait on a
// revision the new process never served. Deleting the "out" ConfigMap of a
// waiting Reader still gets it back, at once, at the new revision.
func TestDriftRepairedWhileWaitingAfterRestart(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplatesFrom(t, gatesTemplates)
	_, _, stop := startPacedStoppable(t, dir, ns, 0)
	waitGatesCRDs(t)
	c := newClient(t)
	mustKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: %s}\ndata: {k: v}\n", ns), "apply", "-f", "-")
	readers(t, ns, "r", "shared", 6)
	eventually(t, 2*time.Minute, func() string {
		if _, ready := readersAt(t, c, ns, "r-"); ready != 6 {
			return fmt.Sprintf("%d of 6 Readers ready", ready)
		}
		return ""
	})
	stop()

	editFile(t, dir+"/reader/reader.cue", func(s string) string { return labelOut("two")(s) + "readyWhen: out: false\n" })
	op, _ := startPaced(t, dir, ns, 2)
	var waiting *unstructured.Unstructured
	eventually(t, 2*time.Minute, func() string {
		p, _ := kindProgress(op, "Reader")
		if p.InFlight != 2 || p.Waiting != 4 {
			return fmt.Sprintf("rollout %+v, want 2 in flight and 4 waiting", p)
		}
		moved := 0
		for _, cr := range listReaders(t, c, ns) {
			if rev, _, _ := unstructured.NestedString(cr.Object, "status", "revision"); rev != p.Revision {
				waiting = &cr
			} else {
				moved++
			}
		}
		if moved != 2 {
			return fmt.Sprintf("%d Readers at the new revision, want the 2 in flight", moved)
		}
		return ""
	})
	name := waiting.GetName() + "-out"
	old := exists(t, c, configMapGVK, ns, name)
	if old.GetLabels()["rev"] == "two" {
		t.Fatalf("%s, of a waiting Reader, is at the new revision already", name)
	}
	mustKubectl(t, "", "-n", ns, "delete", "configmap", name)
	eventually(t, time.Minute, func() string {
		cm := object(t, c, configMapGVK, ns, name)
		if cm == nil || cm.GetUID() == old.GetUID() {
			return name + " not recreated"
		}
		if cm.GetLabels()["rev"] != "two" {
			return name + " recreated, not at the new revision"
		}
		return ""
	})
}

func listReaders(t *testing.T, c client.Client, ns string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(readerGVK.GroupVersion().WithKind("ReaderList"))
	must(t, c.List(t.Context(), list, client.InNamespace(ns)))
	return list.Items
}

package reconcile

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
)

// typedChildren are a RedisCluster's children as the children cache holds
// them (typed, cueop's managedFields entry): three Pods as the API server
// returns them (spec, status, conditions), the ConfigMap with data and the
// Service with a spec.
func typedChildren(t *testing.T, cr *unstructured.Unstructured) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile("../render/testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	own := func(o metav1.Object, name, id string) {
		o.SetName(name)
		o.SetNamespace("ns")
		o.SetUID(types.UID("uid-" + name))
		o.SetLabels(map[string]string{wellknown.LabelID: id})
		o.SetAnnotations(map[string]string{wellknown.AnnotationAppliedHash: "h-" + id})
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cache.example.com/v1", Kind: "RedisCluster", Name: cr.GetName(), UID: cr.GetUID(), Controller: &yes}})
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: apply.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}})
	}
	var out []runtime.Object
	for i, id := range []string{"pod-0", "pod-1", "pod-2"} {
		p := &corev1.Pod{}
		if err := json.Unmarshal(data, p); err != nil {
			t.Fatal(err)
		}
		own(p, "r-"+string(rune('0'+i)), id)
		if len(p.Spec.Containers) == 0 || len(p.Status.Conditions) == 0 {
			t.Fatalf("testdata Pod without a spec or conditions: %+v", p)
		}
		out = append(out, p)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"redis.conf": "maxmemory 100mb\n"}}
	own(cm, "r-config", "config")
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Port: 6379}}}}
	own(svc, "r", "service")
	return append(out, cm, svc)
}

// listed converts the cached objects as listChildren does: each a struct
// copy of the cache's object (a list without a deep copy), partial when
// keep is not nil.
func listed(t *testing.T, cached []runtime.Object, keep map[string]bool) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, c := range cached {
		gvk := corev1.SchemeGroupVersion.WithKind(reflect.TypeOf(c).Elem().Name())
		var item runtime.Object
		switch c := c.(type) {
		case *corev1.Pod:
			list := &corev1.PodList{}
			if err := meta.SetList(list, []runtime.Object{c}); err != nil {
				t.Fatal(err)
			}
			item = &list.Items[0]
		case *corev1.ConfigMap:
			cp := *c
			item = &cp
		case *corev1.Service:
			cp := *c
			item = &cp
		}
		var u *unstructured.Unstructured
		var err error
		if keep != nil {
			u, err = viewOf(item, gvk, keep)
		} else {
			u, err = toUnstructured(item, gvk)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// TestPartialViewSettlesAsTheWhole: the settled check of a converged CR
// gives the same answer, from the same digest, whether its typed children
// were converted whole or only in what the check reads; the partial
// conversion leaves the cache's objects as they were; a change of what the
// template reads (a Pod's Ready condition) still unsettles the CR, and a
// change of what it does not read (a Pod's image) settles it in both views.
func TestPartialViewSettlesAsTheWhole(t *testing.T) {
	kind := loadKinds(t, "../../templates").Lookup("cache.example.com", "RedisCluster")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(2),
			"finalizers": []any{wellknown.FinalizerRetain}},
		"spec": map[string]any{"replicas": int64(3), "version": "7.2"},
	}}
	cached := typedChildren(t, cr)
	before := make([]runtime.Object, len(cached))
	for i, c := range cached {
		before[i] = c.DeepCopyObject()
	}
	view := func(objs []*unstructured.Unstructured) *run {
		r := testRun(&Reconciler{Applier: &apply.Applier{}}, kind, cr)
		r.v.owned = sortChildren(cr, objs)
		r.v.observed = r.v.owned.templateView(r.manager)
		return r
	}

	// Converged from the whole children, as a reconcile that rendered.
	whole := view(listed(t, cached, nil))
	res, err := render.Render(kind, cr, whole.v.observed, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole.res = res
	status := whole.desiredStatus()
	if status[StatusInputsDigest] == nil || !res.Ready {
		t.Fatalf("not a converged status: ready %v, %v", res.Ready, status)
	}
	cr.Object["status"] = status

	keep := viewKeys(view(nil).kind)
	if want := map[string]bool{"status": true}; !maps.Equal(keep, want) {
		t.Fatalf("viewKeys = %v, want %v (the RedisCluster reads its Pods' status.conditions)", keep, want)
	}
	part := view(listed(t, cached, keep))
	for i, c := range cached {
		if !reflect.DeepEqual(c, before[i]) {
			t.Fatalf("the partial conversion changed the cached %T", c)
		}
	}
	if spec := part.v.owned.all[0].Object["spec"]; reflect.DeepEqual(spec, whole.v.owned.all[0].Object["spec"]) {
		t.Fatalf("the partial view converted the Pod's spec: %v", spec)
	}
	dw, okw := view(listed(t, cached, nil)).inputs().recorded(false)
	dp, okp := part.inputs().recorded(false)
	if !okw || !okp || dw != dp || dw != status[StatusInputsDigest] {
		t.Fatalf("digests: whole %q (%v), partial %q (%v), recorded %v", dw, okw, dp, okp, status[StatusInputsDigest])
	}
	if !part.inputs().settled() {
		t.Fatal("the partial view of unchanged children is not settled")
	}

	for name, tc := range map[string]struct {
		change  func(p *corev1.Pod)
		settled bool
	}{
		"Ready condition False": {func(p *corev1.Pod) {
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodReady {
					p.Status.Conditions[i].Status = corev1.ConditionFalse
				}
			}
		}, false},
		"image changed (not read)": {func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other:1" }, true},
	} {
		changed := make([]runtime.Object, len(cached))
		for i, c := range cached {
			changed[i] = c.DeepCopyObject()
		}
		tc.change(changed[1].(*corev1.Pod))
		w, p := view(listed(t, changed, nil)), view(listed(t, changed, keep))
		if w.inputs().settled() != tc.settled || p.inputs().settled() != tc.settled {
			t.Errorf("%s: settled whole %v, partial %v, want %v", name, w.inputs().settled(), p.inputs().settled(), tc.settled)
		}
	}
}

// TestGatesJudgeWholeChildren: a reconcile's view of a typed child holds
// its metadata and what the template reads (here status), yet the gate of
// a wave judges the child whole. A claim Pending under a
// WaitForFirstConsumer class lets the next wave pass, from its
// spec.storageClassName, which the view does not hold: whole converts it
// from the object listed, on demand, once, and leaves the view as it was.
func TestGatesJudgeWholeChildren(t *testing.T) {
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "Db",
		"metadata": map[string]any{"name": "d", "namespace": "ns", "uid": "uid-d"},
	}}
	yes := true
	class := "wffc"
	claim := &corev1.PersistentVolumeClaim{
		Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: &class},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	claim.SetName("d-data")
	claim.SetNamespace("ns")
	claim.SetUID("uid-claim")
	claim.SetLabels(map[string]string{wellknown.LabelID: "data"})
	claim.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cache.example.com/v1", Kind: "Db", Name: "d", UID: "uid-d", Controller: &yes}})
	gvk := corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")

	listedClaim := *claim // the list's struct copy
	view, err := viewOf(&listedClaim, gvk, map[string]bool{"status": true})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _, _ := unstructured.NestedString(view.Object, "spec", "storageClassName"); sc != "" || view.Object["status"] == nil {
		t.Fatalf("the view is not partial: %v", view.Object)
	}
	if listedClaim.Spec.StorageClassName == nil {
		t.Fatal("viewOf changed the listed object")
	}

	modes := func(_ context.Context, c string) (string, error) {
		if c == class {
			return BindingModeWaitForFirstConsumer, nil
		}
		return "Immediate", nil
	}
	desired := func(kind, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "ns"}}}
	}
	r := testRun(&Reconciler{Applier: &apply.Applier{}, Cluster: clusterFuncs{modes: modes}}, &template.Kind{Waves: true}, cr)
	r.v.owned = sortChildren(cr, []*unstructured.Unstructured{view})
	r.v.observed = r.v.owned.templateView(r.manager)
	r.v.sources = map[*unstructured.Unstructured]runtime.Object{view: &listedClaim}
	r.res = &render.Result{Ready: true, Children: []render.Child{
		{ID: "data", Wave: 0, Object: desired("PersistentVolumeClaim", "d-data")},
		{ID: "server", Wave: 1, Object: desired("ConfigMap", "d-server")},
	}}

	if g := GateWaves(context.Background(), r.res.Children, r.v.live, modes); g.Held == nil {
		t.Fatal("the view alone lets the wave pass: this test no longer shows what whole is for")
	}
	r.held, r.waveWait = gateWaves(context.Background(), r.kind, r.res, r.v, r.writer.modes)
	if r.held != nil {
		t.Fatalf("the gate held %v: %s", r.held, r.waveWait)
	}
	w := r.v.wholeLive(r.res.Children[0])
	if sc, _, _ := unstructured.NestedString(w.Object, "spec", "storageClassName"); w == view || sc != class {
		t.Fatalf("wholeLive did not convert the claim whole: %v", w.Object)
	}
	if r.v.wholeLive(r.res.Children[0]) != w {
		t.Fatal("the claim was converted whole twice")
	}
	if sc, _, _ := unstructured.NestedString(view.Object, "spec", "storageClassName"); sc != "" || r.v.observed["data"] != view {
		t.Fatal("whole changed the view")
	}
	if got := r.v.wholeObserved()["data"]; got != w {
		t.Fatalf("wholeObserved = %v, want the whole claim", got)
	}
}

// kindFromSource loads the kind of one CUE file, src, in a module of its
// own (the project's templates' cue.mod).
func kindFromSource(t *testing.T, group, kind, src string) *template.Kind {
	t.Helper()
	dir := testkit.Dir(t, map[string]string{"cue.mod/module.cue": testkit.Read(t, testkit.Shipped(), "cue.mod/module.cue"), "k/k.cue": src})
	k := loadKinds(t, dir).Lookup(group, kind)
	if k == nil {
		t.Fatalf("no kind %s.%s", kind, group)
	}
	return k
}

// thingSource is a kind whose `ready` is given only when !spec.fast: a
// fast Thing takes Ready by default, kstatus over its Deployment.
const thingSource = `package k

resource: {group: "x.example.com", version: "v1", kind: "Thing"}
#Spec: {fast: *false | bool}
#Status: {avail: int}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}
children: deploy: {
	apiVersion: "apps/v1"
	kind:       "Deployment"
	metadata: name: parent.metadata.name
	spec: {
		replicas: 3
		selector: matchLabels: app: parent.metadata.name
		template: {metadata: labels: app: parent.metadata.name, spec: containers: [{name: "c", image: "nginx"}]}
	}
}
status: avail: *observed.deploy.status.availableReplicas | 0
if !parent.spec.fast {
	ready: status.avail >= 3
}
`

// thingDeployment is the Thing t's Deployment of 3 replicas, all
// available; failed: its rollout past its progress deadline (kstatus
// Failed), with the same replicas.
func thingDeployment(failed bool) *appsv1.Deployment {
	yes := true
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: "True", Reason: "NewReplicaSetAvailable"}
	if failed {
		progressing = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: "False", Reason: "ProgressDeadlineExceeded"}
	}
	d := &appsv1.Deployment{
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "True"}, progressing}},
	}
	d.SetName("t")
	d.SetNamespace("ns")
	d.SetUID("uid-dep")
	d.SetGeneration(1)
	d.SetLabels(map[string]string{wellknown.LabelID: "deploy"})
	d.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "x.example.com/v1", Kind: "Thing", Name: "t", UID: "uid-t", Controller: &yes}})
	return d
}

// thingRun is a reconcile of cr that observed d as a reconcile lists it:
// its partial view (viewKeys), from the list's copy.
func thingRun(t *testing.T, k *template.Kind, cr *unstructured.Unstructured, d *appsv1.Deployment) *run {
	t.Helper()
	r := testRun(&Reconciler{Applier: &apply.Applier{}}, k, cr)
	keys := viewKeys(r.kind)
	if !maps.Equal(keys, map[string]bool{"status": true}) {
		t.Fatalf("viewKeys = %v, want the status alone", keys)
	}
	listed := *d
	view, err := viewOf(&listed, appsv1.SchemeGroupVersion.WithKind("Deployment"), keys)
	if err != nil {
		t.Fatal(err)
	}
	r.v.owned = sortChildren(cr, []*unstructured.Unstructured{view})
	r.v.observed = r.v.owned.templateView(r.manager)
	r.v.sources = map[*unstructured.Unstructured]runtime.Object{view: &listed}
	return r
}

func thing(fast bool) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "t", "namespace": "ns", "uid": "uid-t", "generation": int64(1)},
		"spec":     map[string]any{"fast": fast}}}
}

// TestDefaultReadyJudgesWholeChildren: a template that gives `ready` only
// under a condition has `ready` on its kind, so a reconcile observes its
// children in part (viewKeys); for a CR whose render has no `ready`, Ready
// is the engine's default, kstatus over the children, and it judges them
// whole: an available Deployment of 3 replicas is ready, as from its
// whole object, not in progress as its view without spec.replicas reads.
func TestDefaultReadyJudgesWholeChildren(t *testing.T) {
	k := kindFromSource(t, "x.example.com", "Thing", thingSource)
	for _, fast := range []bool{true, false} {
		r := thingRun(t, k, thing(fast), thingDeployment(false))
		if o, err := r.render(context.Background()); r.note(o) || err != nil || r.res == nil {
			t.Fatalf("fast %v: render: %v, %v", fast, err, r.stalled)
		}
		if !r.res.Ready || r.res.ReadyByDefault != fast {
			t.Errorf("fast %v: Ready %v, by default %v; want Ready, by default %v", fast, r.res.Ready, r.res.ReadyByDefault, fast)
		}
		if fast && render.Reuse(render.Inputs{Kind: k, Observed: r.v.observed}, r.res).Ready {
			t.Error("kstatus over the view without spec.replicas is ready: this test no longer shows what the whole children are for")
		}
	}
}

// TestDefaultReadySettlesOnKstatus: the digest a CR records when its Ready
// was the default covers its children's kstatus, though the kind has
// `ready`: the CR converged with its Deployment available does not settle
// once the Deployment's rollout failed (its available replicas, all the
// template reads, unchanged), and does while it stays available. A CR whose
// render gave `ready` records the digest without kstatus.
func TestDefaultReadySettlesOnKstatus(t *testing.T) {
	k := kindFromSource(t, "x.example.com", "Thing", thingSource)
	for _, fast := range []bool{true, false} {
		cr := thing(fast)
		r := thingRun(t, k, cr, thingDeployment(false))
		if o, err := r.render(context.Background()); r.note(o) || err != nil || r.res == nil {
			t.Fatalf("render: %v, %v", err, r.stalled)
		}
		st := r.desiredStatus()
		recorded, _ := st[StatusInputsDigest].(string)
		if recorded == "" || strings.HasPrefix(recorded, byDefaultPrefix) != fast {
			t.Fatalf("fast %v: recorded digest %q", fast, recorded)
		}
		cr.Object["status"] = st
		if !thingRun(t, k, cr, thingDeployment(false)).inputs().settled() {
			t.Errorf("fast %v: the same children do not settle", fast)
		}
		if got := thingRun(t, k, cr, thingDeployment(true)).inputs().settled(); got == fast {
			t.Errorf("fast %v: with the rollout failed, settled = %v", fast, got)
		}
	}
}

// TestAbsentReadsOfTheDefaultReady: a CR whose render took Ready by default
// (its `ready` under a condition it does not meet) is told of the absent
// reads of its children's readyWhen, as a CR of a kind without `ready`.
func TestAbsentReadsOfTheDefaultReady(t *testing.T) {
	k := kindFromSource(t, "x.example.com", "Thing", thingSource+"readyWhen: deploy: (*observed.deploy.status.bogus | 0) == 1\n")
	r := thingRun(t, k, thing(true), thingDeployment(false))
	if o, err := r.render(context.Background()); r.note(o) || err != nil || r.res == nil {
		t.Fatalf("render: %v, %v", err, r.stalled)
	}
	if reason, msg := r.notReady(); reason != wellknown.ReasonReadsAbsentField || !strings.Contains(msg, "status.bogus") {
		t.Errorf("notReady = %s: %s; want %s naming status.bogus", reason, msg, wellknown.ReasonReadsAbsentField)
	}
}

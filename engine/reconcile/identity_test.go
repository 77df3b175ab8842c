package reconcile

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

var crUID = types.UID("cr-uid")

func testCR() *unstructured.Unstructured {
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("cache.example.com/v1")
	cr.SetKind("RedisCluster")
	cr.SetNamespace("ns")
	cr.SetName("r")
	cr.SetUID(crUID)
	cr.SetGeneration(3)
	return cr
}

// obj is a live child: "apiVersion kind name", with uid, child id, creation
// second and owner ("" means the test CR, "none" no controller).
type obj struct {
	gvkName, uid, id string
	created          int
	owner            string
	applied          string // apiVersion of cueop's apply entry
	deleting         bool   // has a deletionTimestamp
}

func (o obj) live() *unstructured.Unstructured {
	f := strings.Fields(o.gvkName)
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(f[0])
	u.SetKind(f[1])
	u.SetNamespace("ns")
	u.SetName(f[2])
	u.SetUID(types.UID(o.uid))
	u.SetCreationTimestamp(metav1.NewTime(time.Unix(int64(1000+o.created), 0)))
	if o.id != "" {
		u.SetLabels(map[string]string{wellknown.LabelID: o.id})
	}
	owner := crUID
	if o.owner != "" {
		owner = types.UID(o.owner)
	}
	if o.owner != "none" {
		t := true
		u.SetOwnerReferences([]metav1.OwnerReference{{UID: owner, Controller: &t, Kind: "RedisCluster", Name: "r"}})
	}
	if o.deleting {
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
	}
	if o.applied != "" {
		u.Object["metadata"].(map[string]any)["managedFields"] = []any{
			map[string]any{"manager": "other", "operation": "Update", "apiVersion": "v9"},
			map[string]any{"manager": apply.DefaultFieldManager, "operation": "Apply", "apiVersion": o.applied},
		}
	}
	return u
}

func lives(objs ...obj) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.live()
	}
	return out
}

// child is a rendered child: id and "apiVersion kind name".
func child(id, gvkName string) render.Child {
	o := obj{gvkName: gvkName}.live()
	o.SetUID("")
	o.SetOwnerReferences(nil)
	return render.Child{ID: id, Object: o}
}

// describe names an object "apiVersion kind name uid" (or "-" for nil).
func describe(u *unstructured.Unstructured) string {
	if u == nil {
		return "-"
	}
	return u.GetAPIVersion() + " " + u.GetKind() + " " + u.GetName() + " " + string(u.GetUID())
}

func TestSortChildren(t *testing.T) {
	l := sortChildren(testCR(), lives(
		obj{gvkName: "v1 ConfigMap a", uid: "1", id: "config"},
		obj{gvkName: "v1 ConfigMap b", uid: "2", id: "config"},
		obj{gvkName: "v1 Pod p", uid: "3", id: "pod", owner: "someone-else"},
		obj{gvkName: "v1 Pod q", uid: "4", id: "pod", owner: "none"},
		obj{gvkName: "v1 Service s", uid: "5"},
	))
	var all []string
	for _, o := range l.all {
		all = append(all, string(o.GetUID()))
	}
	if want := []string{"1", "2", "5"}; !slices.Equal(all, want) {
		t.Errorf("controlled = %v, want %v (foreign-owned and unowned left out)", all, want)
	}
	if n := len(l.byID["config"]); n != 2 {
		t.Errorf("config has %d objects, want both", n)
	}
	if _, ok := l.byID["pod"]; ok {
		t.Error("a Pod the CR does not control is filed under its id label")
	}
	if n := len(l.byKey[childKey{"", "Service", "s"}]); n != 1 {
		t.Errorf("the Service without id is not filed by identity (%d)", n)
	}
}

func TestMatchLive(t *testing.T) {
	l := sortChildren(testCR(), lives(
		obj{gvkName: "autoscaling/v2 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
		obj{gvkName: "autoscaling/v1 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
		obj{gvkName: "parts.example.com/v2 Widget w", uid: "w", id: "widget"},
		obj{gvkName: "v1 ConfigMap cfg-old", uid: "old", id: "config"},
		obj{gvkName: "v1 ConfigMap cfg-new", uid: "new", id: "config"},
		obj{gvkName: "v1 Service moved", uid: "m", id: "old-id"},
		obj{gvkName: "v1 Secret same-name", uid: "sec", id: "thing"},
	))
	for _, c := range []struct {
		desired, want string
	}{
		{"autoscaling/v1 HorizontalPodAutoscaler h", "autoscaling/v1 HorizontalPodAutoscaler h h"},
		{"autoscaling/v2 HorizontalPodAutoscaler h", "autoscaling/v2 HorizontalPodAutoscaler h h"},
		{"autoscaling/v2beta2 HorizontalPodAutoscaler h", "autoscaling/v2 HorizontalPodAutoscaler h h"}, // listed at other versions only
		{"parts.example.com/v1 Widget w", "parts.example.com/v2 Widget w w"},
		{"v1 ConfigMap cfg-new", "v1 ConfigMap cfg-new new"},
		{"v1 ConfigMap cfg-old", "v1 ConfigMap cfg-old old"},
		{"v1 ConfigMap cfg-third", "-"},
		{"v1 Service moved", "v1 Service moved m"}, // under another id label
		{"v1 ConfigMap same-name", "-"},            // another kind of that name
		{"other.io/v1 Secret same-name", "-"},      // another group
		{"v1 Secret other-name", "-"},              // another name
		{"v1 Secret same-name", "v1 Secret same-name sec"},
	} {
		if got := describe(l.matchLive(child("any", c.desired).Object)); got != c.want {
			t.Errorf("matchLive(%s) = %s, want %s", c.desired, got, c.want)
		}
	}
}

func TestTemplateView(t *testing.T) {
	for _, c := range []struct {
		name string
		objs []obj
		want string
	}{
		{"one", []obj{{gvkName: "v1 ConfigMap a", uid: "1", id: "x"}}, "v1 ConfigMap a 1"},
		{"renamed: the newer", []obj{
			{gvkName: "v1 ConfigMap new", uid: "2", id: "x", created: 5},
			{gvkName: "v1 ConfigMap old", uid: "1", id: "x", created: 1},
		}, "v1 ConfigMap new 2"},
		{"renamed, listed the other way round", []obj{
			{gvkName: "v1 ConfigMap old", uid: "1", id: "x", created: 1},
			{gvkName: "v1 ConfigMap new", uid: "2", id: "x", created: 5},
		}, "v1 ConfigMap new 2"},
		{"same second: by name", []obj{
			{gvkName: "v1 ConfigMap b", uid: "2", id: "x"},
			{gvkName: "v1 ConfigMap a", uid: "1", id: "x"},
		}, "v1 ConfigMap b 2"},
		{"the version last applied", []obj{
			{gvkName: "autoscaling/v2 HorizontalPodAutoscaler h", uid: "h", id: "x", applied: "autoscaling/v1"},
			{gvkName: "autoscaling/v1 HorizontalPodAutoscaler h", uid: "h", id: "x", applied: "autoscaling/v1"},
		}, "autoscaling/v1 HorizontalPodAutoscaler h h"},
		{"the version last applied, not listed", []obj{
			{gvkName: "autoscaling/v2 HorizontalPodAutoscaler h", uid: "h", id: "x", applied: "autoscaling/v1"},
		}, "autoscaling/v2 HorizontalPodAutoscaler h h"},
	} {
		view := sortChildren(testCR(), lives(c.objs...)).templateView(apply.DefaultFieldManager)
		if got := describe(view["x"]); got != c.want {
			t.Errorf("%s: view = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestMisread(t *testing.T) {
	live := lives(
		obj{gvkName: "v1 ConfigMap old", uid: "1", id: "config", created: 1},
		obj{gvkName: "v1 ConfigMap new", uid: "2", id: "config", created: 5},
		obj{gvkName: "autoscaling/v2 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
	)
	l := sortChildren(testCR(), live)
	view := l.templateView(apply.DefaultFieldManager) // config: new; hpa: v2
	for _, c := range []struct {
		name     string
		children []render.Child
		want     bool
		wantView map[string]string
	}{
		{"as seen", []render.Child{child("config", "v1 ConfigMap new")}, false, nil},
		{"the old name rendered", []render.Child{child("config", "v1 ConfigMap old")}, true,
			map[string]string{"config": "v1 ConfigMap old 1", "hpa": "autoscaling/v2 HorizontalPodAutoscaler h h"}},
		{"a name with no object", []render.Child{child("config", "v1 ConfigMap third")}, true,
			map[string]string{"config": "-", "hpa": "autoscaling/v2 HorizontalPodAutoscaler h h"}},
		{"another version rendered", []render.Child{child("hpa", "autoscaling/v1 HorizontalPodAutoscaler h")}, true, nil},
		{"a new child", []render.Child{child("svc", "v1 Service s")}, false, nil},
	} {
		if got := misread(c.children, l, view); got != c.want {
			t.Errorf("%s: misread = %v, want %v", c.name, got, c.want)
		}
		if c.wantView == nil {
			continue
		}
		got := renderedView(c.children, l, view)
		for id, want := range c.wantView {
			if d := describe(got[id]); d != want {
				t.Errorf("%s: renderedView[%s] = %s, want %s", c.name, id, d, want)
			}
		}
	}
}

func TestPruneVictims(t *testing.T) {
	for _, c := range []struct {
		name     string
		live     []obj
		children []render.Child
		want     []string // uids
	}{
		{"nothing to prune", []obj{{gvkName: "v1 ConfigMap a", uid: "1", id: "config"}},
			[]render.Child{child("config", "v1 ConfigMap a")}, nil},
		{"renamed: the old one only, listed first", []obj{
			{gvkName: "v1 ConfigMap old", uid: "1", id: "config"},
			{gvkName: "v1 ConfigMap new", uid: "2", id: "config"},
		}, []render.Child{child("config", "v1 ConfigMap new")}, []string{"1"}},
		{"renamed: the old one only, listed last", []obj{
			{gvkName: "v1 ConfigMap new", uid: "2", id: "config"},
			{gvkName: "v1 ConfigMap old", uid: "1", id: "config"},
		}, []render.Child{child("config", "v1 ConfigMap new")}, []string{"1"}},
		{"renamed to a name not created yet", []obj{{gvkName: "v1 ConfigMap old", uid: "1", id: "config"}},
			[]render.Child{child("config", "v1 ConfigMap new")}, []string{"1"}},
		{"another version rendered", []obj{
			{gvkName: "autoscaling/v2 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
			{gvkName: "autoscaling/v1 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
		}, []render.Child{child("hpa", "autoscaling/v1 HorizontalPodAutoscaler h")}, nil},
		{"listed only at another version", []obj{{gvkName: "parts.example.com/v2 Widget w", uid: "w", id: "widget"}},
			[]render.Child{child("widget", "parts.example.com/v1 Widget w")}, nil},
		{"no longer rendered, at two versions: once", []obj{
			{gvkName: "autoscaling/v2 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
			{gvkName: "autoscaling/v1 HorizontalPodAutoscaler h", uid: "h", id: "hpa"},
		}, nil, []string{"h"}},
		{"kind changed", []obj{{gvkName: "v1 Secret cfg", uid: "1", id: "config"}},
			[]render.Child{child("config", "v1 ConfigMap cfg")}, []string{"1"}},
		{"moved to another id", []obj{{gvkName: "v1 Service s", uid: "1", id: "old"}},
			[]render.Child{child("new", "v1 Service s")}, nil},
		{"no id label: pruned unless rendered", []obj{
			{gvkName: "v1 Service s", uid: "1"},
			{gvkName: "v1 Service t", uid: "2"},
		}, []render.Child{child("svc", "v1 Service s")}, []string{"2"}},
		{"being deleted already: not again", []obj{
			{gvkName: "v1 ConfigMap old", uid: "1", id: "config", deleting: true},
			{gvkName: "v1 ConfigMap new", uid: "2", id: "config"},
		}, nil, []string{"2"}},
		{"foreign-owned: never", []obj{{gvkName: "v1 Service s", uid: "1", id: "svc", owner: "other"}}, nil, nil},
	} {
		var got []string
		for _, o := range pruneVictims(c.children, sortChildren(testCR(), lives(c.live...))) {
			got = append(got, string(o.GetUID()))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: victims %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStatusOnObserveError: a reconcile that could not list the children
// leaves the observed generation and the template's status fields as they
// were, and marks Ready and Reconciling Unknown: never Converged.
func TestStatusOnObserveError(t *testing.T) {
	for _, c := range []struct {
		name    string
		old     map[string]any
		wantGen any
	}{
		{"converged before", map[string]any{
			"observedGeneration": int64(2), "readyReplicas": int64(3),
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": int64(2)},
				map[string]any{"type": "Reconciling", "status": "False", "reason": "Converged", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": int64(2)},
				map[string]any{"type": "Stalled", "status": "False", "reason": "Converged", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": int64(2)},
			},
		}, int64(2)},
		{"never reconciled", nil, nil},
	} {
		cr := testCR()
		if c.old != nil {
			cr.Object["status"] = c.old
		}
		r := testRun(&Reconciler{Applier: &apply.Applier{}}, &template.Kind{Revision: "r1"}, cr)
		r.observeFailed = errors.New("list Pod children: timeout")
		st := r.desiredStatus()
		if got := st["observedGeneration"]; got != c.wantGen {
			t.Errorf("%s: observedGeneration = %v, want %v (generation 3 not observed)", c.name, got, c.wantGen)
		}
		conds := map[string]map[string]any{}
		for _, v := range st["conditions"].([]any) {
			m := v.(map[string]any)
			conds[m["type"].(string)] = m
		}
		for _, typ := range []string{wellknown.ConditionReady, wellknown.ConditionReconciling} {
			if s := conds[typ]; s == nil || s["status"] != "Unknown" || s["reason"] != wellknown.ReasonObserveFailed ||
				!strings.Contains(s["message"].(string), "timeout") {
				t.Errorf("%s: %s = %v, want Unknown, %s, with the error", c.name, typ, s, wellknown.ReasonObserveFailed)
			}
		}
		for _, cond := range conds {
			if cond["reason"] == wellknown.ReasonConverged && cond["type"] != wellknown.ConditionStalled {
				t.Errorf("%s: %v says converged", c.name, cond)
			}
		}
		if c.old != nil && conds[wellknown.ConditionStalled]["status"] != "False" {
			t.Errorf("%s: Stalled = %v, want as it was", c.name, conds[wellknown.ConditionStalled])
		}
		if c.old == nil && st["readyReplicas"] != nil {
			t.Errorf("%s: status fields invented: %v", c.name, st)
		}
	}
}

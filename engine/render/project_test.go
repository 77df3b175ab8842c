package render_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// readsCases are templates that read observed (and parent) in each way the
// analysis knows, with the paths it must find and whether it falls back to
// whole objects.
var readsCases = []struct {
	name, src string
	observed  []string // template.Reads.Observed.Paths()
	parent    []string
	fallback  string // a substring of the fallbacks, "" for none
}{
	{"selector", `status: {p: *observed.pod.status.phase | "none"}`,
		[]string{"pod.status.phase"}, []string{"spec"}, ""},
	{"let and computed id", `
_r: [for i in [0, 1] let o = observed["pod-\(i)"] if o != _|_ if o.status.conditions != _|_ for c in o.status.conditions if c.type == "Ready" {i}]
status: {r: len(_r)}`,
		[]string{"*.status.conditions"}, []string{"spec"}, ""},
	{"for over observed", `status: {n: len(observed), names: [for id, o in observed {o.metadata.name}]}`,
		[]string{"*.metadata.name"}, []string{"spec"}, ""},
	{"quoted and string index", `status: {a: *observed["pod"].metadata.labels["app"] | "", b: *observed.pod."status".phase | ""}`,
		[]string{"pod.metadata.labels.app", "pod.status.phase"}, []string{"spec"}, ""},
	{"list index", `status: {c: *observed.pod.status.conditions[0].type | ""}`,
		[]string{"pod.status.conditions"}, []string{"spec"}, ""},
	{"computed field name", `_f: "phase"
status: {p: *observed.pod.status[_f] | ""}`,
		[]string{"pod.status"}, []string{"spec"}, ""},
	{"whole object", `status: {o: *(observed.pod & {}) | {}}`,
		[]string{"pod"}, []string{"spec"}, "observed.pod: used as a whole"},
	{"whole observed", `_all: observed
status: {n: len([for k, _ in _all {k}])}`,
		[]string{""}, []string{"spec"}, "observed: used as a whole"},
	{"declared constraint", `observed: pod?: status: phase: string
status: {n: len(observed)}`,
		[]string{"pod.status.phase"}, []string{"spec"}, ""},
	{"field alias", `O=observed: [string]: {...}
status: {p: *O.pod.status.phase | ""}`,
		[]string{"pod.status.phase"}, []string{"spec"}, ""},
	{"reference inside the declaration", `observed: [ID=string]: {id: ID}
status: {n: len(observed)}`,
		[]string{""}, []string{"spec"}, "observed: declared with an alias or a reference into itself"},
	{"parent label", `status: {l: *parent.metadata.labels.tier | ""}`,
		nil, []string{"metadata.labels.tier", "spec"}, ""},
}

const readsBase = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int}
parent: {metadata: {...}, spec: #Spec}
observed: [string]: {...}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
`

// TestReadsAndProjection checks the paths each template reads, and that a
// render that converts only those paths of the live objects gives the same
// children, status and ready as one that converts them whole.
func TestReadsAndProjection(t *testing.T) {
	observed := fullPods(t)
	observed["pod"] = observed["pod-0"]
	for _, tc := range readsCases {
		t.Run(tc.name, func(t *testing.T) {
			k := compileKind(t, "app/app.cue", readsBase+tc.src)
			if got := k.Reads.Observed.Paths(); !reflect.DeepEqual(got, tc.observed) {
				t.Errorf("observed paths %q, want %q", got, tc.observed)
			}
			if got := k.Reads.Parent.Paths(); !reflect.DeepEqual(got, tc.parent) {
				t.Errorf("parent paths %q, want %q", got, tc.parent)
			}
			fb := strings.Join(k.Reads.Fallbacks, "\n")
			if (tc.fallback == "") != (fb == "") || !strings.Contains(fb, tc.fallback) {
				t.Errorf("fallbacks %q, want one with %q", fb, tc.fallback)
			}
			sameRender(t, k, app(1), observed)
			sameRender(t, k, app(1), nil)
		})
	}
}

// TestProjectionSameRender renders the project's kinds with full live
// objects, projected and whole.
func TestProjectionSameRender(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	if got, want := k.Reads.Observed.Paths(), []string{"*.status.conditions"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RedisCluster reads %q of observed, want %q", got, want)
	}
	pods := fullPods(t)
	sameRender(t, k, redis(map[string]any{"replicas": int64(3)}), pods)
	delete(pods["pod-1"].Object, "status")
	sameRender(t, k, redis(map[string]any{"replicas": int64(3)}), pods)
	sameRender(t, k, redis(map[string]any{"replicas": int64(2)}), pods)
	s := loadKind(t, "web.example.com", "StaticSite")
	sameRender(t, s, staticSite(), staticSiteObserved())
}

func staticSite() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "web.example.com/v1", "kind": "StaticSite",
		"metadata": map[string]any{"name": "docs", "namespace": "web", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
}

// sameRender renders parent with k as loaded and with k reading whole
// objects, and fails when the results differ.
func sameRender(t *testing.T, k *template.Kind, parent *unstructured.Unstructured, observed map[string]*unstructured.Unstructured) {
	t.Helper()
	whole := *k
	whole.Reads = nil
	got, err := render.Render(k, parent, observed, render.Options{})
	want, werr := render.Render(&whole, parent, observed, render.Options{})
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("projected render error %v, whole %v", err, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("projected render\n%+v\nwhole render\n%+v", got, want)
	}
}

// fullPods are three Pods as the API server returns them, ids pod-0..2.
func fullPods(t testing.TB) map[string]*unstructured.Unstructured {
	data, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range 3 {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		o.SetName("r-" + string(rune('0'+i)))
		out["pod-"+string(rune('0'+i))] = o
	}
	return out
}

// TestReadsAcrossFiles: observed declared in one file of the package and
// read in another (the reference is resolved by name, not in its file).
func TestReadsAcrossFiles(t *testing.T) {
	k := templatetest.Compile(t, map[string]string{
		"app/a.cue": readsBase,
		"app/b.cue": "package app\nstatus: {p: *observed.pod.status.phase | \"\"}\n",
	})
	if got, want := k.Reads.Observed.Paths(), []string{"pod.status.phase"}; !reflect.DeepEqual(got, want) {
		t.Errorf("observed paths %q, want %q", got, want)
	}
	observed := fullPods(t)
	observed["pod"] = observed["pod-0"]
	sameRender(t, k, app(1), observed)
}

package render_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// composeKind reads a ConfigMap named by the spec and a selection of
// ConfigMaps, and puts a migration Job in wave 0 before a ConfigMap in
// wave 1.
const composeKind = `package app
import ("crypto/sha256", "encoding/hex", "encoding/json")
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int, settings: *"settings" | string, kind: *"ConfigMap" | string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}
referenced: {settings: {...}, shared: [...{...}]}
references: {
	settings: {apiVersion: "v1", kind: parent.spec.kind, name: parent.spec.settings}
	shared: {apiVersion: "v1", kind: "ConfigMap", selector: matchLabels: shared: "yes"}
}
waves: {migrate: 0, app: 1}
readyWhen: migrate: observed.migrate.status.succeeded >= 1
children: {
	migrate: {apiVersion: "batch/v1", kind: "Job", metadata: name: "m", spec: template: spec: {restartPolicy: "Never", containers: [{name: "m", image: "x"}]}}
	app: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "a", annotations: sum: hex.Encode(sha256.Sum256(json.Marshal(referenced.settings.data)))}
		data: {n: "\(len(referenced.shared))"}}
}
`

func TestRenderReferencesAndWaves(t *testing.T) {
	k := compileKind(t, "app/app.cue", composeKind)
	if !k.References || !k.Waves {
		t.Fatalf("kind References=%v Waves=%v, want both", k.References, k.Waves)
	}
	refs, err := render.References(k, app(1), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0].ID != "settings" || refs[0].Name != "settings" || refs[1].Selector == nil {
		t.Fatalf("references %+v", refs)
	}
	objs := []*unstructured.Unstructured{
		configMap("ns", "settings", nil, map[string]any{"k": "v1"}),
		configMap("ns", "s1", map[string]string{"shared": "yes"}, nil),
		configMap("ns", "s2", map[string]string{"shared": "yes"}, nil),
		configMap("other", "s3", map[string]string{"shared": "yes"}, nil), // another namespace: never read
	}
	got, missing := render.Resolve(refs, "ns", objs)
	if len(missing) != 0 || len(got["shared"].Objects) != 2 {
		t.Fatalf("resolved %+v, missing %v", got, missing)
	}
	res, err := render.RenderInputs(render.Inputs{Kind: k, Parent: app(1), Referenced: got}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, m := res.Children[0], res.Children[1]
	if a.ID != "app" || a.Wave != 1 || a.Object.GetAnnotations()[wellknown.AnnotationWave] != "1" || m.Wave != 0 {
		t.Errorf("waves: app %d %v, migrate %d", a.Wave, a.Object.GetAnnotations(), m.Wave)
	}
	if n, _, _ := unstructured.NestedString(a.Object.Object, "data", "n"); n != "2" {
		t.Errorf("the selector's list has %s objects, want 2", n)
	}
	if m.ReadyWhen == nil || *m.ReadyWhen || res.Ready {
		t.Errorf("a Job not observed is not ready: readyWhen %v, ready %v", m.ReadyWhen, res.Ready)
	}
	sum1 := a.Object.GetAnnotations()["sum"]

	// The referenced data changes: so does the checksum. The Job, observed
	// running (no status.succeeded), is not ready; once succeeded it is.
	objs[0] = configMap("ns", "settings", nil, map[string]any{"k": "v2"})
	got, _ = render.Resolve(refs, "ns", objs)
	job := m.Object.DeepCopy()
	res, err = render.RenderInputs(render.Inputs{Kind: k, Parent: app(1), Referenced: got, Observed: map[string]*unstructured.Unstructured{"migrate": job}}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Children[0].Object.GetAnnotations()["sum"] == sum1 {
		t.Error("the checksum did not change with the referenced data")
	}
	if *res.Children[1].ReadyWhen {
		t.Error("a Job without status.succeeded is ready")
	}
	_ = unstructured.SetNestedField(job.Object, int64(1), "status", "succeeded")
	res, err = render.RenderInputs(render.Inputs{Kind: k, Parent: app(1), Referenced: got, Observed: map[string]*unstructured.Unstructured{"migrate": job}}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !*res.Children[1].ReadyWhen {
		t.Error("a succeeded Job is not ready by its readyWhen")
	}

	// A reference by name that finds nothing is missing.
	if _, missing := render.Resolve(refs, "ns", objs[1:]); len(missing) != 1 || missing[0].ID != "settings" {
		t.Errorf("missing %v, want references.settings", missing)
	}
}

func TestRenderReferenceOutsideReadableKinds(t *testing.T) {
	k := compileKind(t, "app/app.cue", composeKind)
	p := app(1)
	p.Object["spec"] = map[string]any{"kind": "Secret"}
	_, err := render.References(k, p, render.Options{})
	renderError(t, err, wellknown.ReasonReferenceRefused, "references.settings: kind Secret is not in the readable kinds (ConfigMap)", "app.cue:")
	if _, err := render.References(k, p, render.Options{ReadableKinds: render.MustKindSet("ConfigMap,Secret")}); err != nil {
		t.Fatalf("Secret made readable by the administrator: %v", err)
	}
}

func TestRenderWavesRefused(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"unknown id":  {`waves: nope: 1`, `waves.nope: no child "nope" is rendered`},
		"negative":    {`waves: cm: -1`, `waves.cm`},
		"ref by name": {`references: x: {apiVersion: "v1", kind: "ConfigMap", name: "a", selector: matchLabels: a: "b"}`, `references.x: give exactly one of name and selector`},
		"cycle": {"waves: {cm: 0, late: 1}\nchildren: late: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: name: \"y\"}\nobserved: [string]: {...}\nreadyWhen: cm: observed.late.data.ok == \"yes\"",
			`readyWhen.cm: reads observed.late, a child of wave 1, which is applied only once cm (wave 0) is ready: a cycle`},
		"namespace": {`references: x: {apiVersion: "v1", kind: "ConfigMap", name: "a", namespace: "kube-system"}`, `namespace`},
	} {
		t.Run(name, func(t *testing.T) {
			src := "package app\nresource: {group: \"apps.test.example\", version: \"v1\", kind: \"App\"}\n#Spec: {n?: int}\n" +
				"children: cm: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: name: \"x\"}\n" + tc.src + "\n"
			k, err := tryCompile(t, src)
			if err == nil {
				_, err = render.References(k, app(1), render.Options{})
			}
			if err == nil {
				_, err = render.Render(k, app(1), nil, render.Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWaveGaps(t *testing.T) {
	if err := render.WaveGaps([]render.Child{{Wave: 0}, {Wave: 2}}); err == nil || !strings.Contains(err.Error(), "no child is in wave 1") {
		t.Errorf("gap: %v", err)
	}
	if err := render.WaveGaps([]render.Child{{Wave: 0}, {Wave: 1}}); err != nil {
		t.Error(err)
	}
}

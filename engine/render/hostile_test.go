package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestRenderRefusesForeignFields: a child may not bring its own owners,
// finalizers, server-set fields or status; the refusal names the child, the
// field and its CUE position.
func TestRenderRefusesForeignFields(t *testing.T) {
	const cm = `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"`
	for _, tc := range []struct {
		name, child, want string
	}{
		{"second controller", cm + `, metadata: ownerReferences: [{apiVersion: "v1", kind: "Secret", name: "s", uid: "u", controller: true}]}`,
			"host/host.cue:6:74: children.cm: metadata.ownerReferences refused: the engine sets the one controller owner reference"},
		{"foreign owner", cm + `, metadata: ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "other", uid: "u2"}]}`,
			"children.cm: metadata.ownerReferences refused"},
		{"finalizers", cm + `, metadata: finalizers: ["example.com/keep"]}`, "children.cm: metadata.finalizers refused: a finalizer"},
		{"uid", cm + `, metadata: uid: "1234"}`, "children.cm: metadata.uid refused: the API server sets it"},
		{"resourceVersion", cm + `, metadata: resourceVersion: "7"}`, "children.cm: metadata.resourceVersion refused"},
		{"generation", cm + `, metadata: generation: 3}`, "children.cm: metadata.generation refused"},
		{"managedFields", cm + `, metadata: managedFields: [{manager: "x"}]}`, "children.cm: metadata.managedFields refused"},
		{"creationTimestamp", cm + `, metadata: creationTimestamp: "2026-01-01T00:00:00Z"}`, "children.cm: metadata.creationTimestamp refused"},
		{"deletionTimestamp", cm + `, metadata: deletionTimestamp: "2026-01-01T00:00:00Z"}`, "children.cm: metadata.deletionTimestamp refused"},
		{"status", `pod: {apiVersion: "v1", kind: "Pod", metadata: name: "p", spec: containers: [{name: "c", image: "i"}], status: phase: "Running"}`,
			"children.pod: status refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render.Render(kindFrom(t, tc.child), host("h"), nil, render.Options{})
			renderError(t, err, wellknown.ReasonChildRefused, tc.want)
		})
	}
}

// TestRenderDropsEmptyServerFields: what `kubectl create --dry-run -o yaml`
// writes into every object says nothing and is dropped; the engine's owner
// reference stays the only one.
func TestRenderDropsEmptyServerFields(t *testing.T) {
	k := kindFrom(t, `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x", creationTimestamp: null}, status: {}}`)
	res, err := render.Render(k, host("h"), nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := res.Children[0].Object
	if _, ok := obj.Object["status"]; ok {
		t.Errorf("status kept: %v", obj.Object)
	}
	if _, ok := obj.Object["metadata"].(map[string]any)["creationTimestamp"]; ok {
		t.Errorf("creationTimestamp kept: %v", obj.Object)
	}
	if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "uid-h" {
		t.Errorf("owner references %v, want the engine's only", refs)
	}
}

// TestRenderChecksNames: names, labels and annotations the API server would
// refuse are refused at render, by the rule of the child's kind.
func TestRenderChecksNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name, child, parent, want string
	}{
		{"service starting with a digit", `svc: {apiVersion: "v1", kind: "Service", metadata: name: "1abc"}`, "h",
			`children.svc: metadata.name "1abc" is not a DNS-1035 label, as a Service's name must be`},
		{"service from a long CR name", `svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name}`, long,
			"as a Service's name must be: must be no more than 63 characters"},
		{"statefulset with a dot", `sts: {apiVersion: "apps/v1", kind: "StatefulSet", metadata: name: "a.b"}`, "h",
			"is not a DNS-1123 label, as a StatefulSet's name must be"},
		{"cronjob over 52", `cj: {apiVersion: "batch/v1", kind: "CronJob", metadata: name: parent.metadata.name}`, strings.Repeat("c", 53),
			"must be no more than 52 characters"},
		{"job over 63", `job: {apiVersion: "batch/v1", kind: "Job", metadata: name: parent.metadata.name}`, long,
			"as a Job's name must be"},
		{"configmap upper case", `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "Upper"}`, "h",
			"is not a DNS-1123 subdomain, as a ConfigMap's name must be"},
		{"label value from a long CR name", `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x", labels: app: parent.metadata.name}}`, long,
			"metadata.labels: Invalid value: \"" + long + "\": must be no more than 63 bytes"},
		{"pod template label", `d: {apiVersion: "apps/v1", kind: "Deployment", metadata: name: "d", spec: template: metadata: labels: app: parent.metadata.name}`, long,
			"spec.template.metadata.labels: Invalid value"},
		{"matchLabels", `d: {apiVersion: "apps/v1", kind: "Deployment", metadata: name: "d", spec: selector: matchLabels: app: "-bad-"}`, "h",
			"spec.selector.matchLabels: Invalid value: \"-bad-\""},
		{"service selector", `svc: {apiVersion: "v1", kind: "Service", metadata: name: "s", spec: selector: app: parent.metadata.name}`, long,
			"spec.selector: Invalid value"},
		{"label key", `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x", labels: "a/b/c": "v"}}`, "h",
			"metadata.labels: Invalid value: \"a/b/c\""},
		{"annotation key", `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x", annotations: "bad key": "v"}}`, "h",
			"metadata.annotations: Invalid value: \"bad key\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render.Render(kindFrom(t, tc.child), host(tc.parent), nil, render.Options{})
			renderError(t, err, wellknown.ReasonChildRefused, tc.want, "host/host.cue:")
		})
	}
	// Names the API server takes pass.
	k := kindFrom(t, `svc: {apiVersion: "v1", kind: "Service", metadata: {name: "web-1", labels: app: parent.metadata.name, annotations: "cueop.dev/x": "y"}}
cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "a.b-c"}`)
	if _, err := render.Render(k, host(strings.Repeat("h", 63)), nil, render.Options{}); err != nil {
		t.Errorf("valid names refused: %v", err)
	}
}

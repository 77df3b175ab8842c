package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"cuelang.org/go/cue"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	krecord "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// gaugeTemplate is a kind served at v1 (its hub); the test's CRD serves it
// at v2 too, where spec.replicas is spec.size (webhook.Rename).
const gaugeTemplate = `package gauge

resource: {group: "conv.example.com", version: "v1", kind: "Gauge"}

#Spec: {replicas: *1 | int & >=1, label?: string, refuse?: bool}
#Status: {replicas: int}

` + testkit.ParentObserved + `children: cm: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: parent.metadata.name
	data: replicas: "\(parent.spec.replicas)"
}
status: replicas: parent.spec.replicas
ready: true
`

const gaugeCRDName = "gauges.conv.example.com"

// gaugeCRD serves Gauges at v1 (stored) and v2 with a webhook conversion,
// as crdgen writes it (a Service clientConfig), before the operator points
// it at its endpoint.
const gaugeCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.conv.example.com}
spec:
  group: conv.example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge, listKind: GaugeList}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {namespace: cueop-system, name: cueop-webhook, path: /convert, port: 443}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, properties: {spec: ` + preserveSpec + `, status: ` + preserveSpec + `}}}
  - name: v2
    served: true
    storage: false
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, properties: {spec: ` + preserveSpec + `, status: ` + preserveSpec + `}}}
`

// gaugeConversion is a local conversion endpoint whose converters rename
// replicas (v1) to size (v2) and mark what they convert with the
// revision they were made from; a revision whose #Spec has the field
// brokenConversion does not compile.
func gaugeConversion(t *testing.T) *operator.Conversion {
	t.Helper()
	c, err := operator.LocalConversion()
	if err != nil {
		t.Fatal(err)
	}
	c.New = func(k *template.Kind) (webhook.Converter, error) {
		if k.Spec.LookupPath(cue.ParsePath("brokenConversion")).Exists() {
			return nil, errors.New("versions.v2.toHub: does not compile (test)")
		}
		return webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size", Annotate: k.Revision}, nil
	}
	return c
}

// installGaugeCRD points the Gauge CRD at c's endpoint as the operator
// does (webhook.Endpoint.Point) and installs it for the test.
func installGaugeCRD(t *testing.T, c *operator.Conversion) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal([]byte(gaugeCRD), &crd.Object))
	must(t, c.Endpoint.Point(context.Background(), crd))
	b, err := yaml.Marshal(crd.Object)
	must(t, err)
	installCRD(t, string(b), gaugeCRDName)
}

// gaugeSetup is a namespace, a templates directory with the Gauge kind, its
// conversion endpoint and its CRD pointed at it.
func gaugeSetup(t *testing.T) (ns, dir string, conv *operator.Conversion) {
	t.Helper()
	ns = clustertest.Namespace(t)
	dir = kindsDir(t, map[string]string{"gauge": gaugeTemplate})
	conv = gaugeConversion(t)
	installGaugeCRD(t, conv)
	return ns, dir, conv
}

// startGauges runs an operator on dir in ns serving conv (the test's CRD
// is not replaced by a generated one).
func startGauges(t *testing.T, dir, ns string, conv *operator.Conversion) (*operatortest.Activity, func()) {
	t.Helper()
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs, opts.Conversion = false, conv
	return operatortest.StartObserved(t, clustertest.Config(), opts)
}

func gaugeYAML(version, ns, name, spec string) string {
	return "apiVersion: conv.example.com/" + version + "\nkind: Gauge\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: " + spec + "\n"
}

// getGauge reads a Gauge at version with kubectl, as a user would.
func getGauge(t *testing.T, version, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	return getAt(t, "gauges."+version+".conv.example.com", ns, name)
}

func mustGetGauge(t *testing.T, version, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := getGauge(t, version, ns, name)
	must(t, err)
	return u
}

// gaugeHas says how the Gauge read at version differs from the spec
// fields want (and a status.replicas of want's replicas or size), or "".
func gaugeHas(t *testing.T, version, ns, name string, want map[string]any) string {
	u, err := getGauge(t, version, ns, name)
	if err != nil {
		return err.Error()
	}
	spec, _ := u.Object["spec"].(map[string]any)
	if len(spec) != len(want) {
		return version + " spec = " + jsonText(spec)
	}
	for k, v := range want {
		if jsonText(spec[k]) != jsonText(v) {
			return version + " spec = " + jsonText(spec)
		}
	}
	if u.GetAPIVersion() != "conv.example.com/"+version {
		return "apiVersion " + u.GetAPIVersion()
	}
	return ""
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestConversionWebhookRoundTrip: a Gauge created at v1 reads at v2 with
// every field (spec renamed, metadata and status as they are), one
// created at v2 reads at v1 and converges, an edit at v2 shows at v1, and
// an object that does not convert fails the read with the API server's
// error naming the object and the reason.
func TestConversionWebhookRoundTrip(t *testing.T) {
	ns, dir, conv := gaugeSetup(t)
	startGauges(t, dir, ns, conv)
	converted := func(result string) float64 {
		return metricSum(t, "cueop_conversion_objects_total", "kind", "Gauge.conv.example.com", "result", result)
	}
	okBefore, failedBefore := converted("ok"), converted("failed")
	mustKubectl(t, gaugeYAML("v1", ns, "one", "{replicas: 3, label: a}"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return gaugeStatus(t, "v1", ns, "one", 3) })
	eventually(t, 30*time.Second, func() string {
		return gaugeHas(t, "v2", ns, "one", map[string]any{"size": 3, "label": "a"}) + gaugeStatus(t, "v2", ns, "one", 3)
	})
	v2 := mustGetGauge(t, "v2", ns, "one")
	v1 := mustGetGauge(t, "v1", ns, "one")
	if v2.GetUID() != v1.GetUID() || v2.GetResourceVersion() != v1.GetResourceVersion() || v2.GetGeneration() != v1.GetGeneration() {
		t.Errorf("metadata changed by conversion: v1 %v, v2 %v", v1.Object["metadata"], v2.Object["metadata"])
	}
	// The webhook leaves managedFields out of what it answers; the API
	// server restores them with the rest of the metadata.
	managers := func(version string) string {
		return mustKubectl(t, "", "get", "gauges."+version+".conv.example.com", "-n", ns, "one", "--show-managed-fields",
			"-o", "jsonpath={.metadata.managedFields[*].manager} {.metadata.managedFields[*].time}")
	}
	if m1, m2 := managers("v1"), managers("v2"); m1 != m2 || !strings.Contains(m1, "kubectl") {
		t.Errorf("managedFields read at v1: %q, at v2: %q; want the same, kubectl's among them", m1, m2)
	}

	mustKubectl(t, gaugeYAML("v2", ns, "two", "{size: 5, label: b}"), "create", "-f", "-")
	eventually(t, 60*time.Second, func() string {
		return gaugeHas(t, "v1", ns, "two", map[string]any{"replicas": 5, "label": "b"}) + gaugeStatus(t, "v1", ns, "two", 5)
	})
	mustKubectl(t, "", "patch", "gauges.v2.conv.example.com", "-n", ns, "one", "--type=merge", "-p", `{"spec":{"size":4}}`)
	eventually(t, 60*time.Second, func() string {
		return gaugeHas(t, "v1", ns, "one", map[string]any{"replicas": 4, "label": "a"}) + gaugeStatus(t, "v1", ns, "one", 4)
	})

	mustKubectl(t, gaugeYAML("v1", ns, "bad", "{replicas: 1, refuse: true}"), "apply", "-f", "-")
	_, err := getGauge(t, "v2", ns, "bad")
	want := "Gauge " + ns + "/bad: conversion from v1 to v2: spec.refuse: this object refuses to convert"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("read at v2 of an object that does not convert: %v, want an error with %q", err, want)
	}
	// The webhook's metrics count the Gauges it converted and those of the
	// review it refused.
	if got := converted("ok") - okBefore; got < 2 {
		t.Errorf("cueop_conversion_objects_total{kind=Gauge,result=ok} grew by %v, want at least 2 (one and two read at v2)", got)
	}
	if got := converted("failed") - failedBefore; got < 1 {
		t.Errorf("cueop_conversion_objects_total{kind=Gauge,result=failed} grew by %v, want at least 1 (bad read at v2)", got)
	}
	if got := metricSum(t, "cueop_conversion_review_seconds", "result", "failed"); got < 1 {
		t.Errorf("cueop_conversion_review_seconds{result=failed} counts %v reviews, want at least 1", got)
	}
}

// gaugeStatus says why the Gauge read at version has not status.replicas
// want, or "".
func gaugeStatus(t *testing.T, version, ns, name string, want int64) string {
	u, err := getGauge(t, version, ns, name)
	if err != nil {
		return err.Error()
	}
	got, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	if got != want {
		return version + " status = " + jsonText(u.Object["status"])
	}
	return ""
}

// TestConversionWebhookDown: with the operator stopped, a read at v2 (not
// the storage version) fails with the API server's error and a read at v1
// works; started again, reads at v2 work and nothing is lost.
func TestConversionWebhookDown(t *testing.T) {
	ns, dir, conv := gaugeSetup(t)
	_, stop := startGauges(t, dir, ns, conv)
	mustKubectl(t, gaugeYAML("v1", ns, "one", "{replicas: 2, label: kept}"), "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string { return gaugeHas(t, "v2", ns, "one", map[string]any{"size": 2, "label": "kept"}) })
	stop()

	eventually(t, 30*time.Second, func() string {
		_, err := getGauge(t, "v2", ns, "one")
		if err == nil || !strings.Contains(err.Error(), "conversion webhook for conv.example.com/v1, Kind=Gauge failed") {
			return "read at v2 with the webhook down: " + errText(err)
		}
		return ""
	})
	if msg := gaugeHas(t, "v1", ns, "one", map[string]any{"replicas": 2, "label": "kept"}); msg != "" {
		t.Errorf("read at v1 with the webhook down: %s", msg)
	}

	startGauges(t, dir, ns, conv)
	eventually(t, 30*time.Second, func() string { return gaugeHas(t, "v2", ns, "one", map[string]any{"size": 2, "label": "kept"}) })
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestConversionOnFollower: a replica that is not the leader answers
// conversions with the converters of the templates it loaded itself.
func TestConversionOnFollower(t *testing.T) {
	ns, dir, leaderConv := gaugeSetup(t)
	c := newClient(t)
	startLeaderWith(t, operator.Options{Templates: dir, Namespace: ns, Conversion: leaderConv})
	eventually(t, 60*time.Second, func() string {
		if holder(t, c, ns) == "" {
			return "no leader yet"
		}
		return ""
	})
	leader := holder(t, c, ns)
	followerConv := gaugeConversion(t)
	startLeaderWith(t, operator.Options{Templates: dir, Namespace: ns, Conversion: followerConv})
	installGaugeCRD(t, followerConv) // the API server now asks the follower only

	mustKubectl(t, gaugeYAML("v1", ns, "one", "{replicas: 6}"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return gaugeHas(t, "v2", ns, "one", map[string]any{"size": 6}) })
	if h := holder(t, c, ns); h != leader {
		t.Fatalf("leader changed from %s to %s: the follower may have answered as the leader", leader, h)
	}
}

// TestConversionRefusedKeepsLastGood: a revision whose conversion does not
// compile is refused at reload; the last good revision keeps converting.
func TestConversionRefusedKeepsLastGood(t *testing.T) {
	ns, dir, conv := gaugeSetup(t)
	a, _ := startGauges(t, dir, ns, conv)
	mustKubectl(t, gaugeYAML("v1", ns, "one", "{replicas: 2}"), "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string { return gaugeHas(t, "v2", ns, "one", map[string]any{"size": 2}) })
	good := mustGetGauge(t, "v2", ns, "one").GetAnnotations()[webhook.RenameAnnotation]
	if good == "" {
		t.Fatal("the converted object does not name the revision that converted it")
	}

	broken := strings.Replace(gaugeTemplate, "refuse?: bool}", "refuse?: bool, brokenConversion: *true | bool}", 1)
	testkit.Write(t, dir, map[string]string{"gauge/gauge.cue": broken})
	a.WaitLog(t, 60*time.Second, "versions.v2.toHub: does not compile (test)")
	if got := mustGetGauge(t, "v2", ns, "one").GetAnnotations()[webhook.RenameAnnotation]; got != good {
		t.Errorf("converted by revision %q after the refused reload, want the last good %q", got, good)
	}
}

// TestConversionReportWritesOnlyTheReviewedCR: the Convertible condition
// of a refusal is written only to the CR the review held, at the version
// the review saw: a report of a Memo deleted and created again under its
// name meanwhile, or of a Memo changed since, writes nothing (the next
// conversion of the CR reports it again).
func TestConversionReportWritesOnlyTheReviewedCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"memo": wideTemplate})
	clustertest.DeleteCRDsAtEnd(t, wideCRD)
	operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, 60*time.Second, wideCRD)

	c, err := client.New(clustertest.Config(), client.Options{})
	must(t, err)
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	must(t, err)
	b := krecord.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	t.Cleanup(b.Shutdown)
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "test"})

	memo := "apiVersion: annot.example.com/v1\nkind: Memo\nmetadata: {name: m, namespace: " + ns + "}\nspec: {size: 1}\n"
	mustKubectl(t, memo, "create", "-f", "-")
	old := mustGetAt(t, "memos.v1.annot.example.com", ns, "m")
	mustKubectl(t, "", "delete", "memos.v1.annot.example.com", "-n", ns, "m", "--wait")
	mustKubectl(t, memo, "create", "-f", "-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := operator.WriteConversionReport(ctx, c, rec, old, "refused"); err == nil {
		t.Errorf("report of the Memo deleted since: written, want refused")
	}
	cur := mustGetAt(t, "memos.v1.annot.example.com", ns, "m")
	if cond := conditionOf(cur, wellknown.ConditionConvertible); cond != nil {
		t.Errorf("Memo created again under the name of one reported: condition %v, want none", cond)
	}

	mustKubectl(t, "", "patch", "memos.v1.annot.example.com", "-n", ns, "m", "--type=merge", "-p", `{"spec":{"size":2}}`)
	if err := operator.WriteConversionReport(ctx, c, rec, cur, "refused"); err == nil {
		t.Errorf("report of the Memo changed since: written, want refused")
	}
	// The operator writes the Memo's status meanwhile: a report of the
	// Memo as read is retried on a conflict, as the next conversion would.
	eventually(t, 30*time.Second, func() string {
		err := operator.WriteConversionReport(ctx, c, rec, mustGetAt(t, "memos.v1.annot.example.com", ns, "m"), "refused")
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("report of the Memo as it is: %v", err)
		}
		if err != nil {
			return err.Error()
		}
		return ""
	})
	if cond := conditionOf(mustGetAt(t, "memos.v1.annot.example.com", ns, "m"), wellknown.ConditionConvertible); cond == nil || cond["message"] != "refused" {
		t.Errorf("Memo reported as it is: condition %v, want the refusal", cond)
	}
}

package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// wideTemplate is a kind served at v1 (its hub, stored) and v2, which has
// no field text: a Memo's text rides to v2 in its annotation.
const wideTemplate = `package memo

resource: {group: "annot.example.com", version: "v1", kind: "Memo"}

#Spec: {size: int, title?: string, text?: string}

` + testkit.ParentObserved + `children: cm: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: parent.metadata.name
	data: size: "\(parent.spec.size)"
}
ready: true
versions: v2: {
	#Spec: {size: int, title?: string}
	toHub: {in: spec: _, out: spec: {size: in.spec.size, if in.spec.title != _|_ {title: in.spec.title}}}
	fromHub: {in: spec: _, out: spec: {size: in.spec.size, if in.spec.title != _|_ {title: in.spec.title}}}
}
`

const wideCRD = "memos.annot.example.com"

// startMemos runs an operator serving ns with the Memo kind (v1 stored, v2
// without its text) and its own conversion endpoint, until the test ends;
// the CRD is deleted after the operator stopped. It returns the endpoint.
func startMemos(t *testing.T, ns string) *operator.Conversion {
	t.Helper()
	return startConverting(t, ns, "memo", wideTemplate, wideCRD)
}

// startConverting runs an operator serving ns with the one kind pkg of
// src, whose CRD is crd, and its own conversion endpoint, until the test
// ends, and waits until the CRD is established; the CRD is deleted after
// the operator stopped. It returns the endpoint.
func startConverting(t *testing.T, ns, pkg, src, crd string) *operator.Conversion {
	t.Helper()
	dir := kindsDir(t, map[string]string{pkg: src})
	clustertest.DeleteCRDsAtEnd(t, crd)
	conv, err := operator.LocalConversion()
	must(t, err)
	opts := operatortest.Options(dir, ns)
	opts.Conversion = conv
	operatortest.StartObserved(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 60*time.Second, crd)
	return conv
}

// TestConversionAnnotationTooLarge: a Memo whose text (a field v2 cannot
// hold) is 300 KiB does not convert whole to v2: it reads and lists at v2
// without the text, marked, and a write of it at v2 is refused (its text
// kept at v1), while another Memo reads at v2; the Memo gets the condition
// Convertible False, reason AnnotationTooLarge, and a Warning Event of
// that reason. Its text shortened, it reads at v2 again and the condition
// is removed. A Memo with a title (a field both versions hold) and a text
// of 150 KiB each converts: the annotation carries the text alone, not the
// whole spec.
func TestConversionAnnotationTooLarge(t *testing.T) {
	ns := clustertest.Namespace(t)
	startMemos(t, ns)

	memo := func(name string, title, text int) string {
		return "apiVersion: annot.example.com/v1\nkind: Memo\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {size: 1, title: t" +
			strings.Repeat("t", title) + ", text: x" + strings.Repeat("x", text) + "}\n"
	}
	// Created, not applied: kubectl apply's own annotation would carry the
	// whole object.
	mustKubectl(t, memo("small", 1, 1)+"---\n"+memo("wide", 150<<10, 150<<10)+"---\n"+memo("big", 1, 300<<10), "create", "-f", "-")
	for _, name := range []string{"small", "wide"} {
		eventually(t, 30*time.Second, func() string {
			u, err := getAt(t, "memos.v2.annot.example.com", ns, name)
			if err != nil {
				return err.Error()
			}
			if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 1 {
				return name + " at v2: " + jsonText(u.Object["spec"])
			}
			return ""
		})
	}

	// Read and listed at v2 without the field, marked; written at v2,
	// refused: one CR fails no other's reads and watches at v2.
	read, err := getAt(t, "memos.v2.annot.example.com", ns, "big")
	must(t, err)
	if _, has := read.Object["spec"].(map[string]any)["text"]; has || read.GetAnnotations()["cueop.dev/conversion-incomplete.v1"] != "1 fields" {
		t.Errorf("big read at v2: spec %.200v, annotations %.200v; want it without spec.text, marked", read.Object["spec"], read.GetAnnotations())
	}
	if out := mustKubectl(t, "", "get", "memos.v2.annot.example.com", "-n", ns, "-o", "name"); !strings.Contains(out, "/big") || !strings.Contains(out, "/small") {
		t.Errorf("list at v2: %s, want every Memo", out)
	}
	out, err := kubectl(t, "", "label", "memos.v2.annot.example.com", "-n", ns, "big", "seen=yes")
	if err == nil || !strings.Contains(out, "read at v2 without fields v2 cannot hold") || !strings.Contains(out, "write it at v1") {
		t.Errorf("a write of big at v2: %v: %s, want it refused", err, out)
	}
	if text, _, _ := unstructured.NestedString(mustGetAt(t, "memos.v1.annot.example.com", ns, "big").Object, "spec", "text"); len(text) != 300<<10+1 {
		t.Errorf("big's spec.text at v1 is %d bytes, want %d", len(text), 300<<10+1)
	}

	eventually(t, 30*time.Second, func() string {
		u := mustGetAt(t, "memos.v1.annot.example.com", ns, "big")
		c := conditionOf(u, wellknown.ConditionConvertible)
		if c == nil || c["status"] != "False" || c["reason"] != wellknown.ReasonAnnotationTooLarge || !strings.Contains(c["message"].(string), "spec.text") {
			return "big's Convertible condition: " + jsonText(c)
		}
		out, err := kubectl(t, "", "get", "events", "-n", ns, "--field-selector", "involvedObject.name=big,reason="+wellknown.ReasonAnnotationTooLarge, "-o", "name")
		if err != nil || strings.TrimSpace(out) == "" {
			return "no AnnotationTooLarge Event on big: " + out
		}
		return ""
	})

	mustKubectl(t, "", "patch", "memos.v1.annot.example.com", "-n", ns, "big", "--type=merge", "-p", `{"spec":{"text":"short"}}`)
	eventually(t, 30*time.Second, func() string {
		if _, err := getAt(t, "memos.v2.annot.example.com", ns, "big"); err != nil {
			return err.Error()
		}
		if c := conditionOf(mustGetAt(t, "memos.v1.annot.example.com", ns, "big"), wellknown.ConditionConvertible); c != nil {
			return "condition kept once big converts: " + jsonText(c)
		}
		return ""
	})
}

func mustGetAt(t *testing.T, resource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := getAt(t, resource, ns, name)
	must(t, err)
	return u
}

// TestUnconvertibleCRStallsNoOtherWatch: while a tenant's Memo cannot be
// converted whole to v2 (a 300 KiB field v2 cannot hold), a watch at v2 in
// another tenant's namespace still gets that tenant's changes (before: no
// event at all, as the API server's watch cache of v2 failed on it).
func TestUnconvertibleCRStallsNoOtherWatch(t *testing.T) {
	ns, other := clustertest.Namespace(t), clustertest.Namespace(t)
	startMemos(t, ns)
	memo := func(ns, name string, text int) string {
		return "apiVersion: annot.example.com/v1\nkind: Memo\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {size: 1, text: x" + strings.Repeat("x", text) + "}\n"
	}
	mustKubectl(t, memo(other, "theirs", 1), "create", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		if _, err := getAt(t, "memos.v2.annot.example.com", other, "theirs"); err != nil {
			return err.Error()
		}
		return ""
	})
	dc, err := dynamic.NewForConfig(clustertest.Config())
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := dc.Resource(schema.GroupVersionResource{Group: "annot.example.com", Version: "v2", Resource: "memos"}).Namespace(other).Watch(ctx, metav1.ListOptions{})
	must(t, err)
	defer w.Stop()

	mustKubectl(t, memo(ns, "big", 300<<10), "create", "-f", "-")
	eventually(t, 30*time.Second, func() string { // the webhook converted it, and reported it
		if c := conditionOf(mustGetAt(t, "memos.v1.annot.example.com", ns, "big"), wellknown.ConditionConvertible); c == nil || c["status"] != "False" {
			return "big's Convertible condition: " + jsonText(c)
		}
		return ""
	})
	mustKubectl(t, "", "patch", "memos.v1.annot.example.com", "-n", other, "theirs", "--type=merge", "-p", `{"spec":{"size":2}}`)
	for ev := range w.ResultChan() {
		if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Modified && u.GetName() == "theirs" {
			if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size == 2 {
				return
			}
		}
	}
	t.Fatalf("the watch at v2 in %s got no change of theirs while big cannot convert whole: %v", other, ctx.Err())
}

// dialTemplate is a kind served at v1 (its hub) and v2, where v2 has a
// field, tier, that v1 lacks.
const dialTemplate = `package dial

resource: {group: "unrendered.test.example", version: "v1", kind: "Dial"}

#Spec: {replicas: *1 | int & >=1 & <=5}

` + testkit.ParentObserved + `children: cm: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: parent.metadata.name
	data: replicas: "\(parent.spec.replicas)"
}
ready: true

versions: v2: {
	#Spec: {size: *1 | int & >=1 & <=5, tier?: "gold" | "silver"}
	toHub: {in: spec: _, out: spec: replicas: in.spec.size}
	fromHub: {in: spec: _, out: spec: size: in.spec.replicas}
}
`

// TestSpokeOnlyFieldReportedOnCR: a Dial written at v2 with tier, which
// the hub v1 lacks, keeps it (it reads back at v2) and gets a Warning
// Event SpecNotRendered naming spec.tier, as the template never sees it.
func TestSpokeOnlyFieldReportedOnCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"dial": dialTemplate})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "dials.unrendered.test.example", "--ignore-not-found") })
	_, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	defer stop()
	clustertest.WaitEstablished(t, 60*time.Second, "dials.unrendered.test.example")
	eventually(t, time.Minute, func() string { // the CRD points at the conversion endpoint once it is served
		if _, err := kubectl(t, "apiVersion: unrendered.test.example/v2\nkind: Dial\nmetadata: {name: d, namespace: "+ns+"}\nspec: {size: 2, tier: gold}\n",
			"apply", "--server-side", "--field-manager=test", "-f", "-"); err != nil {
			return err.Error()
		}
		return ""
	})
	eventually(t, time.Minute, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=d,reason=SpecNotRendered", "-o", "jsonpath={.items[*].type} {.items[*].message}")
		if err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(out, "Warning spec.tier (v2): kept by the annotation cueop.dev/conversion.v2 and read back at that version") || !strings.Contains(out, "the hub version v1") {
			return "events: " + out
		}
		return ""
	})
	if out := mustKubectl(t, "", "-n", ns, "get", "dials.v2.unrendered.test.example/d", "-o", "jsonpath={.spec.tier}"); out != "gold" {
		t.Errorf("spec.tier at v2 = %q, want it kept", out)
	}
	mustKubectl(t, "", "-n", ns, "delete", "dial/d", "--timeout=60s")
}

package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// waiterTemplate is a kind with a ConfigMap child; %s is its name.
const waiterTemplate = `package %[1]s

resource: {group: "crdwait.example.com", version: "v1", kind: "%[2]s"}

#Spec: {note: *"hello" | string}
#Status: {copied: bool}

parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}

children: note: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: parent.metadata.name + "-%[1]s"
	data: note: parent.spec.note
}
status: copied: observed.note != _|_
ready: status.copied
`

// TestKindWaitsForItsCRD: with --install-crds=false and the CRD of one
// kind (Aardvark, served first) not applied, the other kind (Zebra) is
// served at once, not after the first one's wait; the Aardvark kind says
// that it waits, and is served once its CRD is applied: its CR converges.
func TestKindWaitsForItsCRD(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{
		"aardvark": strings.NewReplacer("%[1]s", "aardvark", "%[2]s", "Aardvark").Replace(waiterTemplate),
		"zebra":    strings.NewReplacer("%[1]s", "zebra", "%[2]s", "Zebra").Replace(waiterTemplate),
	})
	crds := waiterCRDs(t, dir)
	installCRD(t, crds["Zebra"], "zebras.crdwait.example.com")

	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	act, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	act.WaitLog(t, 60*time.Second, "serving kind", "kind", "Zebra")
	if served := act.Logged("serving kind", "kind", "Aardvark"); len(served) > 0 {
		t.Fatalf("Aardvark served without its CRD: %+v", served)
	}
	if waits := act.Logged("kind waits for its CRD", "kind", "Aardvark"); len(waits) != 1 {
		t.Fatalf("%d lines say that Aardvark waits for its CRD, want 1", len(waits))
	}
	mustKubectl(t, "apiVersion: crdwait.example.com/v1\nkind: Zebra\nmetadata: {name: z, namespace: "+ns+"}\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "zebras.crdwait.example.com/z", "--timeout=60s")

	installCRD(t, crds["Aardvark"], "aardvarks.crdwait.example.com")
	act.WaitLog(t, 60*time.Second, "serving kind", "kind", "Aardvark")
	mustKubectl(t, "apiVersion: crdwait.example.com/v1\nkind: Aardvark\nmetadata: {name: a, namespace: "+ns+"}\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "aardvarks.crdwait.example.com/a", "--timeout=60s")
	if got := mustKubectl(t, "", "-n", ns, "get", "configmap", "a-aardvark", "-o", "jsonpath={.data.note}"); got != "hello" {
		t.Errorf("ConfigMap a-aardvark note = %q, want hello", got)
	}
}

// waiterCRDs are the CRDs of the kinds of dir as YAML, by kind.
func waiterCRDs(t *testing.T, dir string) map[string]string {
	t.Helper()
	set, err := template.Load(dir)
	must(t, err)
	out := map[string]string{}
	for _, k := range set.Kinds {
		crd, err := crdgen.Generate(k)
		must(t, err)
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		b, err := yaml.Marshal(crd)
		must(t, err)
		out[k.Resource.Kind] = string(b)
	}
	return out
}

// TestWaitingKindBesideBrokenKind: with --install-crds=false, a kind whose
// CRD is not applied and a kind whose template does not load: the operator
// keeps running (a waiting kind is a kind to serve), the first kind waits
// while its CRD serves another version than the template's, and is served
// once the CRD is applied again at the template's version.
func TestWaitingKindBesideBrokenKind(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{
		"aardvark": strings.NewReplacer("%[1]s", "aardvark", "%[2]s", "Aardvark").Replace(waiterTemplate),
	})
	crd := waiterCRDs(t, dir)["Aardvark"]
	testkit.WriteKind(t, dir, "broken", "package broken\n\nresource: {\n")

	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	act, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	act.WaitLog(t, 60*time.Second, "kind waits for its CRD", "kind", "Aardvark")

	other := strings.Replace(crd, "name: v1\n", "name: v1beta1\n", 1)
	if other == crd {
		t.Fatalf("no version v1 in the generated CRD:\n%s", crd)
	}
	installCRD(t, other, "aardvarks.crdwait.example.com")
	mustKubectl(t, "apiVersion: crdwait.example.com/v1beta1\nkind: Aardvark\nmetadata: {name: early, namespace: "+ns+"}\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "delete", "aardvarks.v1beta1.crdwait.example.com", "early", "--wait")
	if served := act.Logged("serving kind", "kind", "Aardvark"); len(served) > 0 {
		t.Fatalf("Aardvark served while its CRD serves v1beta1 only: %+v", served)
	}
	mustKubectl(t, "", "delete", "crd/aardvarks.crdwait.example.com", "--wait", "--timeout=60s")
	installCRD(t, crd, "aardvarks.crdwait.example.com")
	act.WaitLog(t, 60*time.Second, "serving kind", "kind", "Aardvark")
	mustKubectl(t, "apiVersion: crdwait.example.com/v1\nkind: Aardvark\nmetadata: {name: a, namespace: "+ns+"}\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "aardvarks.crdwait.example.com/a", "--timeout=60s")
}

// TestWaitingKindEditedStoppedRemoved: a kind waiting for its CRD takes a
// new revision (it waits on with it), an operator stopped while a kind
// waits returns, and a kind removed from the templates while it waits is
// not served once its CRD is applied.
func TestWaitingKindEditedStoppedRemoved(t *testing.T) {
	ns := clustertest.Namespace(t)
	src := strings.NewReplacer("%[1]s", "aardvark", "%[2]s", "Aardvark").Replace(waiterTemplate)
	dir := kindsDir(t, map[string]string{"aardvark": src})
	crds := waiterCRDs(t, dir)
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	act, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	act.WaitLog(t, 60*time.Second, "kind waits for its CRD", "kind", "Aardvark")
	testkit.WriteKind(t, dir, "aardvark", strings.Replace(src, `*"hello"`, `*"edited"`, 1))
	eventually(t, 60*time.Second, func() string {
		if n := len(act.Logged("kind waits for its CRD", "kind", "Aardvark")); n < 2 {
			return fmt.Sprintf("%d lines say that Aardvark waits, want 2 (the new revision waits)", n)
		}
		return ""
	})
	stop() // fails the test unless Run returns within 30 s

	// Yak waits beside Aardvark; its CRD, applied after Aardvark's, is
	// seen by its own wait: the sign that a wait still running would have
	// seen Aardvark's by then.
	yakSrc := strings.NewReplacer("%[1]s", "yak", "%[2]s", "Yak").Replace(waiterTemplate)
	testkit.WriteKind(t, dir, "yak", yakSrc)
	act, _ = operatortest.StartObserved(t, clustertest.Config(), opts)
	act.WaitLog(t, 60*time.Second, "kind waits for its CRD", "kind", "Aardvark")
	act.WaitLog(t, 60*time.Second, "kind waits for its CRD", "kind", "Yak")
	testkit.Remove(t, dir, "aardvark")
	act.WaitLog(t, 60*time.Second, "kind removed while it waited for its CRD", "package", "aardvark")

	installCRD(t, crds["Aardvark"], "aardvarks.crdwait.example.com")
	installCRD(t, waiterCRDs(t, kindsDir(t, map[string]string{"yak": yakSrc}))["Yak"], "yaks.crdwait.example.com")
	act.WaitLog(t, 60*time.Second, "serving kind", "kind", "Yak")
	if served := act.Logged("serving kind", "kind", "Aardvark"); len(served) > 0 {
		t.Fatalf("Aardvark served after it was removed from the templates: %+v", served)
	}
}

// TestLaggingCRDHoldsTheRevision: with --install-crds=false, a revision
// that adds spec.port while the served CRD lacks it is not served (the API
// server would prune port from every write): the revision before keeps
// serving, the operator says which fields the CRD lacks, and once the
// CRD is applied with them the revision serves and its CRs take port.
func TestLaggingCRDHoldsTheRevision(t *testing.T) {
	ns := clustertest.Namespace(t)
	src := strings.NewReplacer("%[1]s", "lagger", "%[2]s", "Lagger").Replace(waiterTemplate)
	dir := kindsDir(t, map[string]string{"lagger": src})
	installCRD(t, waiterCRDs(t, dir)["Lagger"], "laggers.crdwait.example.com")
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	act, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	act.WaitLog(t, 60*time.Second, "serving kind", "kind", "Lagger")
	mustKubectl(t, "apiVersion: crdwait.example.com/v1\nkind: Lagger\nmetadata: {name: l, namespace: "+ns+"}\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "laggers.crdwait.example.com/l", "--timeout=60s")

	edited := strings.NewReplacer(`#Spec: {note: *"hello" | string}`, `#Spec: {note: *"hello" | string, port: *8080 | int}`,
		"data: note: parent.spec.note", "data: {note: parent.spec.note, port: \"\\(parent.spec.port)\"}").Replace(src)
	if edited == src {
		t.Fatal("the edit changed nothing")
	}
	testkit.WriteKind(t, dir, "lagger", edited)
	want := "lacks at version v1 the fields spec.port"
	eventually(t, 60*time.Second, func() string {
		for _, l := range act.Logged("template reload") {
			if strings.Contains(l.Values["error"], want) {
				return ""
			}
		}
		return "no reload error says " + want
	})
	// The retries reload the revision: its admission ran once, its verdict
	// kept (admit.go kindRecord.judge), not rendered again at every retry.
	eventually(t, 60*time.Second, func() string {
		n := 0
		for _, l := range act.Logged("kinds not served; retrying") {
			if strings.Contains(l.Values["error"], want) {
				n++
			}
		}
		if n < 2 {
			return fmt.Sprintf("%d retries say %s, want 2", n, want)
		}
		return ""
	})
	admitted := map[string]int{}
	for _, l := range act.Logged("admission", "kind", "Lagger") {
		admitted[l.Values["revision"]]++
	}
	if len(admitted) != 2 {
		t.Fatalf("admissions of Lagger by revision: %v, want the first and the edited revision", admitted)
	}
	for rev, n := range admitted {
		if n != 1 {
			t.Errorf("revision %s admitted %d times, want once: a retry of the same revision judged it again", rev, n)
		}
	}
	if changed := act.Logged("template changed", "kind", "Lagger"); len(changed) > 0 {
		t.Fatalf("the revision was served while the CRD lacks spec.port: %+v", changed)
	}
	if got := mustKubectl(t, "", "-n", ns, "get", "configmap", "l-lagger", "-o", "jsonpath={.data.port}"); got != "" {
		t.Fatalf("ConfigMap l-lagger has port %q from a revision not served", got)
	}

	installCRD(t, waiterCRDs(t, dir)["Lagger"], "laggers.crdwait.example.com")
	act.WaitLog(t, 90*time.Second, "template changed", "kind", "Lagger")
	eventually(t, 60*time.Second, func() string {
		if got := mustKubectl(t, "", "-n", ns, "get", "configmap", "l-lagger", "-o", "jsonpath={.data.port}"); got != "8080" {
			return "ConfigMap l-lagger port = " + got + ", want 8080"
		}
		return ""
	})
}

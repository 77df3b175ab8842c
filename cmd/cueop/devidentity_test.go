package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// startDev runs `cueop dev` with args (after --kubeconfig-out) in the
// background until the test's end, and returns its console and the
// kubeconfig of its cluster.
func startDev(t *testing.T, templates string, args ...string) (*lockedWriter, string) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	root := newRoot()
	out := newLockedBuffer()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs(append([]string{"--templates", templates, "dev", "--kubeconfig-out", kubeconfig}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cueop dev: %v\n%s", err, out.String())
		}
	})
	return out, kubeconfig
}

// kubectlAt runs kubectl on the cluster of kubeconfig, stdin when not
// empty, and returns its output.
var kubectlAt = clustertest.MustKubectlAt

// waitReadyLines waits for a status line of each CR (Kind ns/name) that
// reads Ready=True.
func waitReadyLines(t *testing.T, out *lockedWriter, crs ...string) {
	t.Helper()
	clustertest.Eventually(t, 2*time.Minute, func() string {
		for _, cr := range crs {
			if !hasLine(out.String(), cr, "Ready=True") {
				return "no Ready line for " + cr + ":\n" + out.String()
			}
		}
		return ""
	})
}

// TestDevKindsActAsTheirServiceAccounts: `cueop dev` on the repository's
// templates and samples (what `make run` runs) says which ServiceAccount
// each kind acts as, creates them with their generated roles, and the
// samples converge, their children written by the kind's identity
// (labelled with it, written by cueop's field manager), with no error of
// an identity on the console.
func TestDevKindsActAsTheirServiceAccounts(t *testing.T) {
	out, kubeconfig := startDev(t, "../../templates", "--samples", "../../config/samples", "--testdata", "../../testdata")
	waitReadyLines(t, out, "StaticSite default/docs", "RedisCluster default/sample", "Blog default/news")
	site := identity.ServiceAccount{Namespace: identity.DefaultNamespace, Name: identity.DefaultName("staticsites.web.example.com")}
	if !hasLine(out.String(), "kinds act as their own ServiceAccounts", "StaticSite as "+site.String(), "Blog as ", "RedisCluster as ") {
		t.Errorf("no line names the kinds' ServiceAccounts:\n%s", out.String())
	}
	sas := kubectlAt(t, kubeconfig, "", "get", "serviceaccounts", "-n", identity.DefaultNamespace, "-o", "name")
	if !strings.Contains(sas, "serviceaccount/"+site.Name) {
		t.Errorf("no ServiceAccount %s: %s", site, sas)
	}
	role := kubectlAt(t, kubeconfig, "", "get", "clusterrole", site.Name, "-o", "jsonpath={.rules[*].resources}")
	if !strings.Contains(role, "deployments") {
		t.Errorf("ClusterRole %s grants %s, want deployments", site.Name, role)
	}
	label := kubectlAt(t, kubeconfig, "", "get", "deployment", "-n", "default", "docs",
		"-o", "jsonpath={.metadata.labels."+strings.ReplaceAll(wellknown.LabelIdentity, ".", `\.`)+"} {.metadata.managedFields[*].manager}")
	if !strings.HasPrefix(label, site.Namespace+"."+site.Name+" ") || !strings.Contains(label, "cueop") {
		t.Errorf("StaticSite's Deployment: identity label and managers %q, want %s.%s and cueop", label, site.Namespace, site.Name)
	}
	// No identity is refused anything, nor fails to get its role. (The
	// render workers' fair share may log a wait under load: not this
	// test's concern.)
	for _, line := range strings.Split(out.String(), "\n") {
		l := strings.ToLower(line)
		if strings.Contains(line, "ERROR") && (strings.Contains(l, "forbidden") || strings.Contains(l, "role") || strings.Contains(l, "serviceaccount")) {
			t.Errorf("console has an identity's error line: %s", line)
		}
	}
}

// gadgetKind is a kind whose CR renders a ConfigMap, and when
// spec.expose holds a child of kind svcKind (CUE: `"Service"`, or
// "parent.spec.exposeAs", a kind the template computes from the CR).
func gadgetKind(svcKind string) string {
	return `package gadget

resource: {group: "devid.test.example", version: "v1", kind: "Gadget"}
#Spec: {expose: *false | bool, exposeAs: *"Service" | string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: v: "1"}
if parent.spec.expose {
	children: svc: {apiVersion: "v1", kind: ` + svcKind + `, metadata: name: parent.metadata.name, spec: ports: [{port: 80}]}
}
`
}

const widgetKind = `package widget

resource: {group: "devid.test.example", version: "v1", kind: "Widget"}
#Spec: {}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "widget-" + parent.metadata.name, data: v: "1"}
`

// TestDevRefusesWhatTheRoleLacks: a Gadget whose template computes its
// second child's kind from the CR, and whose sample renders a ConfigMap
// only, gets a role on ConfigMaps (dev warns where the kind is computed):
// a Gadget applied afterwards that renders a Service reads Ready=False,
// reason Forbidden, naming the verb, the resource and the kind's
// ServiceAccount, while the Widget's CR stays Ready. An edit of the
// template that writes the Service's kind regenerates the role, though no
// sample renders the Service: the Gadget converges, and the Widget's
// role, which gained nothing, is not written.
func TestDevRefusesWhatTheRoleLacks(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue": testModule,
		"templates/gadget/gadget.cue":  gadgetKind("parent.spec.exposeAs"),
		"templates/widget/widget.cue":  widgetKind,
		"samples/gadget.yaml":          "apiVersion: devid.test.example/v1\nkind: Gadget\nmetadata: {name: plain, namespace: default}\nspec: {}\n",
		"samples/widget.yaml":          "apiVersion: devid.test.example/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {}\n",
	})
	templates := filepath.Join(dir, "templates")
	out, kubeconfig := startDev(t, templates, "--samples", filepath.Join(dir, "samples"), "--testdata", filepath.Join(dir, "testdata"))
	waitReadyLines(t, out, "Gadget default/plain", "Widget default/w")
	if !hasLine(out.String(), "warn ", "gadget.cue:8:42: children.svc: kind is computed (parent.spec.exposeAs)") {
		t.Errorf("no warning where the Gadget computes its Service's kind:\n%s", out.String())
	}
	gadgetSA := identity.ServiceAccount{Namespace: identity.DefaultNamespace, Name: identity.DefaultName("gadgets.devid.test.example")}
	widgetRole := identity.DefaultName("widgets.devid.test.example")
	widgetVersion := kubectlAt(t, kubeconfig, "", "get", "clusterrole", widgetRole, "-o", "jsonpath={.metadata.resourceVersion}")

	kubectlAt(t, kubeconfig, "apiVersion: devid.test.example/v1\nkind: Gadget\nmetadata: {name: exposed, namespace: default}\nspec: {expose: true}\n", "apply", "-f", "-")
	kubectlAt(t, kubeconfig, "", "wait", "--timeout=60s", "-n", "default", "gadgets.devid.test.example/exposed",
		`--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=Forbidden`)
	msg := kubectlAt(t, kubeconfig, "", "get", "-n", "default", "gadgets.devid.test.example/exposed",
		"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
	for _, want := range []string{"False ", "verb ", "resource services", gadgetSA.Username()} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready of the Gadget that renders a Service: %q, want it to hold %q", msg, want)
		}
	}
	if last := lastLineWith(out.String(), "Widget default/w"); !strings.Contains(last, "Ready=True") {
		t.Errorf("the Widget is not Ready any more: %s", last)
	}

	// The template now writes the Service's kind: the role gains it.
	testkit.WriteKind(t, templates, "gadget", gadgetKind(`"Service"`))
	kubectlAt(t, kubeconfig, "", "wait", "--timeout=60s", "-n", "default", "gadgets.devid.test.example/exposed", "--for=condition=Ready")
	role := kubectlAt(t, kubeconfig, "", "get", "clusterrole", gadgetSA.Name, "-o", "jsonpath={.rules[*].resources}")
	if !strings.Contains(role, "services") {
		t.Errorf("Gadget's ClusterRole grants %s after the edit, want services", role)
	}
	if got := kubectlAt(t, kubeconfig, "", "get", "clusterrole", widgetRole, "-o", "jsonpath={.metadata.resourceVersion}"); got != widgetVersion {
		t.Errorf("the Widget's ClusterRole, which gained nothing, was written: resourceVersion %s, was %s", got, widgetVersion)
	}
}

// TestDevGrantsWhatTheTemplateRenders: a kind with no golden case and no
// sample, whose children are all conditional (Services in a for, a
// ConfigMap in a top-level if), gets the role its template needs: a CR
// applied by hand converges under the kind's own ServiceAccount.
func TestDevGrantsWhatTheTemplateRenders(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue": testModule,
		"templates/thing/thing.cue": `package thing

resource: {group: "devid.test.example", version: "v1", kind: "Thing"}
#Spec: {ports: *[] | [...int], settings: *false | bool}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: {
	for i, p in parent.spec.ports {
		"svc-\(i)": {apiVersion: "v1", kind: "Service", metadata: name: "\(parent.metadata.name)-\(i)", spec: ports: [{port: p}]}
	}
}
if parent.spec.settings {
	children: settings: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: v: "1"}
}
`,
		"samples/.keep": "",
	})
	out, kubeconfig := startDev(t, filepath.Join(dir, "templates"), "--samples", filepath.Join(dir, "samples"), "--testdata", filepath.Join(dir, "testdata"))
	sa := identity.ServiceAccount{Namespace: identity.DefaultNamespace, Name: identity.DefaultName("things.devid.test.example")}
	clustertest.Eventually(t, time.Minute, func() string {
		if !hasLine(out.String(), "kinds act as their own ServiceAccounts", "Thing as "+sa.String()) {
			return "no line names the Thing's ServiceAccount:\n" + out.String()
		}
		return ""
	})
	kubectlAt(t, kubeconfig, "apiVersion: devid.test.example/v1\nkind: Thing\nmetadata: {name: t, namespace: default}\nspec: {ports: [80, 81], settings: true}\n", "apply", "-f", "-")
	kubectlAt(t, kubeconfig, "", "wait", "--timeout=60s", "-n", "default", "things.devid.test.example/t", "--for=condition=Ready")
	label := kubectlAt(t, kubeconfig, "", "get", "service", "-n", "default", "t-1",
		"-o", "jsonpath={.metadata.labels."+strings.ReplaceAll(wellknown.LabelIdentity, ".", `\.`)+"}")
	if label != sa.Namespace+"."+sa.Name {
		t.Errorf("the Thing's Service t-1: identity label %q, want %s.%s", label, sa.Namespace, sa.Name)
	}
	kubectlAt(t, kubeconfig, "", "get", "configmap", "-n", "default", "t")
}

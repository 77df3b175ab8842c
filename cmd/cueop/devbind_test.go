package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDevBindNamespaces: `cueop dev --bind-namespaces` with a namespace
// only a sample creates (its file sorted after the CR's) and one nobody
// creates: dev creates the bound namespaces before it binds the kind's
// role there, the sample's Namespace is applied before the CR, and the
// CRs in both namespaces get Ready.
func TestDevBindNamespaces(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue": testModule,
		"templates/widget/widget.cue":  widgetKind,
		"samples/a-widget.yaml":        "apiVersion: devid.test.example/v1\nkind: Widget\nmetadata: {name: w, namespace: team-a}\nspec: {}\n",
		"samples/b-namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n",
	})
	out, kubeconfig := startDev(t, filepath.Join(dir, "templates"), "--samples", filepath.Join(dir, "samples"),
		"--testdata", filepath.Join(dir, "testdata"), "--bind-namespaces", "Widget.devid.test.example=team-a,team-b")
	waitReadyLines(t, out, "Widget team-a/w")
	if !hasLine(out.String(), "kinds act as their own ServiceAccounts", "Widget as ", "(in team-a,team-b)") {
		t.Errorf("no line says the Widget is bound in team-a and team-b:\n%s", out.String())
	}
	if got := kubectlAt(t, kubeconfig, "", "get", "namespace", "team-a", "-o", "jsonpath={.metadata.labels.team}"); got != "a" {
		t.Errorf("namespace team-a has label team=%q, want the sample's a", got)
	}
	// team-b, which no sample creates, exists: a Widget applied there with
	// kubectl converges.
	kubectlAt(t, kubeconfig, "apiVersion: devid.test.example/v1\nkind: Widget\nmetadata: {name: v, namespace: team-b}\nspec: {}\n", "apply", "-f", "-")
	waitReadyLines(t, out, "Widget team-b/v")
	bindings := kubectlAt(t, kubeconfig, "", "get", "rolebindings", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace} {end}")
	for _, ns := range []string{"team-a", "team-b"} {
		if !strings.Contains(bindings, ns+" ") {
			t.Errorf("no RoleBinding in %s: the RoleBindings are in %q", ns, bindings)
		}
	}
}

// logsAt is the log directory the "control plane ready" line names.
var logsAt = regexp.MustCompile(`control plane ready in \S+ \(logs: (\S+)\)`)

// TestDevFailureRemovesItsKubeconfig: when dev fails once its cluster
// runs (here the API server refuses a sample), it stops the cluster and
// removes the kubeconfig it wrote, of a cluster that is gone; the
// operator's log stays, it tells what happened.
func TestDevFailureRemovesItsKubeconfig(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue": testModule,
		"templates/widget/widget.cue":  widgetKind,
		"samples/bad.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name, namespace: default}\n",
	})
	kubeconfig := filepath.Join(dir, "dev", "kubeconfig")
	root := newRoot()
	out := newLockedBuffer()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"--templates", filepath.Join(dir, "templates"), "dev", "--kubeconfig-out", kubeconfig,
		"--samples", filepath.Join(dir, "samples"), "--testdata", filepath.Join(dir, "testdata")})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "apply sample ConfigMap Not_A_Name") {
		t.Fatalf("cueop dev with a sample the API server refuses: error %v, want it to name the sample\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "kubectl --kubeconfig "+kubeconfig) {
		t.Fatalf("dev failed before it wrote its kubeconfig:\n%s", out.String())
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig of the stopped cluster is left behind: stat: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dev", devLogFile)); err != nil {
		t.Errorf("the operator's log is gone: %v", err)
	}
	m := logsAt.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no line names the control plane's logs:\n%s", out.String())
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the control plane's directory %s is left behind: stat: %v", m[1], err)
	}
}

package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

var blogGVK = schema.GroupVersionKind{Group: "blog.example.com", Version: "v1", Kind: "Blog"}

// blogYAML is a Blog as a user writes it, with an Ingress when host is set.
func blogYAML(ns, name, host string) string {
	s := fmt.Sprintf("apiVersion: blog.example.com/v1\nkind: Blog\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  settings:\n    name: blog-settings\n", name, ns)
	if host != "" {
		s += "  ingressHost: " + host + "\n"
	}
	return s
}

// kubectlCase is a Blog applied with kubectl (first), its file previewed
// without ingressHost (asked: the --server-side flag), then applied so
// (then).
type kubectlCase struct {
	first, then []string
	asked, want diff.ApplyMode
	line        string // the start of the preview's line on the mode
}

var (
	csa = []string{"apply", "-f", "-"}
	ssa = []string{"apply", "--server-side", "-f", "-"}
)

// TestFileAsKubectlApplies previews dropping ingressHost from the file of a
// Blog applied client-side (kubectl apply), of one applied server-side
// (kubectl apply --server-side), and of one applied client-side and then
// applied server-side (kubectl takes over the client-side fields): each
// preview removes the field and prunes the Ingress; then kubectl applies
// the file so for real, the operator prunes the Ingress, and a second
// preview of the file finds nothing to change.
func TestFileAsKubectlApplies(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	c := newClient(t, clustertest.Config())
	ctx := context.Background()
	if err := c.Create(ctx, settings(ns, "blog-settings", "info")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]kubectlCase{
		"csa":     {csa, csa, diff.ApplyAuto, diff.ApplyClientSide, "as kubectl apply (the live CR has a last-applied-configuration)"},
		"ssa":     {ssa, ssa, diff.ApplyAuto, diff.ApplyServerSide, "as kubectl apply --server-side (the live CR has no last-applied-configuration)"},
		"migrate": {csa, ssa, diff.ApplyServerSide, diff.ApplyServerSide, "as kubectl apply --server-side, which takes over the fields of the live CR's client-side apply"},
	}
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, time.Minute, "blogs.blog.example.com")
	for name, tc := range cases {
		clustertest.MustKubectl(t, blogYAML(ns, name, name+".example.com"), tc.first...)
	}
	waitKindReady(t, c, blogGVK, ns, len(cases))
	a.Settled(t, 0, time.Minute)
	stop()

	for name, tc := range cases {
		file := []*unstructured.Unstructured{parse(t, blogYAML(ns, name, ""))}
		r := run(t, dir, diff.Options{Namespace: ns, Files: file, Apply: tc.asked})
		out := text(t, r)
		if len(r.Files) != 1 || r.Files[0].Mode != tc.want || !strings.HasPrefix(r.Files[0].Why, tc.line) {
			t.Errorf("Blog %s previewed as %+v, want %s", name, r.Files, tc.line)
		}
		if !strings.Contains(out, "Blog "+ns+"/"+name+": "+tc.line) {
			t.Errorf("the preview lacks its line on the mode:\n%s", out)
		}
		if !strings.Contains(out, "-  ingressHost: "+name+".example.com") || !prunes(r, name, "ingress") {
			t.Errorf("the preview of Blog %s keeps ingressHost or its Ingress:\n%s", name, out)
		}
		clustertest.MustKubectl(t, blogYAML(ns, name, ""), tc.then...)
	}
	a, stop = operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	for name := range cases {
		waitGone(t, c, "networking.k8s.io/v1", "Ingress", ns, name)
	}
	a.Settled(t, 0, time.Minute)
	stop()
	for name, tc := range cases {
		file := []*unstructured.Unstructured{parse(t, blogYAML(ns, name, ""))}
		if r := run(t, dir, diff.Options{Namespace: ns, Files: file, Apply: tc.asked}); r.ExitCode() != 0 {
			t.Errorf("after kubectl apply, the preview of Blog %s still finds changes:\n%s", name, text(t, r))
		}
	}
}

// TestFileApplyModeChosen: --server-side=false previews a client-side
// apply over a CR applied server-side (no last-applied-configuration, so
// nothing dropped is removed, as kubectl apply does), and --server-side a
// server-side one over a new CR; `cueop diff -f` says so for the flag
// unset, true and false.
func TestFileApplyModeChosen(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, time.Minute, "blogs.blog.example.com")
	c := newClient(t, clustertest.Config())
	if err := c.Create(context.Background(), settings(ns, "blog-settings", "info")); err != nil {
		t.Fatal(err)
	}
	clustertest.MustKubectl(t, blogYAML(ns, "ssa", "ssa.example.com"), "apply", "--server-side", "-f", "-")
	waitKindReady(t, c, blogGVK, ns, 1)
	a.Settled(t, 0, time.Minute)
	stop()
	file := []*unstructured.Unstructured{parse(t, blogYAML(ns, "ssa", "")), parse(t, blogYAML(ns, "new", ""))}
	r := run(t, dir, diff.Options{Namespace: ns, Files: file, Apply: diff.ApplyClientSide})
	if len(r.Files) != 2 || r.Files[0].Mode != diff.ApplyClientSide || !strings.Contains(r.Files[0].Why, "has no last-applied-configuration (nothing is removed)") {
		t.Errorf("files = %+v, want a client-side preview", r.Files)
	}
	if prunes(r, "ssa", "ingress") || strings.Contains(text(t, r), "-  ingressHost") {
		t.Errorf("a client-side apply over no last-applied-configuration removes nothing:\n%s", text(t, r))
	}
	r = run(t, dir, diff.Options{Namespace: ns, Files: file[1:], Apply: diff.ApplyServerSide})
	if len(r.Files) != 1 || r.Files[0].Mode != diff.ApplyServerSide {
		t.Errorf("files = %+v, want a server-side preview", r.Files)
	}

	// The command's flag: unset or true (kubectl owns ingressHost: it goes,
	// exit 1), false (nothing removed, exit 0).
	path := filepath.Join(testkit.Dir(t, map[string]string{"blog.yaml": blogYAML(ns, "ssa", "")}), "blog.yaml")
	bin := cueop(t)
	for _, c := range []struct {
		flag, line string
		code       int
	}{
		{"", "as kubectl apply --server-side (the live CR has no last-applied-configuration)", 1},
		{"--server-side", "as kubectl apply --server-side (field manager kubectl)", 1},
		{"--server-side=false", "as kubectl apply: a merge patch from the file over the live CR", 0},
	} {
		args := []string{"-f", path}
		if c.flag != "" {
			args = append(args, c.flag)
		}
		if out, code := runDiffCommand(t, bin, dir, ns, args...); code != c.code || !strings.Contains(out, "Blog "+ns+"/ssa: "+c.line) {
			t.Errorf("cueop diff -f %s: exit %d, want %d and %q:\n%s", c.flag, code, c.code, c.line, out)
		}
	}
}

// prunes reports whether the report prunes child id of Blog name.
func prunes(r *diff.Report, name, id string) bool {
	for _, cr := range r.CRs {
		for _, ch := range cr.Children {
			if cr.Name == name && ch.ID == id && ch.Action == diff.Prune {
				return true
			}
		}
	}
	return false
}

func parse(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	objs, err := golden.ParseObjects([]byte(y))
	if err != nil || len(objs) != 1 {
		t.Fatalf("parse %s: %v", y, err)
	}
	return objs[0]
}

// waitGone waits for an object to be deleted.
func waitGone(t *testing.T, c client.Client, apiVersion, kind, ns, name string) {
	t.Helper()
	clustertest.Eventually(t, 2*time.Minute, func() string {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, o)
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("%s %s/%s still there (%v)", kind, ns, name, err)
	})
}

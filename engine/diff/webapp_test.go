package diff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

var webAppGVK = schema.GroupVersionKind{Group: "apps.example.com", Version: "v1", Kind: "WebApp"}

// The WebApp template edits of the tests.
var (
	appPort     = []string{`ports: [{name: "http", containerPort: 80}]`, `ports: [{name: "http", containerPort: 8080}]`}
	renameFiles = []string{`metadata: {name: "\(_name)-config", labels: _labels}`, `metadata: {name: "\(_name)-files", labels: _labels}`}
)

// webAppFleet creates n WebApps in a fresh namespace, each reading its own
// settings ConfigMap, runs the operator until every one is Ready (its
// migration Job completed, wave 1 applied), and stops it.
func webAppFleet(t *testing.T, n int) string {
	t.Helper()
	ns := clustertest.Namespace(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(copyTemplates(t), ns))
	clustertest.WaitEstablished(t, time.Minute, "webapps.apps.example.com")
	c := newClient(t, clustertest.Config())
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		if err := c.Create(ctx, settings(ns, name+"-settings", "info")); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, webApp(ns, name, name+"-settings")); err != nil {
			t.Fatal(err)
		}
	}
	waitKindReady(t, c, webAppGVK, ns, n)
	a.Settled(t, 0, time.Minute)
	stop()
	return ns
}

// webApp is a WebApp of one replica that reads the settings ConfigMap
// named settings.
func webApp(ns, name, settings string) *unstructured.Unstructured {
	return clustertest.Object(webAppGVK, ns, name, map[string]any{"spec": map[string]any{
		"replicas":     int64(1),
		"files":        map[string]any{"app.conf": "listen 80\n"},
		"settingsFrom": map[string]any{"name": settings},
	}})
}

// settings is a WebApp's settings ConfigMap.
func settings(ns, name, level string) *unstructured.Unstructured {
	return clustertest.Object(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ns, name, map[string]any{"data": map[string]any{"LOG_LEVEL": level}})
}

// editedWebApp is a copy of the templates with the WebApp template's old
// text replaced by new, pair by pair.
func editedWebApp(t testing.TB, pairs ...string) string {
	t.Helper()
	return editedFile(t, filepath.Join("webapp", "webapp.cue"), pairs...)
}

// runWebApp is run, also counting the lists of referenced ConfigMaps.
func runWebApp(t *testing.T, dir string, opts diff.Options) (*diff.Report, int) {
	t.Helper()
	opts.Kinds = []string{"WebApp"}
	r, reqs := runCounted(t, dir, opts)
	// The lists of ConfigMaps without a label selector: the lists of
	// referenced objects (children are listed by cueop's labels).
	return r, reqs.Count(func(r testkit.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/configmaps") && r.Query.Get("labelSelector") == ""
	})
}

func webApps(t testing.TB, r *diff.Report) diff.KindSummary {
	t.Helper()
	for _, k := range r.Kinds {
		if k.Kind == "WebApp" {
			return k
		}
	}
	t.Fatalf("no WebApp in the report:\n%s", text(t, r))
	return diff.KindSummary{}
}

func crOf(r *diff.Report, name string) *diff.CR {
	for i := range r.CRs {
		if r.CRs[i].Name == name {
			return &r.CRs[i]
		}
	}
	return nil
}

// TestDiffWebApp diffs a fleet of 4 WebApps, whose templates reference a
// settings ConfigMap each and apply their children in two waves, as the
// operator left them; then w3's settings ConfigMap is deleted. diff reads
// the referenced ConfigMaps as the controller does, with one list, and
// writes nothing.
func TestDiffWebApp(t *testing.T) {
	ns := webAppFleet(t, 4)
	c := newClient(t, clustertest.Config())
	gone := settings(ns, "w3-settings", "")
	if err := c.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	opts := diff.Options{Namespace: ns}
	notFound := func(t *testing.T, r *diff.Report) {
		t.Helper()
		w3 := crOf(r, "w3")
		if w3 == nil || w3.Reason != wellknown.ReasonReferenceNotFound || len(w3.Children) != 0 ||
			!strings.Contains(w3.Error, "ReferenceNotFound: references.settings: ConfigMap w3-settings not found in namespace "+ns) {
			t.Errorf("want w3 waiting for its settings, nothing applied:\n%s", text(t, r))
		}
	}

	t.Run("unchanged, a reference missing", func(t *testing.T) {
		r, lists := runWebApp(t, copyTemplates(t), opts)
		s := webApps(t, r)
		if s.CRs != 4 || s.Unchanged != 3 || s.Failed != 1 || len(r.CRs) != 1 || r.ExitCode() != 2 {
			t.Fatalf("want 3 WebApps unchanged and w3 failed, exit 2; got exit %d:\n%s", r.ExitCode(), text(t, r))
		}
		notFound(t, r)
		if lists != 1 {
			t.Errorf("%d lists of the referenced ConfigMaps for 4 WebApps, want 1", lists)
		}
	})
	t.Run("template edit", func(t *testing.T) {
		r, _ := runWebApp(t, editedWebApp(t, appPort...), opts)
		s, out := webApps(t, r), text(t, r)
		if s.Changing != 3 || s.Failed != 1 || s.Children[diff.Update] != 3 || len(s.Children) != 1 || s.Waiting != 0 || r.ExitCode() != 2 {
			t.Fatalf("want the 3 Deployments updated, w3 failed, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		notFound(t, r)
		if !strings.Contains(out, "~ update   Deployment "+ns+"/w0 (children.deployment) wave 1\n") || !strings.Contains(out, "+        - containerPort: 8080") {
			t.Errorf("want the Deployment's update, its wave and the new port:\n%s", out)
		}
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var back diff.Report
		if err := json.Unmarshal(b.Bytes(), &back); err != nil || crOf(&back, "w0") == nil ||
			crOf(&back, "w0").Children[0].Wave == nil || *crOf(&back, "w0").Children[0].Wave != 1 ||
			crOf(&back, "w3").Reason != wellknown.ReasonReferenceNotFound {
			t.Errorf("JSON: want the wave of w0's Deployment and w3's reason: %v\n%s", err, b.String())
		}
		t.Logf("\n%s", out)
	})
	t.Run("a lower wave not ready", func(t *testing.T) {
		r, _ := runWebApp(t, editedWebApp(t, renameFiles...), opts)
		s, out := webApps(t, r), text(t, r)
		if s.Children[diff.Create] != 3 || s.Children[diff.Update] != 3 || s.Children[diff.Prune] != 3 || s.Waiting != 3 || r.ExitCode() != 2 {
			t.Fatalf("want per WebApp the new ConfigMap created, the Deployment updated (waiting) and the old ConfigMap pruned; got exit %d:\n%s", r.ExitCode(), out)
		}
		want := "~ update   Deployment " + ns + "/w1 (children.deployment) wave 1\n" +
			"      waiting for wave 0: children.config (ConfigMap " + ns + "/w1-files) to exist\n"
		if !strings.Contains(out, want) || !strings.Contains(out, "+ create   ConfigMap "+ns+"/w1-files (children.config) wave 0\n") ||
			!strings.Contains(out, "- prune    ConfigMap "+ns+"/w1-config (children.config) wave 0\n") || !strings.Contains(out, "+          name: w1-files") {
			t.Errorf("want the create, the waiting update with its eventual diff and the prune, with their waves:\n%s", out)
		}
		for _, cr := range r.CRs {
			for _, ch := range cr.Children {
				if (ch.Waiting != "") != (ch.Kind == "Deployment") {
					t.Errorf("%s %s/%s: waiting %q: only the Deployments wait", ch.Kind, ch.Namespace, ch.Name, ch.Waiting)
				}
			}
		}
		t.Logf("\n%s", out)
	})
	t.Run("reference outside the readable kinds", func(t *testing.T) {
		o := opts
		o.Render.ReadableKinds = render.MustKindSet("Secret")
		r, lists := runWebApp(t, copyTemplates(t), o)
		s := webApps(t, r)
		if s.Failed != 4 || r.ExitCode() != 2 || lists != 0 {
			t.Fatalf("want every WebApp refused, no ConfigMap read (%d lists), exit 2; got exit %d:\n%s", lists, r.ExitCode(), text(t, r))
		}
		for _, cr := range r.CRs {
			if cr.Reason != wellknown.ReasonReferenceRefused || !strings.Contains(cr.Error, "references.settings: kind ConfigMap is not in the readable kinds (Secret)") {
				t.Errorf("%s: %s: %s; want the reference refused", cr.Name, cr.Reason, cr.Error)
			}
		}
	})
	t.Run("command: readable kinds from the environment", func(t *testing.T) {
		bin := cueop(t)
		diffCmd := func(env string, args ...string) (string, int) {
			t.Helper()
			args = append([]string{"--templates", copyTemplates(t), "diff", "--kubeconfig", clustertest.Cluster().KubeconfigPath, "-n", ns, "--kind", "WebApp", "--shared-identity"}, args...)
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "CUEOP_READABLE_KINDS="+env)
			return outputAndCode(t, cmd)
		}
		out, code := diffCmd("Secret")
		if code != 2 || strings.Count(out, "error: ReferenceRefused: ") != 4 || !strings.Contains(out, "kind ConfigMap is not in the readable kinds (Secret)") {
			t.Errorf("$CUEOP_READABLE_KINDS=Secret: exit %d, want 2 and every WebApp refused:\n%s", code, out)
		}
		out, code = diffCmd("Secret", "--readable-kinds", "ConfigMap")
		if code != 2 || strings.Contains(out, "ReferenceRefused") || strings.Count(out, "error: ReferenceNotFound: ") != 1 ||
			!strings.Contains(out, "WebApp.apps.example.com  4    3          0         1") {
			t.Errorf("--readable-kinds ConfigMap over the environment: exit %d, want w3 only failed:\n%s", code, out)
		}
	})
	t.Run("file: new WebApps", func(t *testing.T) {
		o := opts
		o.Files = []*unstructured.Unstructured{webApp(ns, "w8", "nope"), webApp(ns, "w9", "w1-settings")}
		r, _ := runWebApp(t, copyTemplates(t), o)
		out := text(t, r)
		w8, w9 := crOf(r, "w8"), crOf(r, "w9")
		if w8 == nil || w8.Reason != wellknown.ReasonReferenceNotFound || len(w8.Children) != 0 || r.ExitCode() != 2 {
			t.Fatalf("want w8 waiting for ConfigMap nope, nothing created, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		if w9 == nil || w9.Error != "" || len(w9.Children) != 5 {
			t.Fatalf("want w9's 5 children created:\n%s", out)
		}
		for _, ch := range w9.Children {
			wave := map[string]int{"config": 0, "migrate": 0, "deployment": 1, "service": 1, "pdb": 1}[ch.ID]
			want := ""
			if wave == 1 {
				want = "waiting for wave 0: children.config (ConfigMap " + ns + "/w9-config) to exist"
			}
			if ch.Action != diff.Create || ch.Wave == nil || *ch.Wave != wave || ch.Waiting != want {
				t.Errorf("children.%s: %s, wave %v, waiting %q; want create, wave %d, waiting %q", ch.ID, ch.Action, ch.Wave, ch.Waiting, wave, want)
			}
		}
		w1 := &unstructured.Unstructured{}
		w1.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "w1"}, w1); err != nil {
			t.Fatal(err)
		}
		sum, _, _ := unstructured.NestedString(w1.Object, "spec", "template", "metadata", "annotations", "apps.example.com/settings-checksum")
		d := ""
		for _, ch := range w9.Children {
			if ch.ID == "deployment" {
				d = ch.Diff
			}
		}
		if sum == "" || !strings.Contains(d, "+        apps.example.com/settings-checksum: "+sum+"\n") {
			t.Errorf("want w9's Deployment to carry the checksum of w1-settings, as w1's does (%q):\n%s", sum, out)
		}
	})
	// Last: it edits the cluster (with the test's client, not diff's).
	t.Run("referenced object edited", func(t *testing.T) {
		if err := c.Update(context.Background(), withVersion(t, c, settings(ns, "w0-settings", "debug"))); err != nil {
			t.Fatal(err)
		}
		r, _ := runWebApp(t, copyTemplates(t), opts)
		s, out := webApps(t, r), text(t, r)
		w0 := crOf(r, "w0")
		if s.Changing != 1 || s.Unchanged != 2 || s.Failed != 1 || w0 == nil || len(w0.Children) != 1 || w0.Children[0].Kind != "Deployment" || w0.Children[0].Action != diff.Update {
			t.Fatalf("want w0's Deployment updated, w1 and w2 unchanged, w3 failed; got:\n%s", out)
		}
		d := w0.Children[0].Diff
		if strings.Count(d, "apps.example.com/settings-checksum:") != 2 || !strings.Contains(d, "-        apps.example.com/settings-checksum:") ||
			!strings.Contains(d, "+        apps.example.com/settings-checksum:") {
			t.Errorf("want the settings checksum changed in the Pod template:\n%s", d)
		}
		notFound(t, r)
		t.Logf("\n%s", out)
	})
}

// withVersion is o with the resourceVersion of the live object.
func withVersion(t *testing.T, c client.Client, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
		t.Fatal(err)
	}
	o.SetResourceVersion(live.GetResourceVersion())
	return o
}

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestDevConsoleShowsWarningsAndResolutions: of the operator's info lines,
// the console shows those that warn (a template warning) or tell that an
// error it logged is over (a refused kind served again), not the others.
func TestDevConsoleShowsWarningsAndResolutions(t *testing.T) {
	var out bytes.Buffer
	log, _, closeLog, err := devLogger(&zap.Options{}, false, t.TempDir(), &out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("serving kind", "kind", "K")
	log.Info("template warning", "kind", "K", "warning", "k.cue:9:25: status.x reads observed.d.status.y, which Deployment apps/v1 does not have")
	log.Info("schema change no longer refused: the kind serves revision r2", "kind", "K", "resolved", "template refused")
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"template warning", "which Deployment apps/v1 does not have", "schema change no longer refused: the kind serves revision r2"} {
		if !strings.Contains(got, want) {
			t.Errorf("console lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "serving kind") {
		t.Errorf("console shows an info line:\n%s", got)
	}
}

// TestDevHintListsServedKinds: the kubectl line dev prints lists the CRs
// of the kinds of the templates it serves.
func TestDevHintListsServedKinds(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	if got, want := devHint("kc", set), "kubectl --kubeconfig kc get blogs,redisclusters,staticsites,webapps -A"; got != want {
		t.Errorf("hint = %q, want %q", got, want)
	}
}

// TestDevLinesHaveNoEmptyFields: a rollout line of a kind with no CR and
// a storage migration line of a CRD with no CR say so.
func TestDevLinesHaveNoEmptyFields(t *testing.T) {
	if got, want := rolloutLine(operator.KindProgress{Kind: "K", Progress: reconcile.Progress{Revision: "r2", PerRevision: map[string]int{}}}),
		"revision r2: no CR yet; 0 in flight, 0 waiting"; got != want {
		t.Errorf("rollout line = %q, want %q", got, want)
	}
	p := migrate.Progress{From: []string{"v1"}, To: "v2", Pages: 1, Done: true}
	if got, want := p.String(), "v1 -> v2: no CR to rewrite; status.storedVersions is [v2]"; got != want {
		t.Errorf("migration line = %q, want %q", got, want)
	}
	p.Listed, p.Migrated = 1, 1
	if got, want := p.String(), "v1 -> v2: 1 CRs rewritten of 1 listed (1 page); status.storedVersions is [v2]"; got != want {
		t.Errorf("migration line = %q, want %q", got, want)
	}
}

// progressView is a devView whose only state is its kinds' rollouts.
type progressView struct{ ps []operator.KindProgress }

func (progressView) Parents() cache.Cache                            { return nil }
func (v progressView) Progress() []operator.KindProgress             { return v.ps }
func (progressView) StorageMigrations() []operator.MigrationProgress { return nil }

// TestDevRolloutsOfSameNamedKinds: two kinds of one Kind name in two
// groups (StaticSite of web.example.com and of web.example.org) are two
// kinds to the console: while neither rollout changes, no line is printed
// (the console once keyed them by name and printed both, flip-flopping,
// at every tick), and a change names the kind with its group.
func TestDevRolloutsOfSameNamedKinds(t *testing.T) {
	com := operator.KindProgress{Kind: "StaticSite", Package: "sitecom", GVK: schema.GroupVersionKind{Group: "web.example.com", Version: "v1", Kind: "StaticSite"},
		Progress: reconcile.Progress{Revision: "r1", PerRevision: map[string]int{"r1": 1}}}
	org := operator.KindProgress{Kind: "StaticSite", Package: "siteorg", GVK: schema.GroupVersionKind{Group: "web.example.org", Version: "v1", Kind: "StaticSite"},
		Progress: reconcile.Progress{Revision: "r7", PerRevision: map[string]int{}}}
	var out strings.Builder
	last := map[schema.GroupKind]string{}
	for range 4 {
		printRollouts(&out, progressView{[]operator.KindProgress{com, org}}, last)
	}
	if out.Len() != 0 {
		t.Errorf("rollouts that did not change printed lines:\n%s", out.String())
	}
	org.Revision, org.Previous, org.PerRevision = "r8", "r7", map[string]int{"r7": 1}
	printRollouts(&out, progressView{[]operator.KindProgress{com, org}}, last)
	printRollouts(&out, progressView{[]operator.KindProgress{com, org}}, last)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "rollout StaticSite.web.example.org ") || !strings.HasSuffix(lines[0], "revision r8: 1 on r7; 0 in flight, 0 waiting") {
		t.Errorf("the org kind's new revision printed %q, want one line of rollout StaticSite.web.example.org", out.String())
	}
}

// TestDevNamesSameNamedKindsByGroup: a CR's status line, the samples not
// Ready and the kubectl hint tell two kinds of one Kind name apart by
// their group, and a kind whose name is its own keeps its short name.
func TestDevNamesSameNamedKindsByGroup(t *testing.T) {
	var out strings.Builder
	cr := func(group, ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": ready, "reason": "R"}}}}}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "StaticSite"})
		u.SetNamespace("default")
		u.SetName("docs")
		return u
	}
	com, org := cr("web.example.com", "True"), cr("web.example.org", "False")
	p := newPrinter(&out, nil, []*unstructured.Unstructured{com, org})
	p.kinds = []schema.GroupKind{com.GroupVersionKind().GroupKind(), org.GroupVersionKind().GroupKind(), {Group: "cache.example.com", Kind: "RedisCluster"}}
	p.show(com)
	p.show(org)
	for _, want := range []string{"StaticSite.web.example.com default/docs", "StaticSite.web.example.org default/docs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no status line of %s:\n%s", want, out.String())
		}
	}
	if got, want := p.notReady(), "StaticSite.web.example.org default/docs: Ready=False (R)"; got != want {
		t.Errorf("not ready: %q, want %q", got, want)
	}
	if got := (crID{kind: schema.GroupKind{Group: "cache.example.com", Kind: "RedisCluster"}, namespace: "a", name: "b"}).label(p.kinds); got != "RedisCluster a/b" {
		t.Errorf("a kind of a name of its own is labelled %q", got)
	}
	set := &template.Set{Kinds: []*template.Kind{
		{Resource: template.Resource{Group: "web.example.com", Kind: "StaticSite", Plural: "staticsites"}},
		{Resource: template.Resource{Group: "web.example.org", Kind: "StaticSite", Plural: "staticsites"}},
		{Resource: template.Resource{Group: "cache.example.com", Kind: "RedisCluster", Plural: "redisclusters"}},
	}}
	if got, want := devHint("kc", set), "kubectl --kubeconfig kc get staticsites.web.example.com,staticsites.web.example.org,redisclusters -A"; got != want {
		t.Errorf("hint = %q, want %q", got, want)
	}
}

// siteKind is a kind StaticSite of group, in package pkg, whose CR
// renders a ConfigMap.
func siteKind(pkg, group string) string {
	return `package ` + pkg + `

resource: {group: "` + group + `", version: "v1", kind: "StaticSite"}
#Spec: {}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "` + pkg + `-" + parent.metadata.name, data: v: "1"}
`
}

// TestDevSameNamedKinds runs `cueop dev` on two kinds StaticSite, of
// web.example.com and of web.example.org, with a CR of each named
// default/docs: each CR's status line names its kind with its group, no
// rollout line repeats itself (the console once keyed the kinds by name
// and printed both rollouts at every tick, forever), and while the org
// kind's template is broken the line of the kinds' ServiceAccounts still
// lists it, as broken, its last good revision serving.
func TestDevSameNamedKinds(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue":  testModule,
		"templates/sitecom/sitecom.cue": siteKind("sitecom", "web.example.com"),
		"templates/siteorg/siteorg.cue": siteKind("siteorg", "web.example.org"),
		"samples/com.yaml":              "apiVersion: web.example.com/v1\nkind: StaticSite\nmetadata: {name: docs, namespace: default}\nspec: {}\n",
		"samples/org.yaml":              "apiVersion: web.example.org/v1\nkind: StaticSite\nmetadata: {name: docs, namespace: default}\nspec: {}\n",
	})
	templates := filepath.Join(dir, "templates")
	out, kubeconfig := startDev(t, templates, "--samples", filepath.Join(dir, "samples"), "--testdata", filepath.Join(dir, "testdata"))
	waitReadyLines(t, out, "StaticSite.web.example.com default/docs", "StaticSite.web.example.org default/docs")

	// The org kind breaks: its CR is still served, and the identities'
	// line says so.
	testkit.WriteKind(t, templates, "siteorg", siteKind("siteorg", "web.example.org")+"children: cm: data: v: 1 & 2\n")
	clustertest.Eventually(t, time.Minute, func() string {
		if !hasLine(out.String(), "kinds act as their own ServiceAccounts", "StaticSite.web.example.com as ", "StaticSite.web.example.org as ", "(template broken: its last good revision serves)") {
			return "no line lists the broken kind as broken:\n" + out.String()
		}
		return ""
	})
	// The org kind serves its last good revision: a new CR of it converges.
	kubectlAt(t, kubeconfig, "apiVersion: web.example.org/v1\nkind: StaticSite\nmetadata: {name: more, namespace: default}\nspec: {}\n", "apply", "-f", "-")
	waitReadyLines(t, out, "StaticSite.web.example.org default/more")

	seen := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "kinds act as their own ServiceAccounts") && !strings.Contains(line, "StaticSite.web.example.org as ") {
			t.Errorf("a line of the kinds' ServiceAccounts drops the org kind: %s", line)
		}
		if _, rest, ok := strings.Cut(line, "  rollout "); ok {
			if seen[rest] {
				t.Errorf("a rollout line repeats itself: %s", line)
			}
			seen[rest] = true
		}
	}
}

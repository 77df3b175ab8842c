package main

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/template"
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
	set, err := template.Load("../../templates")
	if err != nil {
		t.Fatal(err)
	}
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

package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestCRDClaimedMeanwhileIsNotOverwritten: a CRD that names no operator
// instance is held by the first
// operator that applies it. Two installs starting together both read it
// unclaimed (applied by a cueop before the record: its field manager);
// the one whose apply comes second must not overwrite the
// first's record and serve the kind beside it. The other instance's claim
// is made here between the read of the live CRD and the apply (the
// window of the race): the apply is refused and the CRD still names the
// first instance.
func TestCRDClaimedMeanwhileIsNotOverwritten(t *testing.T) {
	const widgetCRD = "widgets.evil.example.com"
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate, "template/"+widgetCRD)
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+redisCRD, "crd/"+widgetCRD)
	})
	set, err := template.Load("../../templates")
	must(t, err)
	redis := set.Lookup("cache.example.com", "RedisCluster")
	mustKubectl(t, "", "apply", "--server-side", "--field-manager=cueop", "-f", "../../crds/"+redisCRD+".yaml")
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+redisCRD)

	dir := copyTemplates(t) // its cue.mod; team-b's one kind is Widget
	for _, k := range set.Kinds {
		must(t, os.RemoveAll(filepath.Join(dir, k.Name)))
	}
	must(t, os.MkdirAll(filepath.Join(dir, "widget"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "widget", "widget.cue"), []byte(widgetPackage), 0o644))
	opts := operatortest.Options(dir, clustertest.Namespace(t))
	opts.Instance = "team-b/cueop"
	b, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	b.WaitLog(t, 90*time.Second, "serving kind", "package", "widget")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = b.Operator.InstallCRDThen(ctx, redis, func() func() {
		// Instance team-a/cueop applies the CRD first.
		mustKubectl(t, "", "annotate", "--overwrite", "crd/"+redisCRD, wellknown.AnnotationOperator+"=team-a/cueop")
		return func() {}
	})
	t.Logf("apply: %v", err)
	if err == nil {
		t.Errorf("team-b/cueop applied the CRD %s claimed by team-a/cueop since it was read: no error", redisCRD)
	}
	if ann, _ := crdAnnotations(t, redisCRD); ann[wellknown.AnnotationOperator] != "team-a/cueop" {
		t.Errorf("CRD %s names %q, want team-a/cueop, which claimed it first", redisCRD, ann[wellknown.AnnotationOperator])
	}
}

// TestWaitingKindHeldByAnotherOperator: with --install-crds=false, a kind
// waits for its CRD; the CRD that comes names another operator instance
// (another install applied it): the waiting operator neither serves the
// kind nor points the CRD at itself, as when the CRD was there at its
// start (before: the wait's end started the controller without asking
// who holds the CRD, and both installs served the kind).
func TestWaitingKindHeldByAnotherOperator(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{
		"aardvark": strings.NewReplacer("%[1]s", "aardvark", "%[2]s", "Aardvark").Replace(waiterTemplate),
	})
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs, opts.Instance = false, "team-a/cueop"
	act, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	act.WaitLog(t, 60*time.Second, "kind waits for its CRD", "kind", "Aardvark")

	crd := map[string]any{}
	must(t, yaml.Unmarshal([]byte(waiterCRDs(t, dir)["Aardvark"]), &crd))
	meta := crd["metadata"].(map[string]any)
	meta["annotations"] = map[string]any{wellknown.AnnotationOperator: "team-b/cueop"}
	b, err := yaml.Marshal(crd)
	must(t, err)
	installCRD(t, string(b), "aardvarks.crdwait.example.com")
	eventually(t, 60*time.Second, func() string {
		if len(act.Logged("serving kind", "kind", "Aardvark")) == 0 && len(act.Logged("kind not served: another operator holds it", "kind", "Aardvark.crdwait.example.com")) == 0 {
			return "Aardvark neither served nor refused once its CRD, held by team-b/cueop, was applied"
		}
		return ""
	})
	if served := act.Logged("serving kind", "kind", "Aardvark"); len(served) > 0 {
		t.Errorf("team-a/cueop serves Aardvark, whose CRD names team-b/cueop: %+v", served)
	}
	if got := act.Operator.HeldElsewhere()["aardvark"]; got != "team-b/cueop" {
		t.Errorf("kinds held elsewhere %v, want aardvark: team-b/cueop", act.Operator.HeldElsewhere())
	}
}

// TestTakenOverCRDNotRepointed: with --install-crds=false, an operator
// whose kind another instance took over since (the CRD names
// team-b/cueop) does not point the CRD's conversion webhook back at
// itself when its certificate changes or its periodic check runs (before:
// pointLiveIf wrote the clientConfig of any CRD of a kind it served).
func TestTakenOverCRDNotRepointed(t *testing.T) {
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	mustKubectl(t, "", "apply", "--server-side", "--field-manager=cueop", "-f", "../../crds/"+redisCRD+".yaml")
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+redisCRD)
	mustKubectl(t, "", "annotate", "--overwrite", "crd/"+redisCRD, wellknown.AnnotationOperator+"=team-b/cueop")
	_, rv := crdAnnotations(t, redisCRD)

	conv, err := operator.LocalConversion()
	must(t, err)
	opts := operatortest.Options(copyTemplates(t), clustertest.Namespace(t))
	opts.InstallCRDs, opts.Instance, opts.Conversion = false, "team-a/cueop", conv
	a, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = a.Operator.PointLiveCRD(ctx, redisCRD)
	if err == nil || !strings.Contains(err.Error(), "team-b/cueop") {
		t.Errorf("pointing CRD %s held by team-b/cueop: %v, want an error naming the holder", redisCRD, err)
	}
	if _, now := crdAnnotations(t, redisCRD); now != rv {
		t.Errorf("CRD %s written (resourceVersion %s, was %s) by team-a/cueop, which no longer holds it", redisCRD, now, rv)
	}
}

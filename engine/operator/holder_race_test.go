package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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

package diff_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestDiffSelectorReference diffs a kind that references the ConfigMaps a
// label selects, across every namespace: a ConfigMap labelled in after
// the operator stopped shows in the digest's update; one labelled alike in
// another namespace never does.
func TestDiffSelectorReference(t *testing.T) {
	dir := testkit.Templates(t, map[string]string{"digest/digest.cue": testkit.DigestKind})
	ns, other := clustertest.Namespace(t), clustertest.Namespace(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, time.Minute, "digests.compose.test.example")
	c := newClient(t, clustertest.Config())
	ctx := context.Background()
	labelled := func(ns, name string) *unstructured.Unstructured {
		cm := settings(ns, name, "")
		cm.SetLabels(map[string]string{"digest": "d"})
		return cm
	}
	for _, o := range []*unstructured.Unstructured{labelled(ns, "a"), labelled(other, "z")} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	digestGVK := schema.GroupVersionKind{Group: "compose.test.example", Version: "v1", Kind: "Digest"}
	if err := c.Create(ctx, clustertest.Object(digestGVK, ns, "d", map[string]any{"spec": map[string]any{}})); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, time.Minute, func() string {
		if got, err := clustertest.ConfigMapData(c, ns, "d-digest", "names"); err != nil {
			return err.Error()
		} else if got != "a" {
			return "names " + got + ", want a"
		}
		return ""
	})
	a.Settled(t, 0, time.Minute)
	stop()

	opts := diff.Options{Kinds: []string{"Digest"}} // every namespace
	if r := run(t, dir, opts); r.ExitCode() != 0 || len(r.CRs) != 0 {
		t.Fatalf("want the digest unchanged, exit 0 (the ConfigMap of %s not read for it):\n%s", other, text(t, r))
	}
	if err := c.Create(ctx, labelled(ns, "b")); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, opts)
	out := text(t, r)
	if r.ExitCode() != 1 || len(r.CRs) != 1 || len(r.CRs[0].Children) != 1 || r.CRs[0].Children[0].Action != diff.Update ||
		!strings.Contains(out, "-  names: a\n") || !strings.Contains(out, "+  names: a,b\n") {
		t.Fatalf("want the digest updated to a,b, exit 1; got exit %d:\n%s", r.ExitCode(), out)
	}
}

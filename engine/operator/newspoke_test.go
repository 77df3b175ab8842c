package operator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestNewSpokeConvertsBeforeServed: a revision that adds a spoke (v1beta1, a
// copy of v2) converts to it before its CRD serves it: at the first CRD
// event that serves v1beta1, the webhook's converter of RedisCluster converts a
// stored CR to v1beta1 already, and kubectl reads the CR at v1beta1.
func TestNewSpokeConvertsBeforeServed(t *testing.T) {
	ns, dir := startRedisFleet(t)
	mustKubectl(t, redisYAML(ns, "one", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 2) })
	stored, err := getAt(t, "redisclusters.v1.cache.example.com", ns, "one")
	must(t, err)

	cs, err := apiextensionsclient.NewForConfig(clustertest.Config())
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w, err := cs.ApiextensionsV1().CustomResourceDefinitions().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", redisCRD).String(),
	})
	must(t, err)
	defer w.Stop()

	spoke := strings.Replace(testkit.Read(t, dir, "rediscluster/v2.cue"), "versions: v2: {", "versions: v1beta1: {", 1)
	testkit.Write(t, dir, map[string]string{"rediscluster/v1beta1.cue": spoke})

	reg := operatortest.SharedConversion().Registry
	gk := schema.GroupKind{Group: "cache.example.com", Kind: "RedisCluster"}
	for ev := range w.ResultChan() {
		crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1beta1" && v.Served }) {
			continue
		}
		conv, ok := reg.Get(gk)
		if !ok {
			t.Fatal("the CRD serves v1beta1 and no converter of RedisCluster is set")
		}
		if _, err := conv.Convert(stored.DeepCopy(), "v1beta1"); err != nil {
			t.Fatalf("the CRD serves v1beta1 before its converter does: %v", err)
		}
		eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1beta1", ns, "one", 2) })
		return
	}
	t.Fatal("the CRD never served v1beta1: ", ctx.Err())
}

// TestRefusedNewSpokeNeverConverts: a revision that adds a spoke and
// that the schema guard refuses (it also narrows the stored hub's
// replicas) never converts: its converter is set only once the guard
// passed it, just before its CRD is applied, so that no review meanwhile
// converts, nor stores a CR, by a refused revision's conversions.
func TestRefusedNewSpokeNeverConverts(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	dir := copyTemplates(t)
	a := startOperator(t, dir, ns, nil)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "one", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 2) })

	narrow := func(field string) func(string) string {
		return func(src string) string {
			return strings.Replace(src, field+": *3 | int & >=1 & <=100", field+": *3 | int & >=1 & <=50", 1)
		}
	}
	spoke := strings.Replace(narrow("size")(testkit.Read(t, dir, "rediscluster/v2.cue")), "versions: v2: {", "versions: v1beta1: {", 1)
	// Each file as it is written makes a revision whose conversions the
	// check refuses (a bound of 100 on one side, 50 on the other); the
	// last one's convert, and the guard refuses it.
	testkit.Write(t, dir, map[string]string{"rediscluster/v1beta1.cue": spoke})
	editFile(t, dir+"/rediscluster/v2.cue", narrow("size"))
	editFile(t, dir+"/rediscluster/rediscluster.cue", narrow("replicas"))
	set, err := template.Load(dir)
	must(t, err)
	rev := set.Lookup("cache.example.com", "RedisCluster").Revision
	a.WaitLog(t, 60*time.Second, "(revision "+rev+") refused: the CRD is left as it is")
	if got := a.Logged("conversions served", "revision", rev); len(got) > 0 {
		t.Errorf("the refused revision %s converted: %v", rev, got)
	}
	if _, err := getAt(t, "redisclusters.v1beta1.cache.example.com", ns, "one"); err == nil {
		t.Error("the CRD serves v1beta1 of the refused revision")
	}
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v2", ns, "one", 2) })
}

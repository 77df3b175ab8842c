package operator_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

const redisCRD = "redisclusters.cache.example.com"

// TestStorageVersionSwitch walks the RedisCluster through "Evolving a
// kind" on the operator's own templates and conversion webhook: CRs
// created at v1 and at v2 read at both versions with every field, one
// written at v2 reads back at v1, and they converge; the templates
// swapped in place to testdata/versions (v2 hub and storage, v1 a spoke)
// make v2 the CRD's storage version and the stored CRs are migrated
// (storedVersions ends [v2]) while they stay Ready with the same Pods;
// then a revision without v1 is taken.
func TestStorageVersionSwitch(t *testing.T) {
	ns, dir := startRedisFleet(t)

	mustKubectl(t, redisYAML(ns, "one", 2, "7.0")+"  minReady: 1\n", "apply", "-f", "-")
	mustKubectl(t, redisV2YAML(ns, "two", 3, "7.2", 2), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "one", 2) + redisReadyAt(t, "v1", ns, "two", 3) })
	checkRedisAt(t, ns, "one", 2, "7.0", 1)
	checkRedisAt(t, ns, "two", 3, "7.2", 2)
	mustKubectl(t, "", "-n", ns, "patch", "redisclusters.v2.cache.example.com", "two", "--type=merge", "-p", `{"spec":{"size":4}}`)
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "two", 4) })
	checkRedisAt(t, ns, "two", 4, "7.2", 2)

	c := newClient(t)
	pods := podUIDs(t, c, ns, "one") + ";" + podUIDs(t, c, ns, "two")
	swapToVersionsStep(t, dir)
	eventually(t, 120*time.Second, func() string {
		// Ready throughout: every poll until the migration ends.
		if why := redisReadyAt(t, "v2", ns, "one", 2) + redisReadyAt(t, "v2", ns, "two", 4); why != "" {
			t.Fatalf("a RedisCluster not Ready during the storage switch: %s", why)
		}
		return crdVersions(t, "v2", "v2,v1", "v2")
	})
	checkRedisAt(t, ns, "one", 2, "7.0", 1)
	checkRedisAt(t, ns, "two", 4, "7.2", 2)
	if got := podUIDs(t, c, ns, "one") + ";" + podUIDs(t, c, ns, "two"); got != pods {
		t.Errorf("Pods changed by the storage switch: %s, were %s", got, pods)
	}

	testkit.Remove(t, dir, "rediscluster/v1.cue")
	eventually(t, 60*time.Second, func() string { return crdVersions(t, "v2", "v2", "v2") })
	if _, err := kubectl(t, "", "-n", ns, "get", "redisclusters.v1.cache.example.com", "one"); err == nil {
		t.Error("v1 still served after the revision dropping it")
	}
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v2", ns, "one", 2) + redisReadyAt(t, "v2", ns, "two", 4) })
	if got := podUIDs(t, c, ns, "one") + ";" + podUIDs(t, c, ns, "two"); got != pods {
		t.Errorf("Pods changed by dropping v1: %s, were %s", got, pods)
	}
}

func redisV2YAML(ns, name string, size int, version string, minReady int) string {
	return "apiVersion: cache.example.com/v2\nkind: RedisCluster\nmetadata:\n  name: " + name +
		"\n  namespace: " + ns + "\nspec:\n  size: " + strconv.Itoa(size) + "\n  redisVersion: \"" + version +
		"\"\n  minReady: " + strconv.Itoa(minReady) + "\n"
}

// swapToVersionsStep rewrites the RedisCluster package of dir into
// testdata/versions' (v2 the hub, v1 a spoke), in the order an author
// would save the files: v1.cue, the hub, then v2.cue removed (the
// revisions between are refused; the last good one keeps serving).
func swapToVersionsStep(t *testing.T, dir string) {
	t.Helper()
	src := "../../testdata/versions/rediscluster"
	testkit.Write(t, dir, map[string]string{"rediscluster/v1.cue": testkit.Read(t, src, "v1.cue")})
	hub := testkit.Read(t, src, "rediscluster.cue")
	editFile(t, dir+"/rediscluster/rediscluster.cue", func(string) string { return hub })
	testkit.Remove(t, dir, "rediscluster/v2.cue")
}

// startRedisFleet runs an operator on a copy of the shipped templates
// (returned, for the test to edit) serving a namespace of its own (ns),
// and waits for the RedisCluster CRD it installs; the CRD is deleted once
// the operator stopped.
func startRedisFleet(t *testing.T) (ns, dir string) {
	t.Helper()
	ns = clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, redisCRD) // registered first, run last: after the operator stopped
	dir = copyTemplates(t)
	startOperator(t, dir, ns, nil)
	waitCRD(t)
	return ns, dir
}

// getAt reads the object resource (plural.version.group) ns/name with
// kubectl, as a user would.
func getAt(t *testing.T, resource, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	out, err := kubectl(t, "", "get", resource, "-n", ns, name, "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("kubectl get %s %s/%s: %s", resource, ns, name, out)
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON([]byte(out))
}

// redisReadyAt says why the RedisCluster read at version is not Ready
// and Running with want Pods ready at its generation, or "".
func redisReadyAt(t *testing.T, version, ns, name string, want int64) string {
	cr, err := getAt(t, "redisclusters."+version+".cache.example.com", ns, name)
	if err != nil {
		return err.Error()
	}
	ready, _, _ := unstructured.NestedInt64(cr.Object, "status", "readyReplicas")
	phase, _, _ := unstructured.NestedString(cr.Object, "status", "phase")
	gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	if ready != want || phase != "Running" || gen != cr.GetGeneration() || conditionStatus(cr, "Ready") != "True" {
		return fmt.Sprintf("%s %s at %s: status = %v; ", ns, name, version, cr.Object["status"])
	}
	return ""
}

// checkRedisAt checks the RedisCluster's spec read at v1 and at v2: every
// field, renamed, and no conversion annotation shown.
func checkRedisAt(t *testing.T, ns, name string, size int, version string, minReady int) {
	t.Helper()
	want := map[string]string{
		"v1": fmt.Sprintf(`{"minReady":%d,"replicas":%d,"version":%q}`, minReady, size, version),
		"v2": fmt.Sprintf(`{"minReady":%d,"redisVersion":%q,"size":%d}`, minReady, version, size),
	}
	for _, v := range []string{"v1", "v2"} {
		cr, err := getAt(t, "redisclusters."+v+".cache.example.com", ns, name)
		must(t, err)
		if got := jsonText(cr.Object["spec"]); got != want[v] || cr.GetAPIVersion() != "cache.example.com/"+v {
			t.Errorf("%s/%s read at %s: %s spec %s, want %s", ns, name, v, cr.GetAPIVersion(), got, want[v])
		}
		for a := range cr.GetAnnotations() {
			if strings.HasPrefix(a, "cueop.dev/conversion.") {
				t.Errorf("%s/%s read at %s shows the annotation %s", ns, name, v, a)
			}
		}
	}
}

// crdVersions says how the RedisCluster CRD differs from storing storage,
// serving served (comma-separated) and listing stored in
// status.storedVersions, or "".
func crdVersions(t *testing.T, storage, served, stored string) string {
	out, err := kubectl(t, "", "get", "crd", redisCRD, "-o",
		`jsonpath={.spec.versions[?(@.storage==true)].name};{.spec.versions[*].name};{.status.storedVersions[*]}`)
	if err != nil {
		return out
	}
	want := storage + ";" + strings.ReplaceAll(served, ",", " ") + ";" + strings.ReplaceAll(stored, ",", " ")
	if out != want {
		return fmt.Sprintf("CRD storage;served;storedVersions = %q, want %q", out, want)
	}
	return ""
}

// TestStorageVersionSwitchResumed: the RedisCluster's templates switched
// to the v2 hub while no operator runs; an operator that migrates one CR a
// page, slowly, is stopped after two pages and a new one resumes the
// migration from the checkpoint (each CR stored at v1, read and written at
// v2 through the conversion webhook) and ends it: storedVersions [v2], a
// StorageMigrationResumed Event, no managedFields entry left at v1, every
// CR Ready.
func TestStorageVersionSwitchResumed(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	dir := copyTemplates(t)
	_, stop := startOperatorStoppable(t, dir, ns, nil)
	waitCRD(t)
	const n = 8
	allReady := func(version string) string {
		var why string
		for i := range n {
			why += redisReadyAt(t, version, ns, fmt.Sprintf("r%d", i), 1)
		}
		return why
	}
	for i := range n {
		mustKubectl(t, redisYAML(ns, fmt.Sprintf("r%d", i), 1, "7.0"), "apply", "-f", "-")
	}
	eventually(t, 120*time.Second, func() string { return allReady("v1") })
	stop()

	swapToVersionsStep(t, dir)
	slow := rest.CopyConfig(clustertest.Config())
	slow.QPS, slow.Burst = 4, 4
	opts := operatortest.Options(dir, ns)
	opts.StorageMigrationPageSize = 1
	stop = operatortest.Start(t, slow, opts)
	c := crdClient(t)
	waitCheckpoint(t, c, redisCRD, 2)
	stop()
	if got := getCRDNamed(t, c, redisCRD).Status.StoredVersions; len(got) != 2 {
		t.Fatalf("storedVersions = %v after two pages of one CR, want [v1 v2] still", got)
	}
	k, withoutV1 := redisWithoutV1(t, dir)
	if r := guardCRD(t, redisCRD, k, withoutV1); r == nil || !strings.Contains(r.Error(), "v1: version served -> not served") {
		t.Errorf("dropping v1 before the migration ended: refusal %v, want one naming v1", r)
	}

	a, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	eventually(t, 120*time.Second, func() string { return crdVersions(t, "v2", "v2,v1", "v2") })
	if r := guardCRD(t, redisCRD, k, withoutV1); r != nil {
		t.Errorf("dropping v1 after the migration refused: %v", r)
	}
	if ms := a.Operator.StorageMigrations(); len(ms) != 1 || !ms[0].Done || !ms[0].Resumed || ms[0].Migrated < 1 || ms[0].Fields < 1 {
		t.Errorf("StorageMigrations() = %+v, want one, resumed and done, that moved managedFields", ms)
	}
	for i := range n { // applied by kubectl at v1: the pages of both passes moved their managedFields
		if at := fieldsAt(t, ns, fmt.Sprintf("r%d", i), "v1"); len(at) > 0 {
			t.Errorf("r%d: managedFields entries left at v1 by the resumed migration: %v", i, at)
		}
	}
	eventually(t, 120*time.Second, func() string { return allReady("v2") })
}

// redisWithoutV1 is the RedisCluster of the templates dir without its v1
// spoke, and its CRD (v2 alone), from a copy of dir.
func redisWithoutV1(t *testing.T, dir string) (*template.Kind, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	next := copyTemplatesFrom(t, dir)
	testkit.Remove(t, next, "rediscluster/v1.cue")
	set, err := template.Load(next)
	must(t, err)
	for _, k := range set.Kinds {
		if k.Name == "rediscluster" {
			crd, err := crdgen.Generate(k)
			must(t, err)
			return k, crd
		}
	}
	t.Fatal("no rediscluster kind in " + next)
	return nil, nil
}

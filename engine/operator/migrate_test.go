package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// shelfTemplate is a kind served at v2; its CRD's v1 is the same schema
// (conversion None), so that no webhook is needed.
const shelfTemplate = `package shelf

resource: {group: "migrate.example.com", version: "v2", kind: "Shelf", plural: "shelves"}

#Spec: books: *1 | int & >=0
#Status: books: int

parent: {metadata: name: string, spec: #Spec}
observed: [string]: {...}
children: {}
status: #Status & {books: parent.spec.books}
`

const shelfCRD = "shelves.migrate.example.com"

// shelfCRDs loads the Shelf template of dir and returns its generated CRD
// (v2 only) and the same with v1 served beside it, the same schema, v1
// the storage version.
func shelfCRDs(t *testing.T, dir string) (k *template.Kind, v2only, both *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	set := templatetest.Load(t, dir)
	k = set.Kinds[0]
	v2only, err := crdgen.Generate(k)
	if err != nil {
		t.Fatal(err)
	}
	both = v2only.DeepCopy()
	v1 := *both.Spec.Versions[0].DeepCopy()
	v1.Name, v1.Storage, both.Spec.Versions[0].Storage = "v1", true, false
	both.Spec.Versions = append([]apiextensionsv1.CustomResourceDefinitionVersion{v1}, both.Spec.Versions...)
	return k, v2only, both
}

// setStorage makes version the storage version of the Shelf CRD.
func setStorage(t *testing.T, c client.Client, version string) {
	t.Helper()
	crd := getCRD(t, c)
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
	}
	must(t, c.Update(context.Background(), crd))
}

func getCRD(t *testing.T, c client.Client) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return getCRDNamed(t, c, shelfCRD)
}

func getCRDNamed(t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, c.Get(context.Background(), client.ObjectKey{Name: name}, crd))
	return crd
}

// createShelves creates n Shelves at v1 and returns their resourceVersions.
func createShelves(t *testing.T, c client.Client, ns string, n int) map[string]string {
	t.Helper()
	rvs := map[string]string{}
	for i := range n {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "migrate.example.com/v1", "kind": "Shelf",
			"metadata": map[string]any{"name": fmt.Sprintf("s%02d", i), "namespace": ns},
			"spec":     map[string]any{"books": int64(i)},
		}}
		must(t, c.Create(context.Background(), u))
		rvs[u.GetName()] = u.GetResourceVersion()
	}
	return rvs
}

// TestStorageMigration switches the storage version of a kind with 20 CRs
// stored at v1 to v2: the schema guard refuses a revision that stops
// serving v1, naming it and the stored CRs; an operator migrating 2 CRs a
// page is stopped after two pages and a new one resumes from its
// checkpoint; every CR is stored anew (its resourceVersion moved),
// status.storedVersions ends as [v2], the CRD's StorageMigrating condition
// and Events say so; then the revision without v1 is taken.
func TestStorageMigration(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, k, v2only, rvs := shelvesSwitched(t, c, ns, 20, true)

	refusal := guardShelf(t, k, v2only)
	if refusal == nil || refusal.Stored != 20 ||
		!strings.Contains(refusal.Error(), "v1: version served -> not served") ||
		!strings.Contains(refusal.Error(), "status.storedVersions lists it; 20 stored CRs") {
		t.Fatalf("dropping v1 with 20 CRs stored at it: refusal %v, want one naming v1 and 20 stored CRs", refusal)
	}

	// A slow operator (5 rewrites a second), stopped after two pages.
	slow := rest.CopyConfig(clustertest.Config())
	slow.QPS, slow.Burst = 10, 10
	started := time.Now()
	stop := operatortest.Start(t, slow, migrateOptions(dir, ns))
	cp := waitCheckpoint(t, c, shelfCRD, 2)
	t.Logf("two pages %.1fs after the slow operator started", time.Since(started).Seconds())
	stop()
	if got := getCRD(t, c).Status.StoredVersions; len(got) != 2 {
		t.Fatalf("storedVersions = %v after two pages of ten, want [v1 v2] still", got)
	}
	// Meanwhile, one CR the pass has not reached is deleted and another
	// changed: the resumed pass lists them as they were (its snapshot).
	mustKubectl(t, "", "-n", ns, "delete", "shelves.v2.migrate.example.com", "s19")
	mustKubectl(t, "", "-n", ns, "patch", "shelves.v2.migrate.example.com", "s18", "--type=merge", "-p", `{"spec":{"books":100}}`)
	delete(rvs, "s19")

	op, err := operator.New(clustertest.Config(), migrateOptions(dir, ns))
	must(t, err)
	started = time.Now()
	operatortest.Run(t, op)
	waitStoredV2(t, c)
	t.Logf("resumed at page %v and done %.1fs after the operator started", cp["pages"], time.Since(started).Seconds())
	checkMigrated(t, c, ns, rvs)
	checkMigrationShown(t, c, op, cp)

	if r := guardShelf(t, k, v2only); r != nil {
		t.Fatalf("dropping v1 after the migration refused: %v", r)
	}
	// The template's own CRD, v2 alone, is applied by an operator that
	// installs it.
	operatortest.Start(t, clustertest.Config(), operatortest.Options(dir, ns))
	eventually(t, 60*time.Second, func() string {
		if vs := getCRD(t, c).Spec.Versions; len(vs) != 1 || vs[0].Name != "v2" {
			return fmt.Sprintf("CRD versions %d, want v2 alone", len(vs))
		}
		return ""
	})
}

// crdClient is a client that knows CustomResourceDefinitions.
func crdClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(s))
	must(t, apiextensionsv1.AddToScheme(s))
	c, err := client.New(clustertest.Config(), client.Options{Scheme: s})
	must(t, err)
	return c
}

// shelvesSwitched installs the Shelf CRD with v1 stored, creates n Shelves
// at v1 in ns, and, with switchStorage, makes v2 the storage version. It returns the templates
// directory, the kind, its own CRD (v2 alone) and the Shelves'
// resourceVersions. The CRD is deleted at the test's end.
func shelvesSwitched(t *testing.T, c client.Client, ns string, n int, switchStorage bool) (string, *template.Kind, *apiextensionsv1.CustomResourceDefinition, map[string]string) {
	t.Helper()
	dir := kindsDir(t, map[string]string{"shelf": shelfTemplate})
	k, v2only, both := shelfCRDs(t, dir)
	clustertest.DeleteCRDsAtEnd(t, shelfCRD)
	must(t, c.Create(context.Background(), both))
	eventually(t, 60*time.Second, func() string {
		for _, cond := range getCRD(t, c).Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return ""
			}
		}
		return fmt.Sprintf("CRD not established: %+v", getCRD(t, c).Status.Conditions)
	})
	// Established is not yet discovered: the client's mapper may still
	// hold the group as an earlier test's Shelf CRD left it.
	eventually(t, 60*time.Second, func() string {
		if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "migrate.example.com", Kind: "Shelf"}, "v1"); err != nil {
			return "Shelf v1 not discovered: " + err.Error()
		}
		return ""
	})
	rvs := createShelves(t, c, ns, n)
	if switchStorage {
		storeAtV2(t, c)
	}
	return dir, k, v2only, rvs
}

// storeAtV2 makes v2 the storage version of the Shelf CRD.
func storeAtV2(t *testing.T, c client.Client) {
	t.Helper()
	setStorage(t, c, "v2")
	if got := getCRD(t, c).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Fatalf("storedVersions = %v, want [v1 v2]", got)
	}
}

// waitStoredV2 waits until the Shelf CRD's storedVersions is [v2].
func waitStoredV2(t *testing.T, c client.Client) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		if got := getCRD(t, c).Status.StoredVersions; strings.Join(got, ",") != "v2" {
			return fmt.Sprintf("storedVersions %v, want [v2]", got)
		}
		return ""
	})
}

// checkMigrated checks that every Shelf was stored anew and that the
// checkpoint is gone.
func checkMigrated(t *testing.T, c client.Client, ns string, rvs map[string]string) {
	t.Helper()
	checkStoredAnew(t, c, ns, rvs)
	if a := getCRD(t, c).Annotations[wellknown.AnnotationStorageMigration]; a != "" {
		t.Errorf("checkpoint %s left on the CRD", a)
	}
}

// checkStoredAnew checks that the resourceVersion of each Shelf of rvs
// moved.
func checkStoredAnew(t *testing.T, c client.Client, ns string, rvs map[string]string) {
	t.Helper()
	for name, rv := range rvs {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("migrate.example.com/v2")
		u.SetKind("Shelf")
		must(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
		if u.GetResourceVersion() == rv {
			t.Errorf("Shelf %s: resourceVersion %s unchanged: not stored anew", name, rv)
		}
	}
}

// checkMigrationShown checks the CRD's condition, its Events, the metric
// and the operator's StorageMigrations after the resumed migration.
func checkMigrationShown(t *testing.T, c client.Client, op *operator.Operator, cp map[string]any) {
	t.Helper()
	crd := getCRD(t, c)
	var cond *apiextensionsv1.CustomResourceDefinitionCondition
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == wellknown.CRDConditionStorageMigrating {
			cond = &crd.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != apiextensionsv1.ConditionFalse || cond.Reason != wellknown.CRDReasonStorageMigrationSucceeded ||
		!strings.Contains(cond.Message, "v1 -> v2") {
		t.Errorf("StorageMigrating condition %+v, want False, %s, v1 -> v2", cond, wellknown.CRDReasonStorageMigrationSucceeded)
	}
	eventually(t, 30*time.Second, func() string {
		return missingEvents(t, c, "StorageMigrationStarted", "StorageMigrationResumed", "StorageMigrationSucceeded")
	})
	if msg := eventMessage(t, c, "StorageMigrationFailed"); msg != "" {
		t.Error("a StorageMigrationFailed Event on the CRD: " + msg)
	}
	if got := metricSum(t, "cueop_storage_migration_crs", "kind", "Shelf", "state", "listed"); got != 20 {
		t.Errorf("cueop_storage_migration_crs{state=listed} = %v, want 20 (the deleted one listed from the pass's snapshot)", got)
	}
	if got := metricSum(t, "cueop_storage_migration_crs", "kind", "Shelf", "state", "running"); got != 0 {
		t.Errorf("cueop_storage_migration_crs{state=running} = %v, want 0", got)
	}
	ms := op.StorageMigrations()
	if len(ms) != 1 || !ms[0].Done || !ms[0].Resumed || ms[0].Pages != 10 || float64(ms[0].Migrated) < cp["migrated"].(float64) {
		t.Errorf("StorageMigrations() = %+v, want one, done, resumed from %v, 10 pages", ms, cp)
	}
}

// missingEvents names the reasons of ours no Event on the Shelf CRD has.
func missingEvents(t *testing.T, c client.Client, reasons ...string) string {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range shelfCRDEvents(t, c) {
		seen[e.Reason] = true
	}
	var missing []string
	for _, r := range reasons {
		if !seen[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no Event %v on the CRD", missing)
	}
	return ""
}

func migrateOptions(dir, ns string) operator.Options {
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs, opts.InProcess, opts.StorageMigrationPageSize = false, true, 2
	return opts
}

// waitCheckpoint waits until the migration's checkpoint on the CRD crd
// counts pages pages, and returns it.
func waitCheckpoint(t *testing.T, c client.Client, crd string, pages float64) map[string]any {
	t.Helper()
	var cp map[string]any
	eventually(t, 60*time.Second, func() string {
		a := getCRDNamed(t, c, crd).Annotations[wellknown.AnnotationStorageMigration]
		cp = nil
		if a == "" || json.Unmarshal([]byte(a), &cp) != nil || cp["pages"].(float64) < pages {
			return "checkpoint " + a
		}
		return ""
	})
	return cp
}

// guardShelf is the schema guard's verdict on applying next over the
// Shelf CRD the cluster serves.
func guardShelf(t *testing.T, k *template.Kind, next *apiextensionsv1.CustomResourceDefinition) *schemacompat.Refusal {
	t.Helper()
	return guardCRD(t, shelfCRD, k, next)
}

// guardCRD is the schema guard's verdict on applying next, k's CRD, over
// the CRD crd the cluster serves.
func guardCRD(t *testing.T, crd string, k *template.Kind, next *apiextensionsv1.CustomResourceDefinition) *schemacompat.Refusal {
	t.Helper()
	ctx := context.Background()
	c := crdClient(t)
	live, err := schemaguard.Live(ctx, c, crd)
	must(t, err)
	r, err := schemaguard.Check(ctx, c, k, live, next)
	must(t, err)
	return r
}

// migrationRewrite says whether r is a CR rewrite of a storage migration.
func migrationRewrite(r testkit.Request) bool {
	return r.Method == http.MethodPatch && strings.Contains(r.Path, "/shelves/") && r.Query.Get("fieldManager") == migrate.FieldManager
}

// TestStorageMigrationShardedOneReplica: of two sharded replicas (2
// ranges, one each), only the holder of the first range migrates, when a
// new revision of the kind is served after the storage version moved.
func TestStorageMigrationShardedOneReplica(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, rvs := shelvesSwitched(t, c, ns, 10, false)
	requests := map[string]*testkit.Requests{} // by replica
	for _, id := range []string{"replica-a", "replica-b"} {
		cfg, reqs := testkit.CountRequests(clustertest.Config())
		requests[id] = reqs
		s, err := operator.NewSharded(cfg, migrateOptions(dir, ns), operator.Sharding{
			Shards: 2, Identity: id, Namespace: ns, LeaseDuration: shardLease, RenewDeadline: shardRenew, RetryPeriod: shardRetry,
		})
		must(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	holders := func() (string, string) {
		return leaseHolder(t, c, ns, shard.Range{Index: 0, Count: 2}), leaseHolder(t, c, ns, shard.Range{Index: 1, Count: 2})
	}
	eventually(t, 60*time.Second, func() string {
		if h0, h1 := holders(); h0 == "" || h1 == "" || h0 == h1 {
			return fmt.Sprintf("ranges held by %q and %q, want one each", h0, h1)
		}
		return ""
	})
	storeAtV2(t, c)
	testkit.WriteKind(t, dir, "shelf", shelfTemplate+"\n// a new revision\n")
	waitStoredV2(t, c)
	checkMigrated(t, c, ns, rvs)
	first, _ := holders()
	sent := map[string]int{} // the CR rewrites of the migration that reached the API server, by replica
	for id, reqs := range requests {
		if n := reqs.Count(migrationRewrite); n > 0 {
			sent[id] = n
		}
	}
	if len(sent) != 1 || sent[first] < 10 {
		t.Errorf("rewrites sent by %v, want 10 or more by %s (the first range's holder) alone", sent, first)
	}
}

func leaseHolder(t *testing.T, c client.Client, ns string, r shard.Range) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: r.LeaseName()}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// TestStorageMigrationJunkCheckpoint: the CRD's checkpoint annotation
// holds a continue token the API server refuses (junk, or one of another
// resource): the migration starts again from the first page rather than
// failing on it forever, and ends with every CR stored anew.
func TestStorageMigrationJunkCheckpoint(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, rvs := shelvesSwitched(t, c, ns, 3, true)
	crd := getCRD(t, c)
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[wellknown.AnnotationStorageMigration] = `{"to":"v2","continue":"not-a-continue-token","listed":99,"migrated":99,"pages":7}`
	must(t, c.Update(context.Background(), crd))

	op, err := operator.New(clustertest.Config(), migrateOptions(dir, ns))
	must(t, err)
	operatortest.Run(t, op)
	waitStoredV2(t, c)
	checkMigrated(t, c, ns, rvs)
	if ms := op.StorageMigrations(); len(ms) != 1 || ms[0].Listed != 3 {
		t.Errorf("StorageMigrations() = %+v, want one that listed the 3 CRs (the junk checkpoint's counts dropped)", ms)
	}
}

// TestStorageMigrationRefusedCR: an admission policy refuses the rewrite
// of one Shelf of five: the migration rewrites the other four, leaves
// status.storedVersions as it is and says which CR and why (an Event on
// the CRD, the metric); once the policy goes, its retry finishes.
func TestStorageMigrationRefusedCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, rvs := shelvesSwitched(t, c, ns, 5, true)
	policy := freezeShelf(t, ns, "s02")

	operatortest.Start(t, clustertest.Config(), migrateOptions(dir, ns))
	eventually(t, 90*time.Second, func() string {
		msg := eventMessage(t, c, "StorageMigrationFailed")
		if !strings.Contains(msg, "1 CRs could not be rewritten at v2") || !strings.Contains(msg, ns+"/s02: ") ||
			!strings.Contains(msg, "s02 is frozen") {
			return "no StorageMigrationFailed Event naming s02 and the policy's reason: " + msg
		}
		return ""
	})
	if got := getCRD(t, c).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Fatalf("storedVersions = %v with s02 not rewritten, want [v1 v2]", got)
	}
	eventually(t, 30*time.Second, func() string { // a retry's first report counts none yet
		if got := metricSum(t, "cueop_storage_migration_crs", "kind", "Shelf", "state", "refused"); got != 1 {
			return fmt.Sprintf("cueop_storage_migration_crs{state=refused} = %v, want 1", got)
		}
		return ""
	})
	frozen := rvs["s02"]
	delete(rvs, "s02")
	checkStoredAnew(t, c, ns, rvs) // the four others went on

	mustKubectl(t, "", "delete", "validatingadmissionpolicybinding", policy)
	waitStoredV2(t, c)
	checkMigrated(t, c, ns, map[string]string{"s02": frozen})
}

// freezeShelf makes a ValidatingAdmissionPolicy refuse every write of
// Shelf name in ns, of its status and of itself (the migration moves the
// managedFields of a Shelf written at v1 by a write of the Shelf itself;
// the reason: "<name> is frozen"), and waits until the
// API server enforces it. It returns the name of the policy and of its
// binding; both are deleted at the test's end.
func freezeShelf(t *testing.T, ns, name string) string {
	t.Helper()
	policy := "freeze-" + ns
	mustKubectl(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [migrate.example.com], apiVersions: ["*"], operations: [UPDATE], resources: [shelves, shelves/status]}
  validations:
  - {expression: "object.metadata.name != '%[3]s'", message: "%[3]s is frozen"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[2]s}}
`, policy, ns, name), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", "validatingadmissionpolicybinding/"+policy, "validatingadmissionpolicy/"+policy)
	})
	eventually(t, 60*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "patch", "shelves.v2.migrate.example.com", name, "--subresource=status",
			"--type=merge", "-p", `{"status":{"books":99}}`, "--dry-run=server")
		if err == nil || !strings.Contains(out, name+" is frozen") {
			return "the policy does not refuse a status write of " + name + " yet: " + out
		}
		return ""
	})
	return policy
}

// shelfCRDEvents are the Events on the Shelf CRD the cluster has now, not
// on one of the same name an earlier test deleted.
func shelfCRDEvents(t *testing.T, c client.Client) []corev1.Event {
	t.Helper()
	uid := getCRD(t, c).UID
	list := &corev1.EventList{}
	must(t, c.List(context.Background(), list, client.MatchingFields{"involvedObject.name": shelfCRD}))
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// eventMessage is the message of the latest Event of reason on the Shelf
// CRD ("" when there is none).
func eventMessage(t *testing.T, c client.Client, reason string) string {
	t.Helper()
	msg, last := "", time.Time{}
	for _, e := range shelfCRDEvents(t, c) {
		if at := e.LastTimestamp.Time; e.Reason == reason && !at.Before(last) {
			msg, last = e.Message, at
		}
	}
	return msg
}

// TestStorageMigrationRetryRewritesRefusedOnly: with one Shelf of 200
// refused, a retry of the migration rewrites that Shelf again, not the
// 199 already stored at v2: a refused CR must not cost a pass over every
// CR of the kind each minute for as long as it is refused. Once the
// refused Shelf is deleted, the retry finishes.
func TestStorageMigrationRetryRewritesRefusedOnly(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, _ := shelvesSwitched(t, c, ns, 200, true)
	freezeShelf(t, ns, "s02")

	opts := migrateOptions(dir, ns)
	opts.StorageMigrationPageSize = 0 // one page
	act, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	failures := func(n int) int {
		eventually(t, 120*time.Second, func() string {
			if got := len(act.Logged("storage migration failed, retrying", "crd", shelfCRD)); got < n {
				return fmt.Sprintf("%d failed attempts, want %d", got, n)
			}
			return ""
		})
		return act.Writes()
	}
	failures(2)
	before := failures(2)
	after := failures(3)
	t.Logf("writes per retry with 1 Shelf of 200 refused: %d", after-before)
	if after-before > 20 {
		t.Errorf("a retry wrote %d times with 1 Shelf of 200 refused, want at most 20 (the refused Shelf and the CRD's condition, checkpoint and Events)", after-before)
	}
	mustKubectl(t, "", "-n", ns, "delete", "shelves.v2.migrate.example.com", "s02") // the retry finds it gone
	waitStoredV2(t, c)
}

// TestStorageMigrationLogsTrueCounts: the lines an operator logs while it
// migrates 5 Shelves say what is so at each step: the first, before any
// CR is listed, claims no count ("no CR to rewrite" was logged there,
// then "5 CRs rewritten"), the last counts the 5.
func TestStorageMigrationLogsTrueCounts(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, _ := shelvesSwitched(t, c, ns, 5, true)
	opts := migrateOptions(dir, ns)
	opts.StorageMigrationPageSize = 500
	a, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	a.WaitLog(t, 90*time.Second, "storage migration of "+shelfCRD, "reason", "StorageMigrationSucceeded")
	var msgs []string
	for _, l := range a.Logged("storage migration of "+shelfCRD, "kind", "Shelf") { // not the Events' lines
		msgs = append(msgs, l.Values["reason"]+": "+l.Msg)
	}
	want := []string{
		"StorageMigrationStarted: storage migration of " + shelfCRD + " v1 -> v2: rewriting the stored CRs",
		"StorageMigrationProgress: storage migration of " + shelfCRD + " v1 -> v2: 5 CRs rewritten of 5 listed (1 page); managedFields of 5 moved to v2",
		"StorageMigrationSucceeded: storage migration of " + shelfCRD + " v1 -> v2: 5 CRs rewritten of 5 listed (1 page); managedFields of 5 moved to v2; status.storedVersions is [v2]",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	for _, m := range msgs {
		if strings.Contains(m, "no CR to rewrite") {
			t.Errorf("logged %q while 5 CRs were to rewrite", m)
		}
	}
}

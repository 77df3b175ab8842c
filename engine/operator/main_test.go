package operator_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	_ "github.com/cueop/cueop/internal/update"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.SetLogger()
	// ShardedListAndWatch on, for the sharded replicas (shard_test.go).
	clustertest.Main(m, localcluster.Options{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
}

var (
	redisGVK = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1", Kind: "RedisCluster"}
	podGVK   = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
)

// startOperator runs an operator on dir, serving namespace ns, until the
// test ends, and returns what follows its activity. cfg may carry a
// counting transport; nil means the cluster's admin config.
func startOperator(t *testing.T, dir, ns string, cfg *rest.Config) *operatortest.Activity {
	t.Helper()
	a, _ := startOperatorStoppable(t, dir, ns, cfg)
	return a
}

// startOperatorStoppable runs an operator on dir until the returned stop is
// called or the test ends; stop waits for it to end.
func startOperatorStoppable(t *testing.T, dir, ns string, cfg *rest.Config) (*operatortest.Activity, func()) {
	t.Helper()
	if cfg == nil {
		cfg = clustertest.Config()
	}
	return operatortest.StartObserved(t, cfg, operatortest.Options(dir, ns))
}

// appliesUnchanged is the count of children found in sync, from cueop's
// metrics.
func appliesUnchanged(t *testing.T) float64 {
	return metricSum(t, "cueop_applies_total", "result", "unchanged")
}

// inSync is the count of reconciles that found children in sync: by
// comparing each (appliesUnchanged), or, for a CR converged at its
// recorded inputs digest, without comparing them (reconcile/resync.go).
func inSync(t *testing.T) float64 {
	return appliesUnchanged(t) + metricSum(t, "cueop_reconciles_settled_total")
}

// renders is the count of renders of kind, from cueop's metrics.
func renders(t *testing.T, kind string) float64 {
	return metricSum(t, "cueop_render_duration_seconds", "kind", kind)
}

// newClient is a client of the cluster's admin config.
var newClient = clustertest.Client

func listPods(t *testing.T, c client.Client, ns, cluster string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"cluster": cluster}); err != nil {
		t.Fatal(err)
	}
	var live []unstructured.Unstructured
	for _, p := range list.Items {
		if p.GetDeletionTimestamp() == nil {
			live = append(live, p)
		}
	}
	return live
}

// serveRedis runs an operator on a copy of the project's templates (dir,
// to edit), serving a new namespace ns, until the test ends, and waits
// until the RedisCluster CRD is established (a CRD deleted by an earlier
// test and made again serves a moment later); c is an admin client.
func serveRedis(t *testing.T) (ns, dir string, c client.Client) {
	t.Helper()
	ns = clustertest.Namespace(t)
	dir = copyTemplates(t)
	startOperator(t, dir, ns, nil)
	c = newClient(t)
	waitCRD(t)
	return ns, dir, c
}

// readyRedis applies the RedisCluster ns/name of replicas at version 7.0,
// with kubectl, and waits until it is Ready with its replicas.
func readyRedis(t *testing.T, c client.Client, ns, name string, replicas int) {
	t.Helper()
	mustKubectl(t, redisYAML(ns, name, replicas, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, name, int64(replicas)) })
}

func getCR(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return clustertest.Get(t, c, redisGVK, ns, name)
}

func redisYAML(ns, name string, replicas int, version string) string {
	return "apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata:\n  name: " + name +
		"\n  namespace: " + ns + "\nspec:\n  replicas: " + strconv.Itoa(replicas) + "\n  version: \"" + version + "\"\n"
}

// The test kit's helpers, by their short names.
var (
	kubectl           = clustertest.Kubectl
	mustKubectl       = clustertest.MustKubectl
	eventually        = clustertest.Eventually
	copyTemplates     = testkit.CopyTemplates // the project's templates, to edit
	copyTemplatesFrom = testkit.CopyDir       // a templates directory, to edit
	kindsDir          = testkit.Kinds         // the project's cue.mod and one package per entry
	editFile          = testkit.EditFile      // atomically, as an editor saves
	must              = testkit.Must
	metricSum         = testkit.MetricSum // counters, gauges and histogram counts of a metric's series whose labels hold key/value pairs
	installCRD        = clustertest.InstallCRD
)

// preserveSpec is the schema of a spec that keeps whatever it is given.
const preserveSpec = "{type: object, x-kubernetes-preserve-unknown-fields: true}"

// testCRD is the CRD of a namespaced kind of group, served and stored at
// v1 and served at each of more too, whose spec has the schema spec (YAML
// flow style).
func testCRD(group, kind, spec string, more ...string) string {
	lower := strings.ToLower(kind)
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]ss.%[2]s
spec:
  group: %[2]s
  scope: Namespaced
  names: {plural: %[1]ss, singular: %[1]s, kind: %[3]s, listKind: %[3]sList}
  versions:
`, lower, group, kind)
	for i, v := range append([]string{"v1"}, more...) {
		fmt.Fprintf(&b, `  - name: %s
    served: true
    storage: %t
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: %s
`, v, i == 0, spec)
	}
	return b.String()
}

package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.SetLogger()
	// The scheduler's and controller-manager's default client limits (50
	// and 20 QPS) would make a fleet of a thousand CRs slow to converge.
	qps := []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}
	clustertest.Main(m, localcluster.Options{ExtraArgs: map[string][]string{
		localcluster.KubeScheduler: qps, localcluster.KubeControllerManager: qps,
	}})
}

var redisGVK = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1", Kind: "RedisCluster"}

// copyTemplates copies the project's templates into a directory the test
// may edit.
var copyTemplates = testkit.CopyTemplates

// edited is a copy of the templates with the RedisCluster template's old
// text replaced by new, pair by pair.
func edited(t testing.TB, pairs ...string) string {
	t.Helper()
	return editedFile(t, filepath.Join("rediscluster", "rediscluster.cue"), pairs...)
}

// editedFile is a copy of the templates with the old text of file (below
// the templates directory) replaced by new, pair by pair.
func editedFile(t testing.TB, file string, pairs ...string) string {
	t.Helper()
	dir := copyTemplates(t)
	testkit.EditFile(t, filepath.Join(dir, file), func(src string) string {
		for i := 0; i+1 < len(pairs); i += 2 {
			if !strings.Contains(src, pairs[i]) {
				t.Fatalf("the template has no %q", pairs[i])
			}
			src = strings.Replace(src, pairs[i], pairs[i+1], 1)
		}
		return src
	})
	return dir
}

// fleet creates n RedisClusters in a fresh namespace (replicas 1 and 2 in
// turn), runs the operator until they settle, and stops it: the cluster is
// then as the controller left it, and only diff talks to it.
func fleet(t testing.TB, n int) string {
	return fleetOf(t, n, func(i int) int64 { return int64(1 + i%2) })
}

// fleetOf is fleet with replicas(i) Pods for the i-th CR.
func fleetOf(t testing.TB, n int, replicas func(int) int64) string {
	t.Helper()
	ns := clustertest.Namespace(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(copyTemplates(t), ns))
	waitCRD(t)
	cfg := clustertest.Config()
	cfg.QPS, cfg.Burst = 1000, 2000
	c := newClient(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				errs <- c.Create(context.Background(), redisCR(ns, fmt.Sprintf("r%04d", i), replicas(i)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, c, ns, n)
	a.Settled(t, 0, time.Minute)
	stop()
	return ns
}

// waitCRD waits for the operator to install the RedisCluster CRD.
func waitCRD(t testing.TB) {
	t.Helper()
	clustertest.WaitEstablished(t, time.Minute, "redisclusters.cache.example.com")
}

// waitReady waits for the n RedisClusters of ns to be Ready.
func waitReady(t testing.TB, c client.Client, ns string, n int) {
	t.Helper()
	waitKindReady(t, c, redisGVK, ns, n)
}

// waitKindReady waits for the n CRs of kind gvk in ns to be Ready.
func waitKindReady(t testing.TB, c client.Client, gvk schema.GroupVersionKind, ns string, n int) {
	t.Helper()
	clustertest.Eventually(t, 3*time.Minute+time.Duration(n)*300*time.Millisecond, func() string {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		ready := 0
		for _, cr := range list.Items {
			if testkit.ConditionStatus(&cr, "Ready") == "True" {
				ready++
			}
		}
		if ready != n {
			return fmt.Sprintf("%d of %d %ss Ready", ready, n, gvk.Kind)
		}
		return ""
	})
}

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run diffs namespace ns with the templates of dir, failing the test on a
// write that is not a dry run.
func run(t testing.TB, dir string, opts diff.Options) *diff.Report {
	t.Helper()
	r, _ := runCounted(t, dir, opts)
	return r
}

// runCounted is run that returns the requests diff sent too.
func runCounted(t testing.TB, dir string, opts diff.Options) (*diff.Report, *testkit.Requests) {
	t.Helper()
	set, err := template.Load(dir)
	if set == nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	cfg := clustertest.Config()
	cfg.QPS, cfg.Burst = operator.DefaultQPS, operator.DefaultBurst // as cueop diff
	cfg, reqs := testkit.CountRequests(cfg)
	opts.Client = newClient(t, cfg)
	opts.Set = set
	r, err := diff.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	writes := reqs.Where(func(r testkit.Request) bool { return r.Write() && r.Query.Get("dryRun") != "All" })
	if len(writes) > 0 {
		t.Errorf("diff wrote to the API server: %v", writes)
	}
	t.Logf("%d dry-run requests", reqs.WriteCount())
	return r, reqs
}

func text(t testing.TB, r *diff.Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// redis is the summary of the RedisCluster kind.
func redis(t testing.TB, r *diff.Report) diff.KindSummary {
	t.Helper()
	for _, k := range r.Kinds {
		if k.Kind == "RedisCluster" {
			return k
		}
	}
	t.Fatalf("no RedisCluster in the report:\n%s", text(t, r))
	return diff.KindSummary{}
}

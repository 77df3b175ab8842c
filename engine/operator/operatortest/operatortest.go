// Package operatortest runs cueop operators in tests, in the test's own
// process.
package operatortest

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/engine/wellknown"
)

// Options are the options tests run an operator with: the templates of
// dir, CRDs installed, 4 concurrent reconciles, scoped to namespace ns, and
// no metrics or probe listener (tests read the metrics registry), and the
// process's shared conversion endpoint (SharedConversion).
func Options(dir, ns string) operator.Options {
	return operator.Options{
		Templates: dir, InstallCRDs: true, MaxConcurrent: 4, Namespace: ns, Conversion: SharedConversion(),
		// The release key's Secret goes with the test's namespace (none:
		// operator.DefaultReleaseKeyNamespace).
		ReleaseKeyNamespace: ns,
		Manager:             ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"},
	}
}

var shared struct {
	once sync.Once
	conv *operator.Conversion
}

// SharedConversion is one conversion endpoint on 127.0.0.1 for every
// operator of the test process: each operator writes its converters into
// its registry and points its CRDs at it, and it serves until the process
// ends. Tests of one control plane start and stop operators side by side;
// with an endpoint each, a CRD would point at the last one installed, and
// reads at another version than the stored one would fail once that
// operator stopped.
func SharedConversion() *operator.Conversion {
	shared.once.Do(func() {
		reg := &webhook.Registry{}
		e, _, err := webhook.ServeLocal(reg) // served until the process ends
		if err != nil {
			panic(err) // no free port or no randomness: nothing a test can do
		}
		shared.conv = &operator.Conversion{Endpoint: *e, NoServe: true, Registry: reg}
	})
	return shared.conv
}

// Start builds an operator on cfg and runs it like Run.
func Start(t testing.TB, cfg *rest.Config, opts operator.Options) (stop func()) {
	t.Helper()
	op, err := operator.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return Run(t, op)
}

// Run runs op until the returned stop is called or the test ends. stop
// waits for the operator to end (30 seconds at most) and reports an error
// it ended with; calling it again does nothing.
func Run(t testing.TB, op *operator.Operator) (stop func()) {
	t.Helper()
	t.Cleanup(func() { deleteTemplates(op) }) // run after stop
	return runUntilCleanup(t, "operator", op.Run)
}

// RunSharded runs the sharded replica s until the test ends, as Run runs
// an operator.
func RunSharded(t testing.TB, s *operator.Sharded) (stop func()) {
	t.Helper()
	return runUntilCleanup(t, "replica", s.Run)
}

// runUntilCleanup runs run until stop, called at the test's end at the
// latest; an error it returns, or a stop over 30 s, fails the test.
func runUntilCleanup(t testing.TB, name string, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not stop within 30s", name)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// deleteTemplates deletes the Template objects op created and that still
// carry its mark, as the
// identity op was built with but not as a user it impersonates (a test's
// limited user may not delete them).
func deleteTemplates(op *operator.Operator) {
	names := op.CreatedTemplates()
	if len(names) == 0 {
		return
	}
	cfg := rest.CopyConfig(op.Manager().GetConfig())
	cfg.Impersonate = rest.ImpersonationConfig{}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range names {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(operator.TemplateGVK)
		if c.Get(ctx, client.ObjectKey{Name: name}, obj) != nil || obj.GetAnnotations()[wellknown.AnnotationTemplates] != op.TemplatesMark() {
			continue // another operator's now (a test running beside this one): its to delete
		}
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		_ = client.IgnoreNotFound(c.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}))
	}
}

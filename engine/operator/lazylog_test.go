package operator

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingSink counts the WithValues calls that reach the sink it wraps,
// a sink initialized already, with a call depth for recordingSink's own
// frame (as lazy wraps a sink).
type recordingSink struct {
	sink       logr.LogSink
	withValues *int
}

func recording(l logr.Logger, calls *int) logr.Logger {
	return logr.New(recordingSink{l.GetSink().(logr.CallDepthLogSink).WithCallDepth(1), calls})
}

func (s recordingSink) Init(logr.RuntimeInfo)                 {}
func (s recordingSink) Enabled(level int) bool                { return s.sink.Enabled(level) }
func (s recordingSink) Info(level int, msg string, kv ...any) { s.sink.Info(level, msg, kv...) }
func (s recordingSink) Error(err error, msg string, kv ...any) {
	s.sink.Error(err, msg, kv...)
}
func (s recordingSink) WithName(name string) logr.LogSink {
	return recordingSink{s.sink.WithName(name), s.withValues}
}

func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	*s.withValues++
	return recordingSink{s.sink.WithValues(kv...), s.withValues}
}

func (s recordingSink) WithCallDepth(depth int) logr.LogSink {
	return recordingSink{s.sink.(logr.CallDepthLogSink).WithCallDepth(depth), s.withValues}
}

// TestReconcileLogger: a reconcile's logger hands its pairs (the
// controller's, the CR's key, controller-runtime's reconcile ID) to the
// sink only when a line is written, then writes the line as the eager
// logger would, with the caller of the line; V levels hold.
func TestReconcileLogger(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) },
		funcr.Options{LogCaller: funcr.All, Verbosity: 1})
	calls := 0
	log := recording(base, &calls).WithValues("kind", "RedisCluster")
	calls = 0

	req := &reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}}
	l := reconcileLogger(log, "cueop-redis")(req).WithValues("reconcileID", "id-1")
	if calls != 0 {
		t.Fatalf("%d WithValues reached the sink before any line", calls)
	}
	l.V(2).Info("not written")
	if len(lines) != 0 || calls != 0 {
		t.Fatalf("a line above the verbosity: %v, %d WithValues", lines, calls)
	}
	l.Info("converged", "writes", 2)
	l.Error(nil, "failed")
	if len(lines) != 2 {
		t.Fatalf("lines: %v", lines)
	}
	for _, want := range []string{`"kind"="RedisCluster"`, `"controller"="cueop-redis"`, `"namespace"="ns"`, `"name"="r"`,
		`"reconcileID"="id-1"`, `"writes"=2`, `"msg"="converged"`, `lazylog_test.go`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line %s lacks %s", lines[0], want)
		}
	}
	if !strings.Contains(lines[1], `"msg"="failed"`) || !strings.Contains(lines[1], "lazylog_test.go") {
		t.Errorf("error line: %s", lines[1])
	}
}

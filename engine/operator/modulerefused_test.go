package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// refusingSource is a module source following example.com/redis@v1 (its
// v1.0.0 published and served) in a registry of its own, its refusals
// sent on refused, and a namespace for the test's CRs.
func refusingSource(t *testing.T) (ns string, reg *sourcetest.Registry, ref string, s *source.Source, refused chan source.Refusal) {
	t.Helper()
	ns = clustertest.Namespace(t)
	reg = sourcetest.Start(t)
	publishRedis(t, reg, "v1.0.0", func(s string) string { return s })
	ref = reg.Ref("example.com/redis", "v1")
	refused = make(chan source.Refusal, 4)
	s = sourcetest.Open(t, ref, source.Options{Limits: registryLimits, Refused: func(r source.Refusal) { refused <- r }})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ns, reg, ref, s, refused
}

// TestModuleRefusedAtFetchShows: a followed reference whose new version
// is refused at fetch (a file over the limits) shows on the kind's
// Template as Degraded ModuleRefused naming the version and the file, in
// cueop_template_load_errors_total and in an Event on the CRD, while the
// last good version serves; a version published after it clears it.
func TestModuleRefusedAtFetchShows(t *testing.T) {
	start := time.Now() // the Event this test waits for is made after
	t.Cleanup(func() {  // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	ns, reg, ref, s, refused := refusingSource(t)
	op, err := operator.New(clustertest.Config(), registryOptions(s, ns))
	if err != nil {
		t.Fatal(err)
	}
	operatortest.Run(t, op)
	waitCRD(t)
	eventually(t, 60*time.Second, func() string { return templateServes(t, ref, "v1.0.0", s.Serving()[0].Digest, "False") })
	loadErrors := metricSum(t, "cueop_template_load_errors_total")

	publishRedis(t, reg, "v1.1.0", func(s string) string { return s + "\n_pad: \"" + strings.Repeat("x", 80<<10) + "\"\n" })
	for range 2 {
		if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "example.com/redis@v1.1.0") {
			t.Fatalf("Poll of an oversized module = %v, want it refused naming example.com/redis@v1.1.0", err)
		}
	}
	r := <-refused
	op.ModuleRefused(r.Ref, r.Err)
	select {
	case again := <-refused:
		t.Errorf("the refusal of %s was reported twice", again.Digest)
	default:
	}
	eventually(t, 60*time.Second, func() string {
		if why := templateServes(t, ref, "v1.0.0", "", "True"); why != "" {
			return why
		}
		if _, msg, _ := templateCondition(t, "Degraded"); !strings.Contains(msg, "example.com/redis@v1.1.0") || !strings.Contains(msg, "rediscluster/rediscluster.cue") {
			return "Degraded does not name the refused version and its file: " + msg
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		return crdEventSince(t, "redisclusters.cache.example.com", wellknown.TemplateReasonModuleRefused, start, "example.com/redis@v1.1.0")
	})
	if got := metricSum(t, "cueop_template_load_errors_total"); got != loadErrors+1 {
		t.Errorf("cueop_template_load_errors_total = %v, want %v", got, loadErrors+1)
	}

	publishRedis(t, reg, "v1.2.0", addPodLabel("cache"))
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string { return templateServes(t, ref, "v1.2.0", s.Serving()[0].Digest, "False") })
}

// TestShardedModuleRefusedShows: on a sharded replica, a module version
// refused at fetch before the replica holds any range (as cueop run
// --shards meets a refusal at its source's first poll) is counted once in
// cueop_template_load_errors_total, and shows on the kind's Template
// (Degraded ModuleRefused, naming the version and the file) and in an
// Event on the CRD once range 0's operator loaded the kind, while the
// last good version serves.
func TestShardedModuleRefusedShows(t *testing.T) {
	start := time.Now() // the Event this test waits for is made after
	t.Cleanup(func() {  // registered first, run last: after the replica stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	ns, reg, ref, s, refused := refusingSource(t)
	serving := s.Serving()[0].Digest
	sh, err := operator.NewSharded(clustertest.Config(), registryOptions(s, ns), operator.Sharding{
		Shards: 2, Identity: "refusing", Namespace: ns, LeaseDuration: shardLease, RenewDeadline: shardRenew, RetryPeriod: shardRetry})
	if err != nil {
		t.Fatal(err)
	}
	publishRedis(t, reg, "v1.1.0", func(s string) string { return s + "\n_pad: \"" + strings.Repeat("x", 80<<10) + "\"\n" })
	if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "example.com/redis@v1.1.0") {
		t.Fatalf("Poll of an oversized module = %v, want it refused naming example.com/redis@v1.1.0", err)
	}
	loadErrors := metricSum(t, "cueop_template_load_errors_total")
	r := <-refused
	sh.ModuleRefused(r.Ref, r.Err)
	if got := metricSum(t, "cueop_template_load_errors_total"); got != loadErrors+1 {
		t.Errorf("cueop_template_load_errors_total = %v, want %v: once for the replica", got, loadErrors+1)
	}

	operatortest.RunSharded(t, sh)
	waitCRD(t)
	eventually(t, 90*time.Second, func() string {
		if why := templateServes(t, ref, "v1.0.0", serving, "True"); why != "" {
			return why
		}
		if _, msg, _ := templateCondition(t, "Degraded"); !strings.Contains(msg, "example.com/redis@v1.1.0") || !strings.Contains(msg, "rediscluster/rediscluster.cue") {
			return "Degraded does not name the refused version and its file: " + msg
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		return crdEventSince(t, "redisclusters.cache.example.com", wellknown.TemplateReasonModuleRefused, start, "example.com/redis@v1.1.0")
	})
}

// TestShardedModuleRefusedThenFixed: a sharded replica holding no range
// meets a refused version, then the reference moves to a version that
// loads before the replica takes range 0: the Template shows the version
// serving, not Degraded by the refusal of the version it moved past.
func TestShardedModuleRefusedThenFixed(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the replica stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	ns, reg, ref, s, refused := refusingSource(t)
	sh, err := operator.NewSharded(clustertest.Config(), registryOptions(s, ns), operator.Sharding{
		Shards: 2, Identity: "fixed", Namespace: ns, LeaseDuration: shardLease, RenewDeadline: shardRenew, RetryPeriod: shardRetry})
	if err != nil {
		t.Fatal(err)
	}
	publishRedis(t, reg, "v1.1.0", func(s string) string { return s + "\n_pad: \"" + strings.Repeat("x", 80<<10) + "\"\n" })
	if _, err := s.Poll(context.Background()); err == nil {
		t.Fatal("Poll of an oversized module: no error")
	}
	r := <-refused
	sh.ModuleRefused(r.Ref, r.Err)
	publishRedis(t, reg, "v1.2.0", func(s string) string { return s + "\n// fixed\n" })
	poll(t, s, true)

	operatortest.RunSharded(t, sh)
	waitCRD(t)
	eventually(t, 90*time.Second, func() string { return templateServes(t, ref, "v1.2.0", s.Serving()[0].Digest, "False") })
}

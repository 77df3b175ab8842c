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

// TestModuleRefusedAtFetchShows: a followed reference whose new version
// is refused at fetch (a file over the limits) shows on the kind's
// Template as Degraded ModuleRefused naming the version and the file, in
// cueop_template_load_errors_total and in an Event on the CRD, while the
// last good version serves; a version published after it clears it.
func TestModuleRefusedAtFetchShows(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	ns := clustertest.Namespace(t)
	reg := sourcetest.Start(t)
	publishRedis(t, reg, "v1.0.0", func(s string) string { return s })
	ref := reg.Ref("example.com/redis", "v1")
	refs, err := source.ParseRefs(ref)
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan source.Refusal, 4)
	s, err := source.New(source.Options{Refs: refs, CacheDir: t.TempDir(), Limits: registryLimits,
		Refused: func(r source.Refusal) { refused <- r }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
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
		return crdEventOn(t, "redisclusters.cache.example.com", wellknown.TemplateReasonModuleRefused, "example.com/redis@v1.1.0")
	})
	if got := metricSum(t, "cueop_template_load_errors_total"); got != loadErrors+1 {
		t.Errorf("cueop_template_load_errors_total = %v, want %v", got, loadErrors+1)
	}

	publishRedis(t, reg, "v1.2.0", addPodLabel("cache"))
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string { return templateServes(t, ref, "v1.2.0", s.Serving()[0].Digest, "False") })
}

package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// registryLimits are the template limits of TestRegistryTemplates: room
// for the RedisCluster template, not for a padded one.
var registryLimits = template.Limits{MaxFileSize: 64 << 10, MaxTotalSize: 256 << 10}

// publishRedis publishes the project's RedisCluster template, edited, as
// module example.com/redis@v1 at version.
func publishRedis(t *testing.T, reg *sourcetest.Registry, version string, edit func(string) string) {
	t.Helper()
	files := sourcetest.RedisModule(t, "../..", "example.com/redis@v1")
	files["rediscluster/rediscluster.cue"] = edit(files["rediscluster/rediscluster.cue"])
	reg.Publish(t, "example.com/redis@v1", version, files)
}

func openRedisSource(t *testing.T, ref, cache string) *source.Source {
	t.Helper()
	s := sourcetest.Open(t, ref, source.Options{CacheDir: cache, Limits: registryLimits})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func registryOptions(s *source.Source, ns string) operator.Options {
	opts := operatortest.Options(s.Dir(), ns)
	opts.TemplateLimits = registryLimits
	opts.TemplatesAccepted = s.Accept
	return opts
}

func poll(t *testing.T, s *source.Source, wantChanged bool) {
	t.Helper()
	changed, err := s.Poll(context.Background())
	if err != nil || changed != wantChanged {
		t.Fatalf("Poll = %v, %v; want changed %v", changed, err, wantChanged)
	}
}

// TestRegistryTemplates serves the RedisCluster template as a CUE module
// from a real OCI registry, following @v1: a new version rolls out, a
// broken one is refused while the last good serves, a module over the
// limits is refused at fetch, the registry going away changes nothing that
// runs, and a restart with the registry gone serves the last digest the
// operator accepted, not the broken one fetched after it.
func TestRegistryTemplates(t *testing.T) {
	ns := clustertest.Namespace(t)
	reg := sourcetest.Start(t)
	publishRedis(t, reg, "v1.0.0", func(s string) string { return s })
	cache := t.TempDir()
	ref := reg.Ref("example.com/redis", "v1")
	s := openRedisSource(t, ref, cache)
	_, stop := operatortest.StartObserved(t, clustertest.Config(), registryOptions(s, ns))
	c := newClient(t)
	waitCRD(t)
	readyRedis(t, c, ns, "reg", 2)
	eventually(t, 60*time.Second, func() string { return templateServes(t, ref, "v1.0.0", s.Serving()[0].Digest, "False") })

	publishRedis(t, reg, "v1.1.0", addPodLabel("cache"))
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "reg", "tier", "cache", 2) })

	publishRedis(t, reg, "v1.2.0", func(s string) string { return addPodLabel("cache")(s) + "\nchildren: broken: {\n" })
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, "redisclusters.cache.example.com", "TemplateError", "example.com/redis@v1.2.0", "rediscluster.cue:")
	})
	eventually(t, 60*time.Second, func() string { // the last good serves; the refused one is named with its position
		if why := templateServes(t, ref, "v1.1.0", "", "True"); why != "" {
			return why
		}
		if _, msg, _ := templateCondition(t, "Degraded"); !strings.Contains(msg, "example.com/redis@v1.2.0") || !strings.Contains(msg, "rediscluster.cue:") {
			return "Degraded does not name the refused version and its position: " + msg
		}
		return ""
	})
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/reg", "--replicas=3")
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "reg", "tier", "cache", 3) })

	publishRedis(t, reg, "v1.3.0", addPodLabel("db"))
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "reg", "tier", "db", 3) })
	serving := s.Serving()[0]

	publishRedis(t, reg, "v1.4.0", func(s string) string { return s + "\n_pad: \"" + strings.Repeat("x", 80<<10) + "\"\n" })
	if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "module example.com/redis@v1.4.0") {
		t.Errorf("Poll of an oversized module = %v, want it refused naming example.com/redis@v1.4.0", err)
	}
	publishRedis(t, reg, "v1.5.0", func(s string) string { return addPodLabel("db")(s) + "\nchildren: broken: {\n" })
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, "redisclusters.cache.example.com", "TemplateError", "example.com/redis@v1.5.0", "rediscluster.cue:")
	})

	reg.Stop()
	if _, err := s.Poll(context.Background()); err == nil {
		t.Error("Poll with the registry gone: no error")
	}
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/reg", "--replicas=2")
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "reg", "tier", "db", 2) })

	stop()
	again := openRedisSource(t, ref, cache)
	if got := again.Serving()[0]; got.Digest != serving.Digest || got.Version != "v1.3.0" {
		t.Errorf("restart serves %s %s, want the accepted %s v1.3.0", got.Version, got.Digest, serving.Digest)
	}
	operatortest.StartObserved(t, clustertest.Config(), registryOptions(again, ns))
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/reg", "--replicas=3")
	eventually(t, 60*time.Second, func() string {
		if why := podsLabelled(t, c, ns, "reg", "tier", "db", 3); why != "" {
			return why
		}
		return readyStatus(t, c, ns, "reg", 3)
	})
	eventually(t, 60*time.Second, func() string { return templateServes(t, ref, "v1.3.0", serving.Digest, "False") })
}

// templateServes says why the RedisCluster's Template does not read Ready
// True with degraded as its Degraded status, serving version of the
// module example.com/redis@v1 followed as ref, at digest (any sha256 digest
// when empty), or "".
func templateServes(t *testing.T, ref, version, digest, degraded string) string {
	t.Helper()
	ready, msg, obj := templateCondition(t, "Ready")
	if obj == nil || ready != "True" {
		return fmt.Sprintf("Ready %s: %s", ready, msg)
	}
	if d, msg, _ := templateCondition(t, "Degraded"); d != degraded {
		return fmt.Sprintf("Degraded %s, want %s: %s", d, degraded, msg)
	}
	src, _, _ := unstructured.NestedStringMap(obj.Object, "status", "source")
	if src["ref"] != ref || src["module"] != "example.com/redis@v1" || src["version"] != version ||
		!strings.HasPrefix(src["digest"], "sha256:") || digest != "" && src["digest"] != digest {
		return fmt.Sprintf("source %v, want %s example.com/redis@v1 %s at %q", src, ref, version, digest)
	}
	return ""
}

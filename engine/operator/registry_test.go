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
	refs, err := source.ParseRefs(ref)
	if err != nil {
		t.Fatal(err)
	}
	s, err := source.New(source.Options{Refs: refs, CacheDir: cache, Limits: registryLimits})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func registryOptions(dir, ns string) operator.Options {
	opts := operatortest.Options(dir, ns)
	opts.TemplateLimits = registryLimits
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
// runs, and a restart with the registry gone serves the recorded digest.
func TestRegistryTemplates(t *testing.T) {
	ns := clustertest.Namespace(t)
	reg := sourcetest.Start(t)
	publishRedis(t, reg, "v1.0.0", func(s string) string { return s })
	cache := t.TempDir()
	ref := reg.Ref("example.com/redis", "v1")
	s := openRedisSource(t, ref, cache)
	_, stop := operatortest.StartObserved(t, clustertest.Config(), registryOptions(s.Dir(), ns))
	c := newClient(t)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "reg", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "reg", 2) })

	publishRedis(t, reg, "v1.1.0", addPodLabel("cache"))
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "reg", "tier", "cache", 2) })

	publishRedis(t, reg, "v1.2.0", func(s string) string { return addPodLabel("cache")(s) + "\nchildren: broken: {\n" })
	poll(t, s, true)
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, "redisclusters.cache.example.com", "TemplateError", "example.com/redis@v1.2.0", "rediscluster.cue:")
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

	reg.Stop()
	if _, err := s.Poll(context.Background()); err == nil {
		t.Error("Poll with the registry gone: no error")
	}
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/reg", "--replicas=2")
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "reg", "tier", "db", 2) })

	stop()
	again := openRedisSource(t, ref, cache)
	if got := again.Serving()[0]; got.Digest != serving.Digest || got.Version != "v1.3.0" {
		t.Errorf("restart serves %s %s, want the recorded %s v1.3.0", got.Version, got.Digest, serving.Digest)
	}
	operatortest.StartObserved(t, clustertest.Config(), registryOptions(again.Dir(), ns))
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/reg", "--replicas=3")
	eventually(t, 60*time.Second, func() string {
		if why := podsLabelled(t, c, ns, "reg", "tier", "db", 3); why != "" {
			return why
		}
		return readyStatus(t, c, ns, "reg", 3)
	})
}

package pinstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/pinstore"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.SetLogger()
	clustertest.Main(m, localcluster.Options{ControlPlaneOnly: true})
}

func publishLib(t *testing.T, reg *sourcetest.Registry, greeting string) {
	t.Helper()
	reg.Publish(t, "example.com/lib@v0", "v0.1.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/lib@v0", nil),
		"lib.cue":            "package lib\ngreeting: \"" + greeting + "\"\n",
	})
}

func publishApp(t *testing.T, reg *sourcetest.Registry) {
	t.Helper()
	reg.Publish(t, "example.com/app@v1", "v1.0.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/app@v1", map[string]string{"example.com/lib@v0": "v0.1.0"}),
		"web/web.cue": `package web
import "example.com/lib"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: *1 | int}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x", data: d: lib.greeting}
`,
	})
}

// operatorClient is a client acting as the operator's ServiceAccount in
// ns, bound there to config/registry's pins_role.yaml and nothing else.
func operatorClient(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	role, err := os.ReadFile("../../../config/registry/pins_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clustertest.MustKubectl(t, string(role), "apply", "-n", ns, "-f", "-")
	cfg := clustertest.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":cueop-controller"}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func open(t *testing.T, ref, cache string, rec source.Record) *source.Source {
	t.Helper()
	return sourcetest.Open(t, ref, source.Options{CacheDir: cache, Record: rec})
}

// pinnedApp publishes app v1.0.0 depending on lib ("hello") in a
// registry of its own and answers the pin of app's digest, the registry,
// a namespace and a client acting as the operator there.
func pinnedApp(t *testing.T) (pin string, reg *sourcetest.Registry, ns string, c kubernetes.Interface) {
	t.Helper()
	ns = clustertest.Namespace(t)
	c = operatorClient(t, ns)
	reg = sourcetest.Start(t)
	publishLib(t, reg, "hello")
	publishApp(t, reg)
	probe := open(t, reg.Ref("example.com/app", "v1.0.0"), t.TempDir(), nil)
	if err := probe.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return reg.Ref("example.com/app", "v1.0.0@"+probe.Serving()[0].Digest), reg, ns, c
}

func greeting(t *testing.T, dir string) string {
	t.Helper()
	set, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := set.Kinds[0].Value.LookupPath(cue.ParsePath("children.cm.data.d")).String()
	return got
}

// TestPinSurvivesEmptyCache: a pinned module's first fetch records its
// dependency's digest in the ConfigMap, written by the operator's own
// ServiceAccount with config/registry's rights alone. After the publisher
// moves the dependency's tag, a fresh source on an empty module cache (a
// new Pod of config/registry) refuses the moved dependency, naming it and
// the ConfigMap, even beside a pinned.json that records the moved digest;
// without the ConfigMap it would take the moved content.
func TestPinSurvivesEmptyCache(t *testing.T) {
	ctx := context.Background()
	pin, reg, ns, c := pinnedApp(t)

	firstCache := t.TempDir()
	first := open(t, pin, firstCache, pinstore.ForClient(c, ns, pinstore.DefaultName))
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := greeting(t, first.Dir()); got != "hello" {
		t.Fatalf("served %q, want hello", got)
	}
	libDigest := first.Serving()[0].Deps[0].Digest
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, pinstore.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec := cm.Data[pinstore.Key]; !strings.Contains(rec, libDigest) || !strings.Contains(rec, pin) {
		t.Fatalf("ConfigMap %s/%s does not record the pin and its dependency's digest %s:\n%s", ns, pinstore.DefaultName, libDigest, rec)
	}

	publishLib(t, reg, "evil")
	moved := open(t, reg.Ref("example.com/app", "v1.0.0"), t.TempDir(), nil)
	if err := moved.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := greeting(t, moved.Dir()); got != "evil" {
		t.Fatalf("the moved tag serves %q, want evil", got)
	}
	// A pinned.json (a container restarted in the same Pod, a cache
	// written by a fetch after the move) recording the moved digest for
	// the pin: the cluster's record wins.
	cache := t.TempDir()
	forged, err := os.ReadFile(filepath.Join(firstCache, "pinned.json"))
	if err != nil {
		t.Fatal(err)
	}
	movedDigest := moved.Serving()[0].Deps[0].Digest
	if err := os.WriteFile(filepath.Join(cache, "pinned.json"), []byte(strings.ReplaceAll(string(forged), libDigest, movedDigest)), 0o644); err != nil {
		t.Fatal(err)
	}

	fresh := open(t, pin, cache, pinstore.ForClient(c, ns, pinstore.DefaultName))
	err = fresh.Start(ctx)
	if err == nil {
		t.Fatalf("a fresh source on an empty cache took the moved dependency: serves %q", greeting(t, fresh.Dir()))
	}
	for _, want := range []string{"dependency example.com/lib@v0.1.0 moved", "names digest " + movedDigest, "not " + libDigest, "ConfigMap " + ns + "/" + pinstore.DefaultName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start = %v\nwant it to name %q", err, want)
		}
	}
	cm, err = c.CoreV1().ConfigMaps(ns).Get(ctx, pinstore.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec := cm.Data[pinstore.Key]; !strings.Contains(rec, libDigest) || strings.Contains(rec, movedDigest) {
		t.Errorf("the refused start changed the ConfigMap's record:\n%s", rec)
	}
}

// staleLoad is a record read before another replica's first write: Load
// finds nothing, Update reaches the ConfigMap as it is now.
type staleLoad struct{ *pinstore.ConfigMap }

func (staleLoad) Load(context.Context) ([]byte, error) { return nil, nil }

// TestPinRecordedByAnotherReplicaWins: two replicas start on empty caches
// at once; one records the pin with its dependency's digest, the
// publisher moves the dependency's tag, and the other, which read the
// ConfigMap before that write, fetched the moved content. Its start is
// refused naming the dependency, both digests and the ConfigMap, and the
// first record stays: the replicas never serve two contents of one pin.
func TestPinRecordedByAnotherReplicaWins(t *testing.T) {
	ctx := context.Background()
	pin, reg, ns, c := pinnedApp(t)
	first := open(t, pin, t.TempDir(), pinstore.ForClient(c, ns, pinstore.DefaultName))
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	libDigest := first.Serving()[0].Deps[0].Digest

	publishLib(t, reg, "evil")
	late := open(t, pin, t.TempDir(), staleLoad{pinstore.ForClient(c, ns, pinstore.DefaultName)})
	err := late.Start(ctx)
	if err == nil {
		t.Fatalf("a replica that fetched the moved dependency after the pin was recorded started, serving %q beside %q", greeting(t, late.Dir()), greeting(t, first.Dir()))
	}
	for _, want := range []string{"example.com/lib@v0.1.0", libDigest, "ConfigMap " + ns + "/" + pinstore.DefaultName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start = %v\nwant it to name %q", err, want)
		}
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, pinstore.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec := cm.Data[pinstore.Key]; !strings.Contains(rec, libDigest) {
		t.Errorf("the first record of the pin was replaced:\n%s", rec)
	}
}

// TestPinRecordDeletedIsWrittenAgain: the ConfigMap deleted while a
// source serves (an administrator's mistake, a namespace cleanup) is
// written again at the next poll, before a restart could find it missing
// and trust the tags (before: written only when what serves changed).
func TestPinRecordDeletedIsWrittenAgain(t *testing.T) {
	ctx := context.Background()
	pin, _, ns, c := pinnedApp(t)
	s := open(t, pin, t.TempDir(), pinstore.ForClient(c, ns, pinstore.DefaultName))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	libDigest := s.Serving()[0].Deps[0].Digest
	clustertest.MustKubectl(t, "", "delete", "-n", ns, "configmap", pinstore.DefaultName)
	if _, err := s.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, pinstore.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ConfigMap deleted is not written again at the next poll: %v", err)
	}
	if rec := cm.Data[pinstore.Key]; !strings.Contains(rec, libDigest) || !strings.Contains(rec, pin) {
		t.Errorf("the record written again lacks the pin and its dependency's digest %s:\n%s", libDigest, rec)
	}
}

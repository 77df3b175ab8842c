package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/source/sourcetest"
)

// TestRenderFromRegistry renders the sample RedisCluster from the
// template published as a module on a real registry, given to --templates
// as a reference in a file.
func TestRenderFromRegistry(t *testing.T) {
	reg := sourcetest.Start(t)
	files := sourcetest.RedisModule(t, "../..", "example.com/redis@v1")
	reg.Publish(t, "example.com/redis@v1", "v1.0.0", files)
	list := filepath.Join(t.TempDir(), "refs")
	if err := os.WriteFile(list, []byte("# the cache templates\n"+reg.Ref("example.com/redis", "v1")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--templates", "@"+list, "--module-cache", t.TempDir(), "render", "-f", "../../config/samples/cache_v1_rediscluster.yaml")
	if err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	if !strings.Contains(out, "kind: Pod") || !strings.Contains(out, "name: sample-2") {
		t.Errorf("render output:\n%s", out)
	}
}

// TestRenderPinCoversDependencies: render of a pinned module whose
// dependency's tag the publisher moved gives the pinned content from the
// warm cache, and is refused naming the dependency when the module files
// are gone from the cache and fetched anew.
func TestRenderPinCoversDependencies(t *testing.T) {
	reg := sourcetest.Start(t)
	publishHelper := func(image string) {
		reg.Publish(t, "example.com/helper@v0", "v0.1.0", map[string]string{
			"cue.mod/module.cue": sourcetest.ModuleFile("example.com/helper@v0", nil),
			"helper.cue":         "package helper\nimage: \"" + image + "\"\n",
		})
	}
	publishHelper("redis:7.0")
	reg.Publish(t, "example.com/app@v1", "v1.0.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/app@v1", map[string]string{"example.com/helper@v0": "v0.1.0"}),
		"web/web.cue": `package web
import "example.com/helper"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: *1 | int}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x", data: image: helper.image}
`,
	})
	cr := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(cr, []byte("apiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a, namespace: ns}\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := t.TempDir()
	if out, err := run(t, "--templates", reg.Ref("example.com/app", "v1.0.0"), "--module-cache", probe, "render", "-f", cr); err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(probe, "pinned.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, digest, _ := strings.Cut(string(data), `"digest": "`)
	digest, _, _ = strings.Cut(digest, `"`)
	pin := reg.Ref("example.com/app", "v1.0.0@"+digest)

	cache := t.TempDir()
	out, err := run(t, "--templates", pin, "--module-cache", cache, "render", "-f", cr)
	if err != nil || !strings.Contains(out, "image: redis:7.0") {
		t.Fatalf("render of the pin: %v\n%s", err, out)
	}
	publishHelper("evil.example.com/miner:latest")
	out, err = run(t, "--templates", pin, "--module-cache", cache, "render", "-f", cr)
	if err != nil || !strings.Contains(out, "image: redis:7.0") {
		t.Errorf("render of the pin from the warm cache: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(cache, "modules")); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "--templates", pin, "--module-cache", cache, "render", "-f", cr)
	if err == nil || !strings.Contains(err.Error()+out, "dependency example.com/helper@v0.1.0 moved") || strings.Contains(out, "miner") {
		t.Errorf("render of the pin fetched anew after the helper's tag moved = %v\n%s\nwant it refused naming the helper", err, out)
	}
}

// TestManifestsFromRegistry: `cueop manifests` of a module published on a
// registry writes its kind's CRD and the role of its identity, for a
// GitOps tool to apply, with no golden case nor sample beside it (the
// rights are read from the template).
func TestManifestsFromRegistry(t *testing.T) {
	reg := sourcetest.Start(t)
	reg.Publish(t, "example.com/redis@v1", "v1.0.0", sourcetest.RedisModule(t, "../..", "example.com/redis@v1"))
	out := t.TempDir()
	empty := t.TempDir()
	if msg, err := run(t, "--templates", reg.Ref("example.com/redis", "v1"), "--module-cache", t.TempDir(), "manifests", "--out-dir", out,
		"--testdata", empty, "--samples", empty); err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	crds, err := filepath.Glob(filepath.Join(out, "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRD written under %s/crds: %v", out, err)
	}
	crd, err := os.ReadFile(crds[0])
	if err != nil || !strings.Contains(string(crd), "redisclusters.cache.example.com") {
		t.Fatalf("CRD %s: %v\n%s", crds[0], err, crd)
	}
	kinds, err := os.ReadFile(filepath.Join(out, "config/rbac/kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: cueop-redisclusters.cache.example.com", "- pods", "- services", "- configmaps"} {
		if !strings.Contains(string(kinds), want) {
			t.Errorf("config/rbac/kinds.yaml lacks %q:\n%s", want, kinds)
		}
	}
}

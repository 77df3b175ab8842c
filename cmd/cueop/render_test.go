package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderFileWithOtherObjects: a file holding one CR of a served kind
// and other objects (a sample with the ConfigMap it reads, a Secret beside
// the CR) renders the CR, the other objects read as referenced objects,
// as `kubectl apply -f` of the file would create them beside it.
func TestRenderFileWithOtherObjects(t *testing.T) {
	dir := t.TempDir()
	// blog_v1_blog.yaml holds the Blog and the ConfigMap it references:
	// the same as the Blog alone with --referenced of the ConfigMap.
	sample, err := os.ReadFile("../../config/samples/blog_v1_blog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.SplitN(string(sample), "\n---\n", 2)
	blog, settings := filepath.Join(dir, "blog.yaml"), filepath.Join(dir, "settings.yaml")
	os.WriteFile(blog, []byte(docs[1]), 0o644)
	os.WriteFile(settings, []byte(docs[0]), 0o644)
	want, err := run(t, "render", "-f", blog, "--referenced", settings)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run(t, "render", "-f", "../../config/samples/blog_v1_blog.yaml")
	if err != nil {
		t.Fatalf("render of the Blog sample (a ConfigMap and a Blog): %v", err)
	}
	if note := "rendering Blog default/news (blog.example.com/v1); the template may read the file's other objects as referenced objects: ConfigMap default/blog-settings (v1)\n"; !strings.Contains(got, note) {
		t.Errorf("render does not say what it renders and reads, want %q:\n%s", note, got)
	}
	if got = got[strings.Index(got, "\n")+1:]; got != want {
		t.Errorf("render of the sample:\n%s\nwant as with --referenced:\n%s", got, want)
	}

	// A Secret, without a namespace, beside a RedisCluster at v2.
	withSecret := filepath.Join(dir, "with-secret.yaml")
	os.WriteFile(withSecret, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: pw}\nstringData: {a: b}\n---\n"+
		"apiVersion: cache.example.com/v2\nkind: RedisCluster\nmetadata: {name: r}\nspec: {size: 2}\n"), 0o644)
	out, err := run(t, "render", "-f", withSecret)
	if err != nil || !strings.Contains(out, "name: r-1") || strings.Contains(out, "name: r-2") {
		t.Errorf("render of a Secret and a RedisCluster of size 2: %v\n%s", err, out)
	}
}

// TestRenderNamesWhatTheFileHolds: a file render cannot take says what it
// holds and what the templates serve.
func TestRenderNamesWhatTheFileHolds(t *testing.T) {
	dir := t.TempDir()
	served := "the templates serve Blog at blog.example.com/v1; RedisCluster at cache.example.com/v1, v2;"
	for name, c := range map[string]struct{ data, want string }{
		"secret": {"apiVersion: v1\nkind: Secret\nmetadata: {name: pw, namespace: ns}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
			"holds Secret ns/pw (v1), ConfigMap c (v1) and no custom resource: no template serves /v1, Kind=Secret (" + served},
		"two": {"apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: a}\n---\napiVersion: cache.example.com/v2\nkind: RedisCluster\nmetadata: {name: b, namespace: ns}\n",
			"holds 2 custom resources (RedisCluster a (cache.example.com/v1), RedisCluster ns/b (cache.example.com/v2)): render takes one; put each in a file of its own"},
		"v3": {"apiVersion: cache.example.com/v3\nkind: RedisCluster\nmetadata: {name: a}\n",
			"RedisCluster a (cache.example.com/v3) is at version v3, which no template serves (RedisCluster at cache.example.com/v1, v2)"},
		"empty": {"---\n", "holds no object: want a custom resource of a kind the templates serve (Blog at"},
	} {
		file := filepath.Join(dir, name+".yaml")
		os.WriteFile(file, []byte(c.data), 0o644)
		_, err := run(t, "render", "-f", file)
		if err == nil || !strings.Contains(err.Error(), file+": "+c.want) {
			t.Errorf("render %s: error %v\nwant %q", name, err, c.want)
		}
	}
}

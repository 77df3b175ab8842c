package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// The Blog test kind of testdata/authors: a retained claim, a wave-0
// migration Job, wave-1 Deployment and Service, a referenced ConfigMap,
// and conditions of its own (Migrated, Available, Exposed).
const authorsTemplates = "../../testdata/authors/templates"

var blogGVK = schema.GroupVersionKind{Group: "authors.example.com", Version: "v1", Kind: "Blog"}

// startBlog runs an operator on a copy of the authors templates in a fresh
// namespace with the Blog's settings ConfigMap, and waits for the Blog
// CRD. When the test ends its Blogs are deleted while the operator runs
// (it removes their finalizer), then the CRD.
func startBlog(t *testing.T) string {
	t.Helper()
	ns := clustertest.Namespace(t)
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "crd", "blogs.authors.example.com", "--ignore-not-found", "--timeout=60s")
	})
	startPaced(t, copyTemplatesFrom(t, authorsTemplates), ns, 0)
	t.Cleanup(func() { _, _ = kubectl(t, "", "-n", ns, "delete", "blogs", "--all", "--timeout=60s") })
	clustertest.WaitEstablished(t, time.Minute, "blogs.authors.example.com")
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: blog-settings, namespace: "+ns+"}\ndata: {url: http://blog}\n", "apply", "-f", "-")
	return ns
}

func applyBlog(t *testing.T, ns string, replicas int) {
	t.Helper()
	mustKubectl(t, fmt.Sprintf("apiVersion: authors.example.com/v1\nkind: Blog\nmetadata: {name: b, namespace: %s}\nspec: {replicas: %d, settings: {name: blog-settings}}\n",
		ns, replicas), "apply", "-f", "-")
}

// TestAuthorConditionsLive: a Blog's own conditions appear in
// status.conditions beside Ready, Reconciling and Stalled, so that
// `kubectl wait --for=condition=Migrated` works; each carries the CR's
// generation, and a new generation that leaves a condition's status as it
// was keeps its lastTransitionTime.
func TestAuthorConditionsLive(t *testing.T) {
	ns := startBlog(t)
	c := newClient(t)
	applyBlog(t, ns, 1)
	for _, cond := range []string{"Migrated", "Exposed", "Ready"} {
		mustKubectl(t, "", "-n", ns, "wait", "--for=condition="+cond, "blog/b", "--timeout=120s")
	}
	migrated := conditionOf(object(t, c, blogGVK, ns, "b"), "Migrated")
	if migrated["reason"] != "JobComplete" || migrated["message"] != "migration Job b-migrate-schema" || fmt.Sprint(migrated["observedGeneration"]) != "1" {
		t.Errorf("Migrated = %v, want JobComplete at generation 1", migrated)
	}
	applyBlog(t, ns, 2)
	eventually(t, time.Minute, func() string {
		got := conditionOf(object(t, c, blogGVK, ns, "b"), "Migrated")
		if fmt.Sprint(got["observedGeneration"]) != "2" {
			return fmt.Sprintf("Migrated at generation 2: %v", got)
		}
		if got["lastTransitionTime"] != migrated["lastTransitionTime"] || got["status"] != "True" {
			t.Errorf("Migrated = %v after a new generation, want status and lastTransitionTime of %v", got, migrated)
		}
		return ""
	})
	out := mustKubectl(t, "", "-n", ns, "get", "blog/b", "-o", `jsonpath={range .status.conditions[*]}{.type}{" "}{end}`)
	if got := strings.TrimSpace(out); got != "Available Exposed Migrated Ready Reconciling Stalled" {
		t.Errorf("condition types = %q, want the Blog's beside cueop's", got)
	}
}

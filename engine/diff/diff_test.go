package diff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The template edits of the tests.
var (
	podLabels   = []string{`metadata: {name: "\(_name)-\(i)", labels: _selector}`, `metadata: {name: "\(_name)-\(i)", labels: {_selector, tier: "cache"}}`}
	podArgs     = []string{`args: ["/etc/redis/redis.conf"]`, `args: ["/etc/redis/redis.conf", "--appendonly", "yes"]`}
	noRecreate  = []string{`ready: status.readyReplicas`, `policies: "pod-0": recreate: false` + "\n" + `ready: status.readyReplicas`}
	noService   = []string{"\tservice: {", "\t_service: {"}
	tightSchema = []string{`int & >=1 & <=100`, `int & >=1 & <=1`}
	badPort     = []string{`port: 6379, targetPort`, `port: 70000, targetPort`}
	// renameReplicas renames spec.replicas to spec.size wherever the
	// template names it.
	renameReplicas = []string{`".spec.replicas"`, `".spec.size"`, `".spec.replicas"`, `".spec.size"`, "\treplicas: *3", "\tsize: *3",
		"<=replicas", "<=size", "parent.spec.replicas", "parent.spec.size", "parent.spec.replicas", "parent.spec.size",
		"parent.spec.replicas", "parent.spec.size", "parent.spec.replicas", "parent.spec.size"}
	brokenCompile = []string{`_name: parent.metadata.name`, `_name: parent.metadata.name & 5`}
	oneService    = []string{`metadata: {name: _name, labels: _selector}`, `metadata: {name: "r0000", labels: _selector}`}
)

// TestDiff diffs one fleet of 3 RedisClusters (1, 2 and 1 Pods), left as
// the operator converged it, against edited templates. No diff writes:
// each run fails on a request that is not a dry run, and each later one
// finds the fleet as the first did.
func TestDiff(t *testing.T) {
	ns := fleet(t, 3)
	opts := diff.Options{Namespace: ns}

	t.Run("unchanged", func(t *testing.T) {
		r := run(t, copyTemplates(t), opts)
		s := redis(t, r)
		if s.CRs != 3 || s.Unchanged != 3 || len(r.CRs) != 0 || r.ExitCode() != 0 {
			t.Fatalf("want 3 CRs unchanged, exit 0; got exit %d:\n%s", r.ExitCode(), text(t, r))
		}
	})
	t.Run("schema rename refused", func(t *testing.T) {
		dir := edited(t, renameReplicas...)
		renameInSpoke(t, dir)
		r := run(t, dir, opts)
		s, out := redis(t, r), text(t, r)
		if s.Failed != 3 || r.ExitCode() != 2 {
			t.Fatalf("want the revision refused, its 3 CRs failed (spec.replicas not allowed), exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		for _, want := range []string{"refuses this revision and keeps serving the one it has", "v1 spec.replicas -> spec.size: renamed (at ", "rediscluster.cue:31:2): set in "} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in:\n%s", want, out)
			}
		}
	})
	t.Run("relabel Pods", func(t *testing.T) {
		r := run(t, edited(t, podLabels...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Changing != 3 || s.Children[diff.Update] != 4 || s.Destructive != 0 || len(s.Children) != 1 || r.ExitCode() != 1 {
			t.Fatalf("want 3 CRs changing, 4 Pods updated, nothing destructive, exit 1; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "+    tier: cache") || strings.Contains(out, "resourceVersion") || strings.Contains(out, "managedFields") || strings.Contains(out, "status:") {
			t.Errorf("want the new label in a diff cleaned of server fields:\n%s", out)
		}
		t.Logf("\n%s", out)
	})
	t.Run("immutable Pod field", func(t *testing.T) {
		r := run(t, edited(t, podArgs...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Children[diff.Recreate] != 4 || s.Destructive != 4 || s.Changing != 3 || r.ExitCode() != 1 {
			t.Fatalf("want 4 Pods recreated (destructive), exit 1; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "immutable") || !strings.Contains(out, "+    - --appendonly") {
			t.Errorf("want the immutable refusal named and the new args shown:\n%s", out)
		}
		t.Logf("\n%s", out)
	})
	t.Run("immutable Pod field, no recreate", func(t *testing.T) {
		r := run(t, edited(t, append(podArgs, noRecreate...)...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Children[diff.Refused] != 3 || s.Children[diff.Recreate] != 1 || s.Failed != 3 || r.ExitCode() != 2 {
			t.Fatalf("want pod-0 refused in 3 CRs, pod-1 of r1 held, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "ImmutableChange") || !strings.Contains(out, "held: not done while children.pod-0 is refused") {
			t.Errorf("want the stall and the held recreate named:\n%s", out)
		}
	})
	t.Run("immutable Pod field, invalid anew", func(t *testing.T) {
		r := run(t, edited(t, append(podArgs, "containers: [{", `restartPolicy: "Sometimes", containers: [{`)...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Children[diff.Refused] != 4 || s.Children[diff.Recreate] != 0 || r.ExitCode() != 2 {
			t.Fatalf("want every Pod refused (deleted, then not created anew), exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "refuses to create it anew") || !strings.Contains(out, "restartPolicy") || strings.Contains(out, "cueop-diff-") {
			t.Errorf("want the refusal of the new Pod, naming the field and the Pod's own name:\n%s", out)
		}
	})
	t.Run("drop a child", func(t *testing.T) {
		r := run(t, edited(t, noService...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Children[diff.Prune] != 3 || s.Destructive != 0 || s.Changing != 3 || r.ExitCode() != 1 {
			t.Fatalf("want 3 Services pruned, nothing destructive, exit 1; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "- prune    Service "+ns+"/r0000 (children.service)") || !strings.Contains(out, "-kind: Service") {
			t.Errorf("want the pruned Service and its diff:\n%s", out)
		}
	})
	t.Run("spec breaks the schema", func(t *testing.T) {
		r := run(t, edited(t, tightSchema...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Failed != 1 || s.Unchanged != 2 || r.ExitCode() != 2 {
			t.Fatalf("want r1 failed, the others unchanged, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "RedisCluster "+ns+"/r0001\n  error: InvalidSpec: spec.replicas: invalid value 2 (out of bound <=1) (template ") ||
			!strings.Contains(out, "rediscluster.cue:") {
			t.Errorf("want the field path and the CUE position:\n%s", out)
		}
	})
	t.Run("child refused by the API server", func(t *testing.T) {
		r := run(t, edited(t, badPort...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Children[diff.Refused] != 3 || r.ExitCode() != 2 {
			t.Fatalf("want 3 Services refused, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		if !strings.Contains(out, "children.service: Service "+ns+"/r0000 dry-run apply failed") || !strings.Contains(out, "spec.ports[0].port") {
			t.Errorf("want the child, the object and the field the API server names:\n%s", out)
		}
	})
	t.Run("name taken by another CR's child", func(t *testing.T) {
		r := run(t, edited(t, oneService...), opts)
		s, out := redis(t, r), text(t, r)
		if s.Children[diff.Conflict] != 2 || s.Failed != 2 || s.Unchanged != 1 || s.Children[diff.Update] != 0 || r.ExitCode() != 2 {
			t.Fatalf("want the Service of r0001 and r0002 in conflict, r0000 unchanged, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
		for _, want := range []string{
			"x conflict Service " + ns + "/r0000 (children.service)",
			"children.service: Service " + ns + "/r0000 exists and is controlled by RedisCluster " + ns + "/r0000",
			"- prune    Service " + ns + "/r0001 (children.service)",
			"held: not done while children.service is in conflict",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("released-from mark without its proof", func(t *testing.T) {
		// A tenant's Service of the name the template now gives, marked
		// released from r0000 with no proof: the controller stalls the
		// CR (ChildConflict), so diff may not show an adoption.
		c := newClient(t, clustertest.Config())
		svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"namespace": ns, "name": "r0000-svc",
				"annotations": map[string]any{"cueop.dev/released-from": "RedisCluster.cache.example.com " + ns + "/r0000"}},
			"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any{"name": "redis", "port": int64(6379)}}}}}
		if err := c.Create(context.Background(), svc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), svc) })
		r := run(t, edited(t, `metadata: {name: _name, labels: _selector}`, `metadata: {name: "\(_name)-svc", labels: _selector}`), opts)
		out := text(t, r)
		for _, want := range []string{
			"x conflict Service " + ns + "/r0000-svc (children.service)",
			"marked released from RedisCluster.cache.example.com " + ns + "/r0000, but it has no cueop.dev/release-proof annotation",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "r0000-svc") && (strings.Contains(line, "adopt ") || strings.Contains(line, "taken over")) {
				t.Errorf("diff shows an adoption the controller refuses: %q", line)
			}
		}
	})
	t.Run("template does not compile", func(t *testing.T) {
		r := run(t, edited(t, brokenCompile...), opts)
		out := text(t, r)
		if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "rediscluster.cue:") || r.ExitCode() != 2 {
			t.Fatalf("want the compile error with its position, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
	})
	t.Run("kind filter", func(t *testing.T) {
		o := opts
		o.Kinds = []string{"staticsites"}
		r := run(t, edited(t, podLabels...), o)
		if len(r.Kinds) != 1 || r.Kinds[0].Kind != "StaticSite" || r.ExitCode() != 0 {
			t.Fatalf("want StaticSite only, exit 0:\n%s", text(t, r))
		}
	})
	t.Run("label selector", func(t *testing.T) {
		o := opts
		o.Selector = labels.SelectorFromSet(labels.Set{"team": "none"})
		r := run(t, edited(t, podLabels...), o)
		if s := redis(t, r); s.CRs != 0 || r.ExitCode() != 0 {
			t.Fatalf("want no CR selected, exit 0:\n%s", text(t, r))
		}
	})
	t.Run("file", func(t *testing.T) {
		o := opts
		o.Files = []*unstructured.Unstructured{redisCR(ns, "r0000", 2), redisCR(ns, "new", 1)}
		r := run(t, copyTemplates(t), o)
		s, out := redis(t, r), text(t, r)
		if s.CRs != 2 || s.Changing != 2 || s.Children[diff.Create] != 4 || r.ExitCode() != 1 {
			t.Fatalf("want r0's second Pod and new's ConfigMap, Service and Pod created, exit 1; got exit %d:\n%s", r.ExitCode(), out)
		}
		o.Files = []*unstructured.Unstructured{redisCR(ns, "bad", 0)}
		r = run(t, copyTemplates(t), o)
		out = text(t, r)
		if r.ExitCode() != 2 || !strings.Contains(out, "RedisCluster "+ns+"/bad: the API server refuses the CR") || !strings.Contains(out, "spec.replicas") {
			t.Fatalf("want the CR refused with its field, exit 2; got exit %d:\n%s", r.ExitCode(), out)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := run(t, edited(t, podArgs...), opts)
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var back diff.Report
		if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.CRs) != 3 || back.CRs[0].Children[0].Action != diff.Recreate || !back.CRs[0].Children[0].Destructive {
			t.Fatalf("JSON: %v\n%s", err, b.String())
		}
	})
}

func redisCR(ns, name string, replicas int64) *unstructured.Unstructured {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(redisGVK)
	cr.SetNamespace(ns)
	cr.SetName(name)
	cr.Object["spec"] = map[string]any{"replicas": replicas}
	return cr
}

// renameInSpoke follows the rename of replicas to size in the v2 spoke's
// conversions, which name the hub's fields.
func renameInSpoke(t *testing.T, dir string) {
	t.Helper()
	testkit.EditFile(t, filepath.Join(dir, "rediscluster", "v2.cue"),
		strings.NewReplacer("in.spec.replicas", "in.spec.size", "replicas: in.spec.size", "size: in.spec.size").Replace)
}

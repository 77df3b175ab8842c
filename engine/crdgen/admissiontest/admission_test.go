// Package admissiontest checks, against a real API server, that the CRDs
// cueop generates refuse at admission what the templates refuse at render
// time.
package admissiontest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{ControlPlaneOnly: true})
}

const repo = "../../.."

// installCRDs applies CRD manifests with kubectl, those with several
// versions pointed at the tests' conversion webhook (conversion_test.go),
// and waits until they are established.
func installCRDs(t *testing.T, yamls string, names ...string) {
	t.Helper()
	clustertest.MustKubectl(t, pointed(t, yamls), "apply", "-f", "-")
	for _, n := range names {
		clustertest.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+n)
	}
}

// TestGoldenErrorCasesRefusedAtAdmission applies, with kubectl, the parent
// of every golden case that expects a render error, after installing the
// CRDs checked in under crds/. Each one must be refused by the API server
// with a message naming the field of error.txt, unless `cueop crd
// --explain` says the constraint is left to render.
func TestGoldenErrorCasesRefusedAtAdmission(t *testing.T) {
	set, err := template.Load(filepath.Join(repo, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	var names []string
	for _, k := range set.Kinds {
		crd, _, err := crdgen.Explain(k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(repo, "crds", crd.Name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(b))
		names = append(names, crd.Name)
	}
	installCRDs(t, strings.Join(all, "\n---\n"), names...)
	ns := clustertest.Namespace(t)
	cases := 0
	for _, k := range set.Kinds {
		_, rules, _ := crdgen.Explain(k)
		paths, _ := filepath.Glob(filepath.Join(repo, "testdata", k.Name, "*.txtar"))
		for _, p := range paths {
			ar, err := txtar.ParseFile(p)
			if err != nil {
				t.Fatal(err)
			}
			want, parent := section(ar, golden.SectionError), section(ar, golden.SectionParent)
			if want == "" {
				continue
			}
			field, _, _ := strings.Cut(want, ":")
			if field != "spec" && !strings.HasPrefix(field, "spec.") {
				// Not about the spec (a reference not found or refused):
				// nothing admission could check.
				t.Logf("%s: not a spec error: %s", filepath.Base(p), strings.TrimSpace(want))
				continue
			}
			if strings.Contains(want, " is immutable: it was ") {
				// A change refused against the value first rendered
				// (status.immutable): an update, which no create can be.
				t.Logf("%s: an update, not a create: %s", filepath.Base(p), strings.TrimSpace(want))
				continue
			}
			cases++
			obj, err := golden.ParseParent([]byte(parent), k)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			obj.SetNamespace(ns)
			obj.SetUID("")
			obj.SetGeneration(0)
			y, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			out, err := clustertest.Kubectl(t, string(y), "apply", "-f", "-")
			renderOnly := false
			for _, r := range rules {
				if !r.Admission() && r.Field == field {
					renderOnly = true
				}
			}
			switch {
			case renderOnly && err != nil:
				t.Errorf("%s: refused, but %s is said to be left to render: %s", p, field, out)
			case renderOnly:
			case err == nil:
				t.Errorf("%s: the API server accepted what render refuses (%s): %s", p, strings.TrimSpace(want), out)
			case !strings.Contains(out, field):
				t.Errorf("%s: refused without naming %s: %s", p, field, out)
			default:
				t.Logf("%s: %s", filepath.Base(p), lastLine(out))
			}
		}
	}
	if cases == 0 {
		t.Fatal("no golden case expects an error")
	}
}

// TestKubectlApplyRefusesMinReadyAboveReplicas: the shipped RedisCluster
// CRD refuses minReady above replicas with a message that says so, and
// accepts minReady within replicas.
func TestKubectlApplyRefusesMinReadyAboveReplicas(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "crds", "redisclusters.cache.example.com.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, string(b), "redisclusters.cache.example.com")
	ns := clustertest.Namespace(t)
	cr := func(minReady string) string {
		return "apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: r, namespace: " + ns +
			"}\nspec: {replicas: 3, minReady: " + minReady + "}\n"
	}
	out, err := clustertest.Kubectl(t, cr("5"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.minReady: Invalid value") ||
		!strings.Contains(out, "spec.minReady must be at most spec.replicas") {
		t.Fatalf("kubectl apply of minReady 5 > replicas 3: %v\n%s\nwant refused: spec.minReady must be at most spec.replicas", err, out)
	}
	t.Logf("refused: %s", lastLine(out))
	clustertest.MustKubectl(t, cr("3"), "apply", "-f", "-")
	// Lowering replicas below minReady is refused as well, at v1 and at
	// v2 (size), kubectl's preferred version.
	out, err = clustertest.Kubectl(t, "", "-n", ns, "patch", "redisclusters.v1.cache.example.com", "r", "--type=merge", "-p", `{"spec":{"replicas":2}}`)
	if err == nil || !strings.Contains(out, "spec.minReady must be at most spec.replicas") {
		t.Fatalf("patch replicas 2 under minReady 3 at v1: %v\n%s", err, out)
	}
	out, err = clustertest.Kubectl(t, "", "-n", ns, "patch", "redisclusters", "r", "--type=merge", "-p", `{"spec":{"size":2}}`)
	if err == nil || !strings.Contains(out, "spec.minReady must be at most spec.size") {
		t.Fatalf("patch size 2 under minReady 3 at v2: %v\n%s", err, out)
	}
}

// installTestdataCRD generates the CRD of res from the #Spec of the crdgen
// testdata file (a CUE file of its own), checks it as the API server
// would, and installs it.
func installTestdataCRD(t *testing.T, file string, res template.Resource) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("../testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	v := cuecontext.New().CompileBytes(src, cue.Filename(file))
	if v.Err() != nil {
		t.Fatal(v.Err())
	}
	crd, err := crdgen.FromResource(res, v.LookupPath(cue.ParsePath("#Spec")), cue.Value{})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdgen.Validate(crd); err != nil {
		t.Fatal(err)
	}
	y, err := crdgen.YAML(crd)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, string(y), crd.Name)
}

// TestImmutableFieldRefusedOnUpdate: a field marked @cueop(immutable)
// (testdata/immutable.cue) can be set on create and not changed, set or
// removed afterwards; other fields still change.
func TestImmutableFieldRefusedOnUpdate(t *testing.T) {
	installTestdataCRD(t, "immutable.cue", template.Resource{Group: "immutable.example.com", Version: "v1", Kind: "Volume"})
	ns := clustertest.Namespace(t)
	cr := func(spec string) string {
		return "apiVersion: immutable.example.com/v1\nkind: Volume\nmetadata: {name: v, namespace: " + ns + "}\nspec: " + spec + "\n"
	}
	clustertest.MustKubectl(t, cr("{storageClass: fast}"), "apply", "-f", "-")
	clustertest.MustKubectl(t, cr("{storageClass: fast, size: 3}"), "apply", "-f", "-")
	for _, tt := range []struct{ spec, want string }{
		{"{storageClass: slow, size: 3}", "spec.storageClass is immutable"},
		{"{size: 3}", "spec.storageClass is immutable"}, // the default, standard, is a change too
		{"{storageClass: fast, size: 3, zone: a}", "spec.zone is immutable"},
	} {
		out, err := clustertest.Kubectl(t, cr(tt.spec), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("apply %s: %v\n%s\nwant refused: %s", tt.spec, err, out, tt.want)
			continue
		}
		t.Logf("apply %s refused: %s", tt.spec, lastLine(out))
	}
	got := clustertest.MustKubectl(t, "", "-n", ns, "get", "volumes", "v", "-o", "jsonpath={.spec}")
	if !strings.Contains(got, `"storageClass":"fast"`) || strings.Contains(got, "zone") {
		t.Errorf("spec after refused updates: %s", got)
	}
}

// TestShapesOnTheRealAPIServer applies specs of testdata/shapes.cue that
// break each kind of generated rule, and one that breaks none, to the real
// API server: what the offline equivalence test evaluates with the API
// server's code holds on the server itself.
func TestShapesOnTheRealAPIServer(t *testing.T) {
	installTestdataCRD(t, "shapes.cue", template.Resource{Group: "shapes.example.com", Version: "v1", Kind: "Shape"})
	ns := clustertest.Namespace(t)
	for i, tt := range []struct{ spec, want string }{
		{"{surge: 1}", ""},
		{"{surge: 1, exposure: NodePort, nodePort: 2, label: x, tags: [a, b], code: c}", ""},
		{"{surge: 4, replicas: 3}", "spec.surge must be at most spec.replicas"},
		{"{surge: 1, window: {lo: 6}}", ""}, // hi defaults to 5, its own alternative
		{"{surge: 1, window: {lo: 6, hi: 6}}", "spec.window.hi must be 5 or greater than spec.window.lo"},
		{"{surge: 1, exposure: NodePort}", `spec.nodePort is required when spec.exposure is "NodePort"`},
		{"{surge: 1, nodePort: 2}", `spec.nodePort is required when spec.exposure is "NodePort", and not allowed otherwise`},
		{"{surge: 1, tags: [a, a]}", "spec.tags must not contain duplicate items"},
		{"{surge: 1, code: abc}", "the length of spec.code must be at most spec.maxLen"},
		{"{surge: 1, alias: x}", "spec.alias must be different from spec.name"},
	} {
		cr := fmt.Sprintf("apiVersion: shapes.example.com/v1\nkind: Shape\nmetadata: {name: s%d, namespace: %s}\nspec: %s\n", i, ns, tt.spec)
		out, err := clustertest.Kubectl(t, cr, "apply", "-f", "-")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v\n%s", tt.spec, err, out)
		case tt.want != "" && (err == nil || !strings.Contains(out, tt.want)):
			t.Errorf("%s: %v\n%s\nwant refused: %s", tt.spec, err, out, tt.want)
		}
	}
}

// TestRuleAddedAfterCreate: a RedisCluster created before its CRD had the
// minReady rule keeps working with the API server: the status writes the
// engine makes (it reports the spec Stalled) and metadata changes pass,
// because the API server ratchets rules over unchanged values; a change of
// the bad field itself is refused.
func TestRuleAddedAfterCreate(t *testing.T) {
	set, err := template.Load(filepath.Join(repo, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	k := set.Lookup("cache.example.com", "RedisCluster")
	if k == nil {
		t.Fatal("no RedisCluster kind")
	}
	crd, err := crdgen.Generate(k)
	if err != nil {
		t.Fatal(err)
	}
	without := crd.DeepCopy()
	spec := without.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) == 0 {
		t.Fatal("the RedisCluster CRD has no rule on spec")
	}
	spec.XValidations = nil
	without.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	y, err := crdgen.YAML(without)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, string(y), crd.Name)
	ns := clustertest.Namespace(t)
	cr := func(name string) string {
		return "apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: " + name + ", namespace: " + ns +
			"}\nspec: {replicas: 3, minReady: 5}\n"
	}
	clustertest.MustKubectl(t, cr("old"), "apply", "-f", "-")

	y, err = crdgen.YAML(crd)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, string(y), crd.Name)
	clustertest.Eventually(t, 30*time.Second, func() string {
		out, err := clustertest.Kubectl(t, cr("new"), "apply", "-f", "-")
		if err == nil {
			clustertest.MustKubectl(t, "", "-n", ns, "delete", "redisclusters", "new")
			return "the rule is not in force yet: " + out
		}
		return ""
	})
	clustertest.MustKubectl(t, "", "-n", ns, "patch", "redisclusters", "old", "--subresource=status", "--type=merge",
		"-p", `{"status":{"phase":"Pending","readyReplicas":0,"selector":"x"}}`)
	clustertest.MustKubectl(t, "", "-n", ns, "label", "redisclusters", "old", "touched=yes")
	// At kubectl's preferred version, v2, the CR stored before the rule
	// converts (leniently) and takes status and label writes above; its
	// spec is changed at v1, the version of the rule's fields.
	out, err := clustertest.Kubectl(t, "", "-n", ns, "patch", "redisclusters.v1.cache.example.com", "old", "--type=merge", "-p", `{"spec":{"minReady":6}}`)
	if err == nil || !strings.Contains(out, "spec.minReady must be at most spec.replicas") {
		t.Errorf("changing the bad minReady: %v\n%s\nwant refused", err, out)
	}
}

func section(ar *txtar.Archive, name string) string {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

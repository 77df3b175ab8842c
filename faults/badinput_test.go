package faults_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// Kinds that fail to load: the operator refuses the package, reports the
// error with its file:line:column and keeps serving the other kinds.
var loadRefused = []struct {
	pkg, kind, src string
	want           []string // in the operator's log
}{
	{"badsyntax", "BadSyntax", `package badsyntax

resource: {group: "faults.example.com", version: "v1", kind: "BadSyntax"}
#Spec: {size: *1 | int}
parent: spec: #Spec
children: {
	cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"
}
`, []string{`badsyntax.cue:8:3: expected '}', found 'EOF'`}},
	{"badtype", "BadType", `package badtype

resource: {group: "faults.example.com", version: "v1", kind: "BadType"}
#Spec: {size: *1 | int}
parent: spec: #Spec
_name: "fixed"
_name: 5
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: _name}
`, []string{`badtype.cue:6:8: _name: conflicting values "fixed" and 5 (mismatched types string and int)`}},
	{"badcontract", "BadContract", `package badcontract

resource: {group: "faults.example.com", version: "v1", kind: "BadContract"}
parent: spec: {}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
`, []string{`badcontract.cue:1:1: #Spec is missing`}},
	{"badexec", "BadExec", `package badexec

import "tool/exec"

resource: {group: "faults.example.com", version: "v1", kind: "BadExec"}
#Spec: {size: *1 | int}
parent: spec: #Spec
_run: exec.Run & {cmd: "touch /tmp/cueop-was-here"}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
`, []string{`badexec.cue:3:8: import of "tool/exec" refused: templates must be hermetic`}},
	{"badhttp", "BadHTTP", `package badhttp

import "tool/http"

resource: {group: "faults.example.com", version: "v1", kind: "BadHTTP"}
#Spec: {size: *1 | int}
parent: spec: #Spec
_get: http.Get & {url: "http://127.0.0.1:1/"}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
`, []string{`badhttp.cue:3:8: import of "tool/http" refused: templates must be hermetic`}},
}

// Kinds that load but whose renders are refused: a CR of each is Stalled
// with reason ChildRefused and a message naming the child and its
// file:line:column, and nothing of its render is applied, not even the
// valid ConfigMap <name>-ok each renders beside the refused child.
var renderRefused = []struct {
	pkg, kind, src string
	spec           string
	want           []*regexp.Regexp // each must match the Stalled message
	absent         []absent         // never created
}{
	{"noname", "NoName", `package noname

resource: {group: "faults.example.com", version: "v1", kind: "NoName"}
#Spec: {size: *1 | int}
parent: {metadata: name: string, spec: #Spec}
children: {
	ok: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-ok"}
	anonymous: {apiVersion: "v1", kind: "ConfigMap", metadata: labels: purpose: "test"}
}
`, "{}", rx(`noname\.cue:8:2: children\.anonymous: metadata\.name is required`), nil},
	{"otherns", "OtherNamespace", `package otherns

resource: {group: "faults.example.com", version: "v1", kind: "OtherNamespace"}
#Spec: {size: *1 | int}
parent: {metadata: name: string, spec: #Spec}
children: {
	ok: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-ok"}
	escape: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "\(parent.metadata.name)-escape", namespace: "kube-system"}}
}
`, "{}", rx(`otherns\.cue:8:2: children\.escape: namespace "kube-system" refused: children live in their parent's namespace`),
		[]absent{{cmGVK, "kube-system", "otherns-escape"}}},
	{"clusterscoped", "ClusterScoped", `package clusterscoped

resource: {group: "faults.example.com", version: "v1", kind: "ClusterScoped"}
#Spec: {size: *1 | int}
parent: {metadata: name: string, spec: #Spec}
children: {
	ok: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-ok"}
	role: {apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: name: "\(parent.metadata.name)-role", rules: []}
	webhook: {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration", metadata: name: "\(parent.metadata.name)-hook"}
}
`, "{}", rx(`clusterscoped\.cue:8:2: children\.role: kind ClusterRole\.rbac\.authorization\.k8s\.io is not in the allowed kinds`,
		`clusterscoped\.cue:9:2: children\.webhook: kind ValidatingWebhookConfiguration\.admissionregistration\.k8s\.io is not in the allowed kinds`),
		[]absent{
			{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, clusterScoped, "clusterscoped-role"},
			{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, clusterScoped, "clusterscoped-hook"},
		}},
	{"secret", "SecretMaker", `package secret

resource: {group: "faults.example.com", version: "v1", kind: "SecretMaker"}
#Spec: {size: *1 | int}
parent: {metadata: name: string, spec: #Spec}
children: {
	ok: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-ok"}
	secret: {apiVersion: "v1", kind: "Secret", metadata: name: "\(parent.metadata.name)-secret", stringData: password: "hunter2"}
}
`, "{}", rx(`secret\.cue:8:2: children\.secret: kind Secret is not in the allowed kinds`),
		[]absent{{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "", "secret-secret"}}},
	// The schema allows 100000 ConfigMaps; the children budget is 500. (At
	// 100000 the render runs out of its CPU and memory budget first:
	// RenderBudget, engine/operator TestRenderBudgetStallsHostileCR.)
	{"flood", "Flood", `package flood

import "list"

resource: {group: "faults.example.com", version: "v1", kind: "Flood"}
#Spec: {
	// Number of ConfigMaps.
	count: *1 | int & >=1 & <=100000
}
parent: {metadata: name: string, spec: #Spec}
children: {
	ok: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-ok"}
	for i in list.Range(0, parent.spec.count, 1) {
		"cm-\(i)": {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-\(i)"}
	}
}
`, "{count: 600}", rx(`flood\.cue:\d+:\d+: children: 601 children exceed the render budget of 500`),
		[]absent{{cmGVK, "", "flood-0"}, {cmGVK, "", "flood-499"}}},
}

// absent is an object that must not exist. ns "" is the test's namespace.
type absent struct {
	gvk      schema.GroupVersionKind
	ns, name string
}

// clusterScoped as absent.ns: the object is cluster-scoped.
const clusterScoped = "-"

func rx(exprs ...string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, e := range exprs {
		out = append(out, regexp.MustCompile(e))
	}
	return out
}

// logText decodes the operator's JSON log into one line per entry:
// message and error.
func logText(raw string) string {
	var b strings.Builder
	for _, line := range strings.Split(raw, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil {
			b.WriteString(line + "\n")
			continue
		}
		fmt.Fprintf(&b, "%v: %v\n", entry["msg"], entry["error"])
	}
	return b.String()
}

// stalledWith says why cr is not Stalled with reason and a message
// matching every expression, or "".
func stalledWith(cr *unstructured.Unstructured, reason string, want []*regexp.Regexp) string {
	c := condition(cr, "Stalled")
	if c == nil || c["status"] != "True" || c["reason"] != reason {
		return fmt.Sprintf("%s %s: Stalled = %v", cr.GetKind(), cr.GetName(), c)
	}
	msg := fmt.Sprint(c["message"])
	for _, re := range want {
		if !re.MatchString(msg) {
			return fmt.Sprintf("%s %s: Stalled message %q does not match %s", cr.GetKind(), cr.GetName(), msg, re)
		}
	}
	if conditionStatus(cr, "Ready") != "False" {
		return cr.GetName() + ": Ready is not False"
	}
	return ""
}

// TestBadInputRefused runs `cueop run` on the shipped templates plus kinds
// that are broken in every way a template can be, and applies, beside
// healthy CRs, a CR of every kind whose render must be refused. Each
// refusal names its source (the CUE file:line:column, the child id or the
// spec field), nothing of a refused render is applied, and meanwhile the
// healthy RedisCluster and StaticSite converge.
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	dir := copyTemplates(t)
	for _, k := range loadRefused {
		writeKind(t, dir, k.pkg, k.src)
	}
	for _, k := range renderRefused {
		writeKind(t, dir, k.pkg, k.src)
	}
	port := freePort(t)
	op := startCueop(t, e, dir, ns, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port))
	for _, k := range renderRefused {
		e.waitCRD(t, schema.GroupVersionKind{Group: "faults.example.com", Version: "v1", Kind: k.kind})
	}
	e.waitCRD(t, redisGVK)
	e.waitCRD(t, siteGVK)

	// The slowest refusal first: 100000 children are evaluated before the
	// budget refuses them. The other kinds must not wait for it.
	var b strings.Builder
	for _, k := range renderRefused {
		fmt.Fprintf(&b, "---\napiVersion: faults.example.com/v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\nspec: %s\n", k.kind, k.pkg, ns, k.spec)
	}
	start := time.Now()
	e.mustKubectl(t, b.String(), "apply", "-f", "-")
	e.mustKubectl(t, redisYAML(ns, "good", 3)+
		"---\napiVersion: web.example.com/v1\nkind: StaticSite\nmetadata: {name: site, namespace: "+ns+"}\nspec: {replicas: 1}\n",
		"apply", "-f", "-")

	t.Run("HealthyKindsConverge", func(t *testing.T) {
		eventually(t, 90*time.Second, func() string { return e.allRedisReady(t, ns, map[string]int{"good": 3}) })
		e.mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "staticsite/site", "--timeout=90s")
		t.Logf("healthy RedisCluster and StaticSite Ready %s after the apply", time.Since(start).Round(time.Millisecond))
	})

	t.Run("SchemaMaxEnforcedByAPIServer", func(t *testing.T) {
		out, err := e.kubectl(t, fmt.Sprintf("apiVersion: faults.example.com/v1\nkind: Flood\nmetadata: {name: flood2, namespace: %s}\nspec: {count: 100001}\n", ns), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.count") {
			t.Errorf("count 100001 beyond the schema maximum: err=%v, want a refusal naming spec.count:\n%s", err, out)
		}
	})

	t.Run("CrossFieldConstraint", func(t *testing.T) {
		// minReady <= replicas is a CEL rule of the CRD, generated from #Spec
		// (render refuses it too: testdata/rediscluster/bad-min-ready.txtar).
		out, err := e.kubectl(t, redisYAML(ns, "cross", 3)+"  minReady: 5\n", "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.minReady must be at most spec.replicas") {
			t.Errorf("minReady 5 above replicas 3: err=%v, want a refusal by the API server:\n%s", err, out)
		}
	})

	for _, k := range renderRefused {
		t.Run("Render/"+k.kind, func(t *testing.T) {
			gvk := schema.GroupVersionKind{Group: "faults.example.com", Version: "v1", Kind: k.kind}
			// The Flood render costs 20 to 35 s of CPU: a minute on an idle
			// machine, several when a loaded one gives cueop a tenth of a
			// core.
			eventually(t, 10*time.Minute, func() string {
				return stalledWith(e.mustGet(t, gvk, ns, k.pkg), "ChildRefused", k.want)
			})
			t.Logf("Stalled %s after the apply", time.Since(start).Round(time.Millisecond))
			cr := e.mustGet(t, gvk, ns, k.pkg)
			for _, ck := range childKinds {
				if objs := e.list(t, ck, ns, map[string]string{wellknown.LabelOwnerUID: string(cr.GetUID())}); len(objs) != 0 {
					t.Errorf("%d %s applied for a refused render", len(objs), ck.Kind)
				}
			}
			for _, a := range append([]absent{{cmGVK, "", k.pkg + "-ok"}}, k.absent...) {
				where := a.ns
				switch where {
				case "":
					where = ns
				case clusterScoped:
					where = ""
				}
				if _, err := e.get(t, a.gvk, where, a.name); !apierrors.IsNotFound(err) {
					t.Errorf("%s %s/%s: %v; want NotFound: nothing of a refused render is applied", a.gvk.Kind, where, a.name, err)
				}
			}
		})
	}

	t.Run("TemplateLoadErrors", func(t *testing.T) {
		text := logText(op.log(t))
		if !strings.Contains(text, "templates did not load") {
			t.Errorf("no load error in the log:\n%s", tail(text, 20))
		}
		for _, k := range loadRefused {
			for _, w := range k.want {
				if !strings.Contains(text, k.pkg+"/"+w) {
					t.Errorf("the log does not report %q", k.pkg+"/"+w)
				}
			}
			crd := template.Pluralize(strings.ToLower(k.kind)) + ".faults.example.com"
			if out, err := e.kubectl(t, "", "get", "crd", crd); err == nil || !strings.Contains(out, "NotFound") {
				t.Errorf("CRD %s of the refused package %s: %v, want NotFound\n%s", crd, k.pkg, err, out)
			}
		}
		n, err := metric(fmt.Sprintf("http://127.0.0.1:%d/metrics", port), "cueop_template_load_errors_total")
		if err != nil || n < 1 {
			t.Errorf("cueop_template_load_errors_total = %v (%v), want at least 1", n, err)
		}
	})

	renders, _ := metricLines(fmt.Sprintf("http://127.0.0.1:%d/metrics", port), `kind="Flood"`, "cueop_render_duration_seconds_")
	t.Logf("renders of the Flood CR: %v", renders[max(0, len(renders)-2):])

	// Nothing but the healthy CRs' children exists in the namespace.
	eventually(t, 60*time.Second, func() string { return e.checkChildren(t, ns, redisGVK, map[string]int{"good": 3}) })
	if op.exited() {
		t.Errorf("cueop exited: %s", tail(op.log(t), 20))
	}
}

// TestClusterScopedKindCannotBeAllowed gives `cueop run` an allow-list
// naming a cluster-scoped kind: cueop refuses to start and says why, so no
// template can ever be allowed to create one.
func TestClusterScopedKindCannotBeAllowed(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	op := startCueop(t, e, copyTemplates(t), ns, "--allowed-kinds=ConfigMap,ClusterRole.rbac.authorization.k8s.io")
	select {
	case <-op.done:
	case <-time.After(60 * time.Second):
		t.Fatal("cueop still running 60s after start with a cluster-scoped kind allowed")
	}
	if op.err == nil {
		t.Error("cueop exited 0")
	}
	if log := op.log(t); !strings.Contains(log, "allowed kinds: ClusterRole.rbac.authorization.k8s.io is cluster-scoped") {
		t.Errorf("cueop's output does not say why:\n%s", tail(log, 10))
	}
}

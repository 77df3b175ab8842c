package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// lockerTemplate has an immutable spec field, mirrored into a ConfigMap.
const lockerTemplate = `package locker

resource: {group: "imm.example.com", version: "v1", kind: "Locker"}

#Spec: {
	// The storage class; it cannot change once the locker exists.
	class: *"standard" | string @cueop(immutable)
	size:  *1 | int & >=1
}
#Status: {class: string}

parent: spec: #Spec
observed: [string]: {...}

children: config: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: "locker-\(parent.metadata.name)"
	data: {class: parent.spec.class, size: "\(parent.spec.size)"}
}
status: {
	if observed.config != _|_ {class: observed.config.data.class}
	if observed.config == _|_ {class: ""}
}
`

// TestImmutableChangeRefusedAtRender: a CR changed while its CRD had no
// rule for an @cueop(immutable) field (here the CRD is installed with its
// CEL rules stripped, as an older cueop generated it) is refused at
// render: Stalled, InvalidSpec, naming the field and both values, and its
// children keep the value first rendered. The value is recorded in
// status.immutable.
func TestImmutableChangeRefusedAtRender(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"locker": lockerTemplate})
	set, err := template.Load(dir)
	must(t, err)
	crd, err := crdgen.Generate(set.Kinds[0])
	must(t, err)
	for i := range crd.Spec.Versions {
		stripRules(crd.Spec.Versions[i].Schema.OpenAPIV3Schema)
	}
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	b, err := yaml.Marshal(crd)
	must(t, err)
	if strings.Contains(string(b), "oldSelf") {
		t.Fatal("the CRD still has its immutability rule")
	}
	mustKubectl(t, string(b), "apply", "-f", "-")
	mustKubectl(t, "", "wait", "--for=condition=Established", "crd/"+crd.Name, "--timeout=60s")

	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	operatortest.Start(t, clustertest.Config(), opts)
	mustKubectl(t, "apiVersion: imm.example.com/v1\nkind: Locker\nmetadata:\n  name: l\n  namespace: "+ns+"\nspec:\n  size: 2\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "locker/l", "--timeout=120s")
	c := newClient(t)
	locker := func() *unstructured.Unstructured {
		cr := &unstructured.Unstructured{}
		cr.SetAPIVersion("imm.example.com/v1")
		cr.SetKind("Locker")
		must(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "l"}, cr))
		return cr
	}
	if rec, _, _ := unstructured.NestedString(locker().Object, "status", "immutable", "spec.class"); rec != "standard" {
		t.Fatalf("status.immutable[spec.class] = %q, want the defaulted class recorded", rec)
	}

	// The API server lets the change through (no rule); render refuses it.
	mustKubectl(t, "", "-n", ns, "patch", "locker", "l", "--type=merge", "-p", `{"spec":{"class":"fast","size":3}}`)
	eventually(t, 60*time.Second, func() string {
		cr := locker()
		cond := conditionOf(cr, "Stalled")
		if cond == nil || cond["status"] != "True" || cond["reason"] != "InvalidSpec" {
			return "Stalled = " + toString(cond)
		}
		msg := fmt.Sprint(cond["message"])
		for _, want := range []string{"spec.class: is immutable", `"standard"`, `"fast"`, "locker/locker.cue:"} {
			if !strings.Contains(msg, want) {
				return "Stalled message " + msg + " lacks " + want
			}
		}
		return ""
	})
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	must(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "locker-l"}, cm))
	if class, _, _ := unstructured.NestedString(cm.Object, "data", "class"); class != "standard" {
		t.Fatalf("the ConfigMap's class is %q after a refused change, want standard", class)
	}
	if size, _, _ := unstructured.NestedString(cm.Object, "data", "size"); size != "2" {
		t.Fatalf("the ConfigMap's size is %q: a refused render applied the rest of the change", size)
	}

	// Putting the class back is accepted and the size change goes through.
	mustKubectl(t, "", "-n", ns, "patch", "locker", "l", "--type=merge", "-p", `{"spec":{"class":"standard"}}`)
	eventually(t, 60*time.Second, func() string {
		must(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "locker-l"}, cm))
		if size, _, _ := unstructured.NestedString(cm.Object, "data", "size"); size != "3" {
			return "size not applied after the class was put back"
		}
		if s := fmt.Sprint(conditionOf(locker(), "Stalled")["status"]); s != "False" {
			return "Stalled is " + s
		}
		return ""
	})
}

// stripRules removes every CEL rule of s, as a CRD generated before the
// rules existed.
func stripRules(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.XValidations = nil
	for k, p := range s.Properties {
		stripRules(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		stripRules(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		stripRules(s.AdditionalProperties.Schema)
	}
}

func toString(v any) string {
	if v == nil {
		return "<none>"
	}
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

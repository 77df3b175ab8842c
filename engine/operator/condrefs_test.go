package operator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// condRefsKind reads the ConfigMap its spec names, if it names one: the
// reference is declared in a top-level if.
const condRefsKind = `package greeter
resource: {group: "condrefs.test.example", version: "v1", kind: "Greeter"}
#Spec: {settingsFrom?: string}
parent: {metadata: name: string, spec: #Spec}
referenced: [string]: {...}
if parent.spec.settingsFrom != _|_ {
	references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.spec.settingsFrom}
}
children: out: {
	apiVersion: "v1", kind: "ConfigMap"
	metadata: name: "\(parent.metadata.name)-out"
	data: greeting: *referenced.settings.data.greeting | "none"
}
`

// TestReferenceInTopLevelIf: a CR whose spec names settings reads them
// through a reference declared in a top-level if, and follows their
// change; a CR that names none renders without (before: the reference was
// never read, the greeting stayed "none").
func TestReferenceInTopLevelIf(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"greeter/greeter.cue": condRefsKind})
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "crd", "greeters.condrefs.test.example", "--ignore-not-found", "--wait", "--timeout=60s")
	})
	operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, 60*time.Second, "greeters.condrefs.test.example")
	settings := func(greeting string) {
		mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "+ns+"}\ndata: {greeting: "+greeting+"}\n",
			"apply", "--server-side", "--field-manager=test", "-f", "-")
	}
	settings("hello")
	mustKubectl(t, "apiVersion: condrefs.test.example/v1\nkind: Greeter\nmetadata: {name: with, namespace: "+ns+"}\nspec: {settingsFrom: settings}\n---\n"+
		"apiVersion: condrefs.test.example/v1\nkind: Greeter\nmetadata: {name: without, namespace: "+ns+"}\nspec: {}\n",
		"apply", "--server-side", "--field-manager=test", "-f", "-")
	greeting := func(name, want string) {
		eventually(t, 90*time.Second, func() string {
			out, err := kubectl(t, "", "-n", ns, "get", "configmap", name+"-out", "-o", "jsonpath={.data.greeting}")
			if err != nil || out != want {
				return fmt.Sprintf("ConfigMap %s-out: greeting %q, %v; want %q", name, out, err, want)
			}
			return ""
		})
	}
	greeting("with", "hello")
	greeting("without", "none")
	settings("bonjour")
	greeting("with", "bonjour")
}

package diff_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// autoTemplate renders a HorizontalPodAutoscaler at autoscaling/v1, not the
// version the cluster prefers (v2), and a ConfigMap saying at which version
// the template read it.
const autoTemplate = `package auto

resource: {group: "auto.example.com", version: "v1", kind: "Auto"}
#Spec: {}
parent: {metadata: name: string, spec: #Spec}
observed: [string]: {...}
children: {
	hpa: {
		apiVersion: "autoscaling/v1"
		kind:       "HorizontalPodAutoscaler"
		metadata: name: parent.metadata.name
		spec: {scaleTargetRef: {apiVersion: "apps/v1", kind: "Deployment", name: "app"}, maxReplicas: 2}
	}
	seen: {
		apiVersion: "v1"
		kind:       "ConfigMap"
		metadata: name: "\(parent.metadata.name)-seen"
		data: version: [if observed.hpa != _|_ {observed.hpa.apiVersion}, "none"][0]
	}
}
ready: true
`

// TestDiffReadsChildrenAtTheRenderedVersion: a child rendered at a version
// the cluster does not prefer is read by the template at that version, as
// the controller reads it, so a converged CR shows no change.
func TestDiffReadsChildrenAtTheRenderedVersion(t *testing.T) {
	dir := testkit.Templates(t, map[string]string{
		"cue.mod/module.cue": testkit.ModuleFile("cueop.example/templates@v0"),
		"auto/auto.cue":      autoTemplate,
	})
	ns := clustertest.Namespace(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	autoGVK := schema.GroupVersionKind{Group: "auto.example.com", Version: "v1", Kind: "Auto"}
	c := clustertest.CreateWhenServed(t, clustertest.Object(autoGVK, ns, "a", map[string]any{"spec": map[string]any{}}), time.Minute)
	clustertest.Eventually(t, time.Minute, func() string {
		if v, err := clustertest.ConfigMapData(c, ns, "a-seen", "version"); err != nil {
			return err.Error()
		} else if v != "autoscaling/v1" {
			return "the template saw " + v
		}
		return ""
	})
	a.Settled(t, 0, time.Minute)
	stop()

	r := run(t, dir, diff.Options{Namespace: ns})
	if r.ExitCode() != 0 || r.Kinds[0].Unchanged != 1 {
		t.Fatalf("want the converged CR unchanged, exit 0; got exit %d:\n%s", r.ExitCode(), text(t, r))
	}
}

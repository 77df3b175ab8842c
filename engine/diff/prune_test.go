package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// volTemplate is a kind of two PersistentVolumeClaims, the one "keep"
// released rather than pruned (a claim's default), the one "data" opted
// out; without claims it renders a ConfigMap.
const volTemplate = `package vol

resource: {group: "vol.example.com", version: "v1", kind: "Vol"}
#Spec: {size: *"1Gi" | string}
parent: {metadata: name: string, spec: #Spec}
observed: [string]: {...}
_claim: {apiVersion: "v1", kind: "PersistentVolumeClaim", spec: {accessModes: ["ReadWriteOnce"], resources: requests: storage: parent.spec.size}}
CHILDREN
ready: true
`

const (
	withClaims = `children: {
	data: _claim & {metadata: name: "\(parent.metadata.name)-data"}
	keep: _claim & {metadata: name: "\(parent.metadata.name)-keep"}
}
policies: data: prune: "always"`
	withoutClaims = `children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name}`
)

// volTemplates writes a templates directory holding the Vol kind with
// children.
func volTemplates(t *testing.T, children string) string {
	t.Helper()
	return testkit.Templates(t, map[string]string{
		"cue.mod/module.cue": testkit.ModuleFile("cueop.example/templates@v0"),
		"vol/vol.cue":        strings.Replace(volTemplate, "CHILDREN", children, 1),
	})
}

// TestDiffPrunesData: a template edit that drops two PersistentVolumeClaims
// shows the one whose policy says prune: "always" pruned as destructive
// (its data goes) and the other, with a claim's default policy, released; a kind the cluster has no CRD for
// is reported as not served.
func TestDiffPrunesData(t *testing.T) {
	ns := clustertest.Namespace(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(volTemplates(t, withClaims), ns))
	volGVK := schema.GroupVersionKind{Group: "vol.example.com", Version: "v1", Kind: "Vol"}
	c := clustertest.CreateWhenServed(t, clustertest.Object(volGVK, ns, "v", map[string]any{"spec": map[string]any{}}), time.Minute)
	clustertest.Eventually(t, time.Minute, func() string {
		var pvcs corev1.PersistentVolumeClaimList
		if err := c.List(context.Background(), &pvcs, client.InNamespace(ns)); err != nil || len(pvcs.Items) != 2 {
			return fmt.Sprintf("%d claims (%v)", len(pvcs.Items), err)
		}
		return ""
	})
	a.Settled(t, 0, time.Minute)
	stop()

	r := run(t, volTemplates(t, withoutClaims), diff.Options{Namespace: ns})
	out := text(t, r)
	s := r.Kinds[0]
	if s.Kind != "Vol" || s.Children[diff.Prune] != 1 || s.Children[diff.Release] != 1 || s.Children[diff.Create] != 1 || s.Destructive != 1 || r.ExitCode() != 1 {
		t.Fatalf("want the data claim pruned (destructive), the other released, a ConfigMap created, exit 1; got exit %d:\n%s", r.ExitCode(), out)
	}
	if !strings.Contains(out, "- prune    PersistentVolumeClaim "+ns+"/v-data (children.data) DESTRUCTIVE") || !strings.Contains(out, "? release  PersistentVolumeClaim "+ns+"/v-keep (children.keep)") {
		t.Errorf("want the claims named:\n%s", out)
	}

	ghost := volTemplates(t, withoutClaims)
	testkit.EditFile(t, filepath.Join(ghost, "vol", "vol.cue"), testkit.Replace("vol.example.com", "ghost.example.com"))
	r = run(t, ghost, diff.Options{Namespace: ns})
	if len(r.Kinds) != 1 || !r.Kinds[0].NotServed || r.ExitCode() != 0 || !strings.Contains(text(t, r), "not served by the cluster") {
		t.Errorf("a kind without CRD: want it reported not served, exit 0:\n%s", text(t, r))
	}
}

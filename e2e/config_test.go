package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/testkit"
)

// TestKustomizeBuilds checks that config/default builds with the machine's
// kubectl and holds exactly the objects of a deployment.
func TestKustomizeBuilds(t *testing.T) {
	objs := buildDefault(t)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"Namespace//cueop-system",
		"ServiceAccount/cueop-system/cueop-controller",
		"ClusterRole//cueop-manager",
		"ClusterRoleBinding//cueop-manager",
		"Role/cueop-system/cueop-leader-election",
		"RoleBinding/cueop-system/cueop-leader-election",
		"Role/cueop-system/cueop-webhook-cert",
		"RoleBinding/cueop-system/cueop-webhook-cert",
		"Role/cueop-system/cueop-release-key",
		"RoleBinding/cueop-system/cueop-release-key",
		"Service/cueop-system/cueop-webhook",
		"NetworkPolicy/cueop-system/cueop-webhook",
		"ConfigMap/cueop-system/cueop-templates",
		"Service/cueop-system/cueop-controller-metrics",
		"Deployment/cueop-system/cueop-controller",
	}
	for _, k := range loadTemplates(t).Kinds {
		crd := k.Resource.CRDName()
		want = append(want, "CustomResourceDefinition//"+crd, "ServiceAccount/cueop-system/cueop-"+crd,
			"ClusterRole//cueop-"+crd, "ClusterRoleBinding//cueop-"+crd)
	}
	want = append(want, "Role/cueop-system/cueop-impersonate", "RoleBinding/cueop-system/cueop-impersonate",
		"CustomResourceDefinition//templates.cueop.dev")
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("kubectl kustomize %s:\n got %v\nwant %v", configDefault, got, want)
	}
	checkDeployment(t, objs)
}

func loadTemplates(t *testing.T) *template.Set {
	t.Helper()
	set := templatetest.Load(t, templatesDir)
	return set
}

// checkDeployment checks what the generated patch and the hand-written
// manager.yaml must agree on.
func checkDeployment(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var d appsv1.Deployment
	typed(t, find(t, objs, "Deployment", "cueop-controller"), &d)
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != "cueop-controller" || len(spec.Containers) != 1 {
		t.Fatalf("pod spec: serviceAccountName %q, %d containers", spec.ServiceAccountName, len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Image != "cueop:dev" || !slices.Contains(c.Args, "--templates=/templates") || !slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("container: image %q, args %v", c.Image, c.Args)
	}
	if _, err := render.ParseKindSet(allowedKinds(t, objs).String()); err != nil || len(allowedKinds(t, objs)) == 0 {
		t.Errorf("CUEOP_ALLOWED_KINDS: %v", err)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || *sc.RunAsUser != 65532 || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext: %+v", sc)
	}
	checkWebhookBind(t, c)
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/templates" || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("volume mounts: %+v", c.VolumeMounts)
	}
}

// allowedKinds is the CUEOP_ALLOWED_KINDS of the Deployment: the child kinds
// the generated RBAC grants.
func allowedKinds(t *testing.T, objs []*unstructured.Unstructured) render.KindSet {
	t.Helper()
	set, err := render.ParseKindSet(deploymentEnv(t, objs, "CUEOP_ALLOWED_KINDS"))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// deploymentEnv is the value of the Deployment's variable name.
func deploymentEnv(t *testing.T, objs []*unstructured.Unstructured, name string) string {
	t.Helper()
	var d appsv1.Deployment
	typed(t, find(t, objs, "Deployment", "cueop-controller"), &d)
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("the Deployment sets no %s", name)
	return ""
}

// TestServerDryRun applies config/default with --dry-run=server. A dry run
// creates nothing, so the namespace is created for real first: without it
// every namespaced object would be refused. The namespace enforces and warns
// on the restricted Pod Security Standard, so a warning fails the test.
func TestServerDryRun(t *testing.T) {
	ns := find(t, buildDefault(t), "Namespace", systemNS)
	mustKubectl(t, yamlStream(t, []*unstructured.Unstructured{ns}), "apply", "-f", "-")
	out := mustKubectl(t, "", "apply", "--dry-run=server", "-k", configDefault)
	if strings.Contains(out, "Warning") {
		t.Errorf("kubectl apply --dry-run=server warns:\n%s", out)
	}
	for _, want := range []string{"deployment.apps/cueop-controller created (server dry run)", "clusterrole.rbac.authorization.k8s.io/cueop-manager"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply --dry-run=server output lacks %q:\n%s", want, out)
		}
	}
}

// TestTemplatesVolumeRecreatesDirectory lays the ConfigMap out as the
// kubelet does with the Deployment's volume items (a timestamped snapshot,
// a ..data symlink to it, a symlink per top-level entry), then loads it: it
// must be the templates directory, kind for kind and revision for revision.
func TestTemplatesVolumeRecreatesDirectory(t *testing.T) {
	objs := buildDefault(t)
	var cm corev1.ConfigMap
	typed(t, find(t, objs, "ConfigMap", "cueop-templates"), &cm)
	var d appsv1.Deployment
	typed(t, find(t, objs, "Deployment", "cueop-controller"), &d)
	dir := layOutVolume(t, &cm, templatesVolume(t, &d))

	want, got := loadTemplates(t), loadDir(t, dir)
	if len(got.Kinds) != len(want.Kinds) {
		t.Fatalf("the volume has %d kinds, the templates %d", len(got.Kinds), len(want.Kinds))
	}
	for i, k := range want.Kinds {
		g := got.Kinds[i]
		if g.Name != k.Name || g.Revision != k.Revision || g.Resource.GroupVersionKind() != k.Resource.GroupVersionKind() {
			t.Errorf("kind %s: volume has %s %s revision %s, want revision %s", k.Name, g.Name, g.Resource.GroupVersionKind(), g.Revision, k.Revision)
		}
	}
	if gotFiles, wantFiles := listFiles(t, filepath.Join(dir, "..data")), listFiles(t, templatesDir); !slices.Equal(gotFiles, wantFiles) {
		t.Errorf("volume files %v, want every file of the templates %v", gotFiles, wantFiles)
	}
}

func loadDir(t *testing.T, dir string) *template.Set {
	t.Helper()
	set := templatetest.Load(t, dir)
	return set
}

func templatesVolume(t *testing.T, d *appsv1.Deployment) []corev1.KeyToPath {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "templates" && v.ConfigMap != nil && v.ConfigMap.Name == "cueop-templates" {
			return v.ConfigMap.Items
		}
	}
	t.Fatal("the Deployment has no templates volume of ConfigMap cueop-templates")
	return nil
}

// layOutVolume writes cm's items as the kubelet's atomic writer does.
func layOutVolume(t *testing.T, cm *corev1.ConfigMap, items []corev1.KeyToPath) string {
	t.Helper()
	dir := t.TempDir()
	snapshot := "..2026_01_02_03_04_05.000000001"
	top := map[string]bool{}
	for _, it := range items {
		data, ok := cm.Data[it.Key]
		if b, bin := cm.BinaryData[it.Key]; bin {
			data, ok = string(b), true
		}
		if !ok {
			t.Fatalf("volume item %s: the ConfigMap has no key %q", it.Path, it.Key)
		}
		testkit.Write(t, filepath.Join(dir, snapshot), map[string]string{it.Path: data})
		top[strings.SplitN(it.Path, "/", 2)[0]] = true
	}
	must(t, os.Symlink(snapshot, filepath.Join(dir, "..data")))
	for name := range top {
		must(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}
	if len(items) != len(cm.Data)+len(cm.BinaryData) {
		t.Errorf("%d volume items for %d ConfigMap keys", len(items), len(cm.Data)+len(cm.BinaryData))
	}
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// listFiles lists the regular files below dir (following dir itself if it is
// a symlink), relative to it.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	root, err := filepath.EvalSymlinks(dir)
	must(t, err)
	var files []string
	must(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	}))
	sort.Strings(files)
	return files
}

package main

// The four kinds of ./templates as `bench identities` creates them: each
// one's CRs (the specs of config/samples, one replica each), the
// ConfigMaps the Blog and the WebApp reference, and the kinds each renders
// and references, of which engine/identity makes the rights of its
// ServiceAccount.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// idKind is one kind of the templates as the benchmark creates it.
type idKind struct {
	gvr  schema.GroupVersionResource
	kind string
	spec func(name string) map[string]any
	// children and references are the kinds its template renders and
	// reads (for the CRs spec makes): engine/identity makes the rights of
	// its ServiceAccount of them, as `cueop manifests` does of what the
	// golden cases and samples render.
	children, references render.KindSet
}

// The settings ConfigMaps the Blog and the WebApp reference, in every
// namespace of a run.
const (
	blogSettings   = "blog-settings"
	webappSettings = "webapp-settings"
)

// idKinds are the kinds, in the order their CRs take turns.
var idKinds = []idKind{
	{
		gvr: schema.GroupVersionResource{Group: "blog.example.com", Version: "v1", Resource: "blogs"}, kind: "Blog",
		spec: func(name string) map[string]any {
			return map[string]any{"ingressHost": name + ".example.com", "settings": map[string]any{"name": blogSettings}}
		},
		children:   render.MustKindSet("PersistentVolumeClaim,Service,Job.batch,Deployment.apps,Ingress.networking.k8s.io"),
		references: render.MustKindSet("ConfigMap"),
	},
	{
		gvr: crGVR, kind: "RedisCluster",
		spec:     func(string) map[string]any { return map[string]any{"replicas": int64(1), "version": "7.0"} },
		children: render.MustKindSet("ConfigMap,Service,Pod"),
	},
	{
		gvr: schema.GroupVersionResource{Group: "web.example.com", Version: "v1", Resource: "staticsites"}, kind: "StaticSite",
		spec: func(name string) map[string]any {
			return map[string]any{"replicas": int64(1), "pages": map[string]any{"index.html": "<h1>" + name + "</h1>\n"}}
		},
		children: render.MustKindSet("ConfigMap,Service,Deployment.apps"),
	},
	{
		gvr: schema.GroupVersionResource{Group: "apps.example.com", Version: "v1", Resource: "webapps"}, kind: "WebApp",
		spec: func(string) map[string]any {
			return map[string]any{"replicas": int64(1), "settingsFrom": map[string]any{"name": webappSettings},
				"files": map[string]any{"app.conf": "listen 80\n"}}
		},
		children:   render.MustKindSet("ConfigMap,Service,Job.batch,Deployment.apps,PodDisruptionBudget.policy"),
		references: render.MustKindSet("ConfigMap"),
	},
}

// idCR is the i-th CR of a run: the kinds take turns.
func idCR(sp crSpace, i int) (*idKind, *unstructured.Unstructured) {
	k := &idKinds[i%len(idKinds)]
	name := fmt.Sprintf("%s-%05d", map[string]string{"Blog": "blog", "RedisCluster": "rc", "StaticSite": "site", "WebApp": "app"}[k.kind], i)
	return k, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.gvr.GroupVersion().String(), "kind": k.kind,
		"metadata": map[string]any{"name": name, "namespace": sp.of(i)},
		"spec":     k.spec(name),
	}}
}

// allTemplatesCopy copies every kind of ./templates into a fresh
// directory, which one cueop process serves.
func (s *session) allTemplatesCopy() (string, error) {
	dir, err := os.MkdirTemp(s.tmp, "templates-")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, os.DirFS("templates")); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

// installAllCRDs applies the CRD of every kind of tmpl, the RedisCluster's
// last (the one whose conversion the driver points, startOperator).
func (l *lab) installAllCRDs(ctx context.Context, tmpl string) (*template.Set, error) {
	set, err := template.Load(tmpl)
	if err != nil {
		return nil, err
	}
	for _, k := range idKinds {
		tk := set.Lookup(k.gvr.Group, k.kind)
		if tk == nil {
			return nil, fmt.Errorf("%s: no %s kind", tmpl, k.kind)
		}
		if k.kind == "RedisCluster" {
			continue
		}
		if err := harness.InstallKindCRD(ctx, l.rest, tk); err != nil {
			return nil, err
		}
	}
	return set, l.installCRD(ctx, tmpl)
}

// installIdentities creates, in namespace ns, each kind's ServiceAccount
// and its ClusterRole and ClusterRoleBinding, as engine/identity writes them
// for `cueop manifests` (and the Role that lets a ServiceAccount
// cueop-bench impersonate them, unused: the operator process is admin).
func (l *lab) installIdentities(ctx context.Context, set *template.Set, ns string) error {
	_, err := l.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cfg := identityConfig(ns)
	ids := make([]identity.Identity, 0, len(idKinds))
	for _, k := range idKinds {
		tk := set.Lookup(k.gvr.Group, k.kind)
		ids = append(ids, identity.For(identity.Kind{GroupKind: schema.GroupKind{Group: k.gvr.Group, Kind: k.kind},
			Plural: tk.Resource.Plural, Children: k.children, References: k.references}, cfg))
	}
	c, err := client.New(l.rest, client.Options{})
	if err != nil {
		return err
	}
	for _, obj := range identity.Objects(ids, identity.ServiceAccount{Namespace: ns, Name: "cueop-bench"}) {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("%T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	for _, id := range ids {
		l.logf("identity: %s", id)
	}
	return nil
}

// identityConfig is the operator's Options.Identities for the
// ServiceAccounts of namespace ns; nil (the shared identity) for "".
func identityConfig(ns string) *identity.Config {
	if ns == "" {
		return nil
	}
	return &identity.Config{Namespace: ns}
}

// settingsConfigMaps creates the ConfigMaps the Blogs and WebApps of sp
// reference.
func (l *lab) settingsConfigMaps(ctx context.Context, sp crSpace) error {
	for _, ns := range sp.names {
		for _, name := range []string{blogSettings, webappSettings} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Data: map[string]string{"url": "http://" + name + ".example.com", "database__client": "sqlite3"}}
			if _, err := l.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

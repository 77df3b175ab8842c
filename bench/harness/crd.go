package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/template"
)

// InstallCRD applies the CRD cueop generates for the RedisCluster kind of
// the templates directory dir (what `cueop run --install-crds` applies) and
// waits until it is established. Both operators then serve that one CRD.
func InstallCRD(ctx context.Context, cfg *rest.Config, dir string) error {
	k, err := LoadKind(dir)
	if err != nil {
		return err
	}
	return InstallKindCRD(ctx, cfg, k)
}

// InstallKindCRD applies the CRD cueop generates for k and waits until it
// is established.
func InstallKindCRD(ctx context.Context, cfg *rest.Config, k *template.Kind) error {
	crd, err := crdgen.Generate(k)
	if err != nil {
		return err
	}
	u, err := crdgen.ToUnstructured(crd)
	if err != nil {
		return err
	}
	c, err := crdClient(cfg)
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("bench"), client.ForceOwnership); err != nil {
		return fmt.Errorf("install CRD %s: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range live.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// LoadKind loads the RedisCluster kind of the templates directory dir.
func LoadKind(dir string) (*template.Kind, error) {
	set, err := template.Load(dir)
	if err != nil {
		return nil, err
	}
	k := set.Lookup("cache.example.com", "RedisCluster")
	if k == nil {
		return nil, fmt.Errorf("%s: no RedisCluster kind", dir)
	}
	return k, nil
}

// SetConversion sets the conversion of the CRD crdName, when it has one
// (a kind with several versions): the kind's webhook, as cueop installs it
// (cueop points it at itself as it starts), or, for a run without cueop
// (the baseline, the floor), None. A CRD left pointing at a webhook that
// nobody serves breaks the API server's watch cache of every version but
// the storage one: each write of a CR is converted for it, fails, and that
// cache lists again and again; with None the API server converts by
// setting apiVersion alone. Nothing is written when the strategy is
// already the one asked for; wrote says whether the CRD was written.
func SetConversion(ctx context.Context, cfg *rest.Config, crdName string, webhook bool) (wrote bool, _ error) {
	c, live, err := convertingCRD(ctx, cfg, crdName)
	if err != nil || live == nil {
		return false, err
	}
	want := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	if webhook {
		want = crdgen.WebhookConversion()
	}
	if live.Spec.Conversion.Strategy == want.Strategy {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": want.Strategy, "webhook": want.Webhook}}})
	if err != nil {
		return false, err
	}
	if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, body)); err != nil {
		return false, fmt.Errorf("crd %s: set conversion %s: %w", crdName, want.Strategy, err)
	}
	return true, nil
}

// PointConversion sets the conversion of the CRD named crdName to the
// webhook at url with caBundle, as the cueop process that serves it would
// point it, unless the CRD converts so already or has one version: the
// process, started after, then finds its CRD pointed and writes nothing.
// wrote says whether the CRD was written.
func PointConversion(ctx context.Context, cfg *rest.Config, crdName, url string, caBundle []byte) (wrote bool, _ error) {
	c, live, err := convertingCRD(ctx, cfg, crdName)
	if err != nil || live == nil {
		return false, err
	}
	want := crdgen.WebhookConversion()
	want.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	if equality.Semantic.DeepEqual(live.Spec.Conversion, want) {
		return false, nil
	}
	// A merge patch: the service the CRD may name goes, the url comes.
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": want.Strategy, "webhook": map[string]any{
			"conversionReviewVersions": want.Webhook.ConversionReviewVersions,
			"clientConfig":             map[string]any{"url": url, "caBundle": caBundle, "service": nil},
		}}}})
	if err != nil {
		return false, err
	}
	if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, body)); err != nil {
		return false, fmt.Errorf("crd %s: point the conversion webhook: %w", crdName, err)
	}
	return true, nil
}

// convertingCRD is the live CRD named crdName and a client of it; nil when
// it is not there or has one version (nothing to convert).
func convertingCRD(ctx context.Context, cfg *rest.Config, crdName string) (client.Client, *apiextensionsv1.CustomResourceDefinition, error) {
	c, err := crdClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, live); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if len(live.Spec.Versions) < 2 || live.Spec.Conversion == nil {
		return nil, nil, nil
	}
	return c, live, nil
}

// CRDName is the name of the CRD of the RedisCluster kind of dir.
func CRDName(dir string) (string, error) {
	k, err := LoadKind(dir)
	if err != nil {
		return "", err
	}
	return k.Resource.CRDName(), nil
}

// crdClient is a client of cfg that knows CustomResourceDefinitions.
func crdClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// WaitWatchable waits until the API server serves the CRs of the CRD
// named crdName to a watch with their initial events, at the storage
// version, as an informer starts: a write of a CRD restarts the API
// server's storage of its CRs, which ends or refuses their watches until
// it has listed them again. The driver's own writes of the CRD
// (SetConversion, PointConversion) then stay out of the time of an
// operator started after them.
func WaitWatchable(ctx context.Context, cfg *rest.Config, crdName string, timeout time.Duration) error {
	c, err := crdClient(cfg)
	if err != nil {
		return err
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, live); err != nil {
		return client.IgnoreNotFound(err)
	}
	storage, _ := migrate.Pending(live)
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: storage, Resource: live.Spec.Names.Plural}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = initialEvents(ctx, dyn.Resource(gvr))
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the CRs of %s not watchable within %s: %w (last: %v)", crdName, timeout, err, last)
	}
	return nil
}

// initialEvents opens a watch of r with its initial events and reads it to
// their end.
func initialEvents(ctx context.Context, r dynamic.NamespaceableResourceInterface) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := r.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object))
		case watch.Bookmark:
			if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				return nil
			}
		}
	}
	return fmt.Errorf("watch ended before its initial events did")
}

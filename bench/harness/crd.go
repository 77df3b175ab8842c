package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
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
// already the one asked for.
func SetConversion(ctx context.Context, cfg *rest.Config, crdName string, webhook bool) error {
	c, live, err := convertingCRD(ctx, cfg, crdName)
	if err != nil || live == nil {
		return err
	}
	want := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	if webhook {
		want = crdgen.WebhookConversion()
	}
	if live.Spec.Conversion.Strategy == want.Strategy {
		return nil
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": want.Strategy, "webhook": want.Webhook}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("crd %s: set conversion %s: %w", crdName, want.Strategy, err)
	}
	return nil
}

// PointConversion sets the conversion of the CRD named crdName to the
// webhook at url with caBundle, as the cueop process that serves it would
// point it, unless the CRD converts so already or has one version: the
// process, started after, then finds its CRD pointed and writes nothing.
func PointConversion(ctx context.Context, cfg *rest.Config, crdName, url string, caBundle []byte) error {
	c, live, err := convertingCRD(ctx, cfg, crdName)
	if err != nil || live == nil {
		return err
	}
	want := crdgen.WebhookConversion()
	want.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	if equality.Semantic.DeepEqual(live.Spec.Conversion, want) {
		return nil
	}
	// A merge patch: the service the CRD may name goes, the url comes.
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": want.Strategy, "webhook": map[string]any{
			"conversionReviewVersions": want.Webhook.ConversionReviewVersions,
			"clientConfig":             map[string]any{"url": url, "caBundle": caBundle, "service": nil},
		}}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("crd %s: point the conversion webhook: %w", crdName, err)
	}
	return nil
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
	return k.Resource.Plural + "." + k.Resource.Group, nil
}

// crdClient is a client of cfg that knows CustomResourceDefinitions.
func crdClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

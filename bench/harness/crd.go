package harness

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
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

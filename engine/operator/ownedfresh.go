package operator

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// fresh resolves gk from the API server's discovery as it is now,
// past the REST mapper, which keeps a mapping once found: a list of a kind
// answered 404 (its CRD deleted, or the version mapped no longer served)
// is asked again here. A NoMatch error says the kind is not served; a
// discovery that failed for gk's group is an error.
func (c *childKinds) fresh(gk schema.GroupKind) (*meta.RESTMapping, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(c.config, c.http)
	if err != nil {
		return nil, fmt.Errorf("kind %s: discovery: %w", gk, err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) {
			return nil, fmt.Errorf("kind %s: discovery: %w", gk, err)
		}
		for gv := range failed.Groups {
			if gv.Group == gk.Group {
				return nil, fmt.Errorf("kind %s: discovery: %w", gk, err)
			}
		}
	}
	m, err := restmapper.NewDiscoveryRESTMapper(groups).RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", gk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("kind %s is cluster-scoped; children live in their parent's namespace", gk)
	}
	return m, nil
}

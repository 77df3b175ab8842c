package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// MetadataResponses sends applies whose answer is the object's metadata
// only: the API server encodes a PartialObjectMetadata (in protobuf)
// instead of the whole object, which the client would decode into maps
// only for Apply to read its resourceVersion. The request is the same
// server-side apply. Each resource gets a client of its own with its own
// client-side rate limit, as controller-runtime's clients have; the
// applies of a resource no longer share that limit with its deletes and
// merge patches, which stay on the controller-runtime client.
type MetadataResponses struct {
	cfg    *rest.Config
	http   *http.Client
	mapper meta.RESTMapper

	mu      sync.Mutex
	clients map[schema.GroupVersionResource]metadata.Getter
}

// NewMetadataResponses sends applies with cfg's limits over httpClient
// (nil: one of cfg's own), mapping kinds to resources with mapper.
func NewMetadataResponses(cfg *rest.Config, httpClient *http.Client, mapper meta.RESTMapper) (*MetadataResponses, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.WarningHandler == nil && cfg.WarningHandlerWithContext == nil {
		// The API server's warnings go to the operator's log, as those of
		// controller-runtime's clients do.
		cfg.WarningHandlerWithContext = log.NewKubeAPIWarningLogger(log.KubeAPIWarningLoggerOptions{})
	}
	if httpClient == nil {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		httpClient = hc
	}
	return &MetadataResponses{cfg: cfg, http: httpClient, mapper: mapper,
		clients: map[schema.GroupVersionResource]metadata.Getter{}}, nil
}

// resource is the client of gvk's resource, and whether it is namespaced.
func (m *MetadataResponses) resource(gvk schema.GroupVersionKind) (metadata.Getter, bool, error) {
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, false, err
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.clients[mapping.Resource]; ok {
		return c, namespaced, nil
	}
	mc, err := metadata.NewForConfigAndClient(m.cfg, m.http)
	if err != nil {
		return nil, false, err
	}
	c := mc.Resource(mapping.Resource)
	m.clients[mapping.Resource] = c
	return c, namespaced, nil
}

// apply sends obj as a server-side apply of manager, forcing ownership,
// and returns what the answer says of the object: its uid, its
// resourceVersion and the applied entry of manager.
func (m *MetadataResponses) apply(ctx context.Context, obj *unstructured.Unstructured, manager string) (answered, error) {
	r, namespaced, err := m.resource(obj.GroupVersionKind())
	if err != nil {
		return answered{}, err
	}
	// The checks client-go's requests make of the path's segments (the
	// metadata client makes none but for an empty name).
	name, ns := obj.GetName(), obj.GetNamespace()
	if msgs := rest.IsValidPathSegmentName(name); len(msgs) > 0 {
		return answered{}, fmt.Errorf("invalid name %q: %s", name, strings.Join(msgs, "; "))
	}
	var ri metadata.ResourceInterface = r
	if namespaced {
		if msgs := rest.IsValidPathSegmentName(ns); ns == "" || len(msgs) > 0 {
			return answered{}, fmt.Errorf("invalid namespace %q of a namespaced object: %s", ns, strings.Join(msgs, "; "))
		}
		ri = r.Namespace(ns)
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return answered{}, err
	}
	got, err := ri.Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true)})
	if err != nil {
		return answered{}, err
	}
	if got == nil {
		return answered{}, fmt.Errorf("no object in the answer")
	}
	ans := answered{uid: string(got.UID), resourceVersion: got.ResourceVersion}
	for _, e := range got.ManagedFields {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" && e.FieldsV1 != nil {
			ans.apiVersion, ans.fields = e.APIVersion, string(e.FieldsV1.Raw)
			break
		}
	}
	return ans, nil
}

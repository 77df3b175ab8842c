package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// MetadataResponses sends applies whose answer is the object's metadata
// only: the API server encodes a PartialObjectMetadata (in protobuf)
// instead of the whole object, which the client would decode into maps
// only for Apply to read its resourceVersion. The request is the same
// server-side apply. Each resource gets a client of its own, so each has
// its own client-side rate limit, as controller-runtime's clients have.
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

func (m *MetadataResponses) resource(gvk schema.GroupVersionKind) (metadata.Getter, error) {
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.clients[mapping.Resource]; ok {
		return c, nil
	}
	mc, err := metadata.NewForConfigAndClient(m.cfg, m.http)
	if err != nil {
		return nil, err
	}
	c := mc.Resource(mapping.Resource)
	m.clients[mapping.Resource] = c
	return c, nil
}

// apply sends obj as a server-side apply of manager, forcing ownership,
// and returns the resourceVersion of the answer.
func (m *MetadataResponses) apply(ctx context.Context, obj *unstructured.Unstructured, manager string) (string, error) {
	r, err := m.resource(obj.GroupVersionKind())
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return "", err
	}
	var ri metadata.ResourceInterface = r
	if ns := obj.GetNamespace(); ns != "" {
		ri = r.Namespace(ns)
	}
	got, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true)})
	if err != nil {
		return "", err
	}
	if got == nil {
		return "", fmt.Errorf("no object in the answer")
	}
	return got.ResourceVersion, nil
}

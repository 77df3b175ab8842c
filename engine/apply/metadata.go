// What an apply costs: the memo of the desired states found in sync with a
// live object (a resync of unchanged children costs a hash and a lookup),
// and MetadataResponses, which sends applies answered with the object's
// metadata only.
//
// It must not change what is applied nor whether: only what it costs.

package apply

import (
	"context"
	"crypto/sha256"
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

// memoMax bounds the memo; when full it starts again empty. An entry is
// a few short strings, so a full memo holds a few MiB.
const memoMax = 1 << 16

// memo remembers the desired states fieldsDiffer found in sync with a
// live object. The hash fixes the desired fields. The live side is, for a
// kind of the built-in schema (kschema: the field sets are exact), the
// manager's applied managedFields entry: the verdict compares the fields
// that entry records with the desired ones and reads nothing else of live,
// so it holds while the entry stays as it is, whatever else of the object
// changes (a Pod's status, another manager's labels). For any other kind
// it is live's resourceVersion, which names one state of the whole object.
// A resync, and a reconcile that sees a child whose status moved on, then
// cost a hash and a lookup instead of two field sets. This treats live
// objects as the informer cache hands them out: snapshots never modified
// in place.
type memo struct {
	mu   sync.Mutex
	seen map[memoKey]struct{}
}

// memoKey is a desired hash and the live object's uid with either its
// resourceVersion or the digest of its applied entry (apiVersion and
// fieldsV1).
type memoKey struct{ hash, uid, resourceVersion, entry string }

// keyOf is the memo key of the desired hash against live: by live's
// applied entry of manager when byEntry and that entry's fieldsV1 is JSON
// text (as the cache keeps it), else by live's resourceVersion. ok is
// false when live lacks what the key needs.
func keyOf(hash string, live *unstructured.Unstructured, byEntry bool, manager string) (k memoKey, ok bool) {
	k = memoKey{hash: hash, uid: string(live.GetUID())}
	if byEntry {
		if e := appliedEntry(live, manager); e != nil { // needs.go
			av, _ := e["apiVersion"].(string)
			if fields, isText := e["fieldsV1"].(string); isText {
				k.entry = entryDigest(av, fields)
				return k, k.uid != ""
			}
		}
	}
	k.resourceVersion = live.GetResourceVersion()
	return k, k.uid != "" && k.resourceVersion != ""
}

// entryDigest is the memo's name of an applied entry: its apiVersion and
// its fieldsV1 as JSON text.
func entryDigest(apiVersion, fields string) string {
	sum := sha256.Sum256([]byte(apiVersion + "\x00" + fields))
	return string(sum[:])
}

// answered is what the answer to an apply says of the object it left: its
// uid and resourceVersion, and the applied entry of the manager that sent
// it (fields "" when the answer holds none as text).
type answered struct {
	uid, resourceVersion string
	apiVersion, fields   string
}

// appliedKey is the memo key of the desired hash whose apply was answered
// with ans, for a kind of the built-in schema; ok is false when the answer
// lacks what the key needs. The entry is the API server's record of the
// fields that very apply set, so the hash is in sync with it for as long
// as the entry stays as it is: the next reconcile, seeing the child the
// apply made or changed, decides with a lookup instead of two field sets.
func appliedKey(hash string, ans answered) (memoKey, bool) {
	if ans.uid == "" || ans.fields == "" {
		return memoKey{}, false
	}
	return memoKey{hash: hash, uid: ans.uid, entry: entryDigest(ans.apiVersion, ans.fields)}, true
}

func (m *memo) has(k memoKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.seen[k]
	return ok
}

func (m *memo) add(k memoKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil || len(m.seen) >= memoMax {
		m.seen = make(map[memoKey]struct{})
	}
	m.seen[k] = struct{}{}
}

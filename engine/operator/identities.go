package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// bundle is what a kind reads and writes its children and references
// with, as one identity: the operator's own (shared mode, the manager's
// cache and clients) or a kind's ServiceAccount, impersonated. Kinds that
// act as the same ServiceAccount share one bundle.
type bundle struct {
	ids *identities
	sa  *identity.ServiceAccount // nil: the operator's own identity
	// namespaces are those its caches and lists cover: nil is the
	// operator's (Options.Namespace, or every namespace); a kind bound in
	// chosen namespaces only has RoleBindings there, and a list across
	// the cluster is refused.
	namespaces []string
	cache      cache.Cache   // the children, managed by cueop (and labelled with the identity)
	reader     client.Reader // the API server, no cache
	meta       metadata.Interface
	applier    *apply.Applier
	modes      *bindingModes // storageclasses.go
	children   childWatch    // children.go
	reads      readWatch     // references.go
	refused    refusals      // identitywatch.go; the kind's identity only

	users  int // kinds served with it; guarded by the operator's mu
	cancel context.CancelFunc
	done   chan struct{} // closed once its caches stopped
}

// identities are the identities the kinds act as, each a bundle: the
// operator's own (shared) and, with Options.Identities, each kind's
// ServiceAccount; with what every bundle is given. Its bundles are
// guarded by the operator's mu, which the caller holds.
type identities struct {
	config     *identity.Config // Options.Identities; nil: every kind acts as the operator
	kinds      *childKinds
	log        logr.Logger
	restConfig *rest.Config // the manager's, which each identity's copies
	scheme     *runtime.Scheme
	mapper     meta.RESTMapper
	namespace  string         // Options.Namespace
	shard      *shard.Range   // Options.Shard
	readable   render.KindSet // Options.ReadableKinds
	// controllers counts the goroutines that run an identity's caches.
	controllers *sync.WaitGroup

	shared  *bundle               // the operator's own identity's children and references
	bundles map[bundleKey]*bundle // the kinds' own, with Options.Identities
}

// newShared makes the bundle of the operator's own identity, on mgr's
// cache and clients (cfg and its HTTP client) and applier.
func (ids *identities) newShared(cfg *rest.Config, mgr manager.Manager, applier *apply.Applier) error {
	mc, err := metadata.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	b := &bundle{ids: ids, cache: mgr.GetCache(), reader: mgr.GetAPIReader(), meta: mc, applier: applier}
	b.modes = newBindingModes(b.reader)
	b.children = childWatch{watches: map[schema.GroupVersionKind]*kindWatch{}, controllerWatches: newControllerWatches(b.childSource)}
	rc, err := ids.newReadCache(cfg, mgr.GetHTTPClient(), namespaces(ids.namespace), nil)
	if err != nil {
		return err
	}
	if err := ids.checkReadableKinds(); err != nil {
		return err
	}
	b.reads = newReadWatch(rc, b.readSource)
	ids.shared = b
	return mgr.Add(rc)
}

// forKind is the bundle k's kind acts with, started when it is the first
// kind of its ServiceAccount.
func (ids *identities) forKind(ctx context.Context, k *template.Kind) (*bundle, error) {
	if ids.config == nil {
		return ids.shared, nil
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	sa := kindIdentity(ids.config, k)
	nss := ids.identityNamespaces(gk)
	key := bundleKey{sa: sa, namespaces: strings.Join(nss, ",")}
	if b := ids.bundles[key]; b != nil {
		b.users++
		return b, nil
	}
	b, err := ids.newIdentityBundle(sa, nss)
	if err != nil {
		return nil, fmt.Errorf("kind %s: identity %s: %w", k.Name, sa, err)
	}
	b.start(ctx)
	b.users = 1
	if ids.bundles == nil {
		ids.bundles = map[bundleKey]*bundle{}
	}
	ids.bundles[key] = b
	return b, nil
}

// bundleKey tells bundles apart: kinds of one ServiceAccount bound in the
// same namespaces share one.
type bundleKey struct {
	sa         identity.ServiceAccount
	namespaces string
}

// identityNamespaces are the namespaces the caches and lists of gk's
// identity cover: nil (Options.Namespace, or every namespace) unless the
// administrator bound gk in chosen namespaces (RoleBindings there only),
// then those the operator serves.
func (ids *identities) identityNamespaces(gk schema.GroupKind) []string {
	bound := ids.config.BoundNamespaces(gk)
	if bound == nil || ids.namespace != "" {
		return nil // one namespace: its CRs elsewhere are not served, and NamespaceNotBound stalls those there when unbound
	}
	return bound
}

// listNamespaces are the namespaces b lists its kinds in, one request
// each: "" is every namespace.
func (b *bundle) listNamespaces() []string {
	if b.namespaces == nil {
		return []string{b.ids.namespace}
	}
	return b.namespaces
}

// cacheNamespaces are the DefaultNamespaces of b's caches.
func (b *bundle) cacheNamespaces() map[string]cache.Config {
	if b.namespaces == nil {
		return namespaces(b.ids.namespace)
	}
	out := map[string]cache.Config{}
	for _, ns := range b.namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// release forgets a kind's use of b; when no kind uses it any more, b's
// caches stop once stopped (the kind's controller) is closed, nil meaning
// at once.
func (ids *identities) release(b *bundle, stopped <-chan struct{}) {
	if b == nil || b.sa == nil {
		return
	}
	if b.users--; b.users > 0 {
		return
	}
	delete(ids.bundles, bundleKey{sa: *b.sa, namespaces: strings.Join(b.namespaces, ",")})
	ids.controllers.Add(1)
	go func() {
		defer ids.controllers.Done()
		if stopped != nil {
			<-stopped // its reconciles read the caches until they return
		}
		b.cancel()
		<-b.done
		ids.log.Info("identity unused: its caches stopped", "serviceAccount", b.sa.String())
	}()
}

// discoverShared watches, at start, the child kinds of the operator's own
// identity in use; with Options.Identities, each identity does its own
// when its first kind starts (bundle.start).
func (ids *identities) discoverShared(ctx context.Context) error {
	if ids.config != nil {
		return nil
	}
	return ids.shared.discoverChildren(ctx, discoverTimeout)
}

// newIdentityBundle builds the bundle of sa: every request it sends
// impersonates sa, and its children cache selects the children labelled
// with sa (and the shard's label when sharded).
func (ids *identities) newIdentityBundle(sa identity.ServiceAccount, nss []string) (*bundle, error) {
	cfg := rest.CopyConfig(ids.restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa.Username()}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	b := &bundle{ids: ids, sa: &sa, namespaces: nss}
	children, err := cache.New(cfg, cache.Options{HTTPClient: hc, Scheme: ids.scheme, Mapper: ids.mapper,
		DefaultNamespaces: b.cacheNamespaces(), DefaultTransform: compactChild,
		DefaultLabelSelector: labels.SelectorFromSet(ids.identitySelector(sa)), DefaultWatchErrorHandler: b.refused.handler})
	if err != nil {
		return nil, fmt.Errorf("children cache: %w", err)
	}
	b.cache = children
	if err := b.clients(cfg, hc); err != nil {
		return nil, err
	}
	b.children = childWatch{watches: map[schema.GroupVersionKind]*kindWatch{}, controllerWatches: newControllerWatches(b.childSource)}
	rc, err := ids.newReadCache(cfg, hc, b.cacheNamespaces(), b.refused.handler)
	if err != nil {
		return nil, err
	}
	b.reads = newReadWatch(rc, b.readSource)
	return b, nil
}

// clients sets b's client, API reader, metadata client and applier, on
// cfg and hc (b's identity).
func (b *bundle) clients(cfg *rest.Config, hc *http.Client) error {
	scheme, mapper := b.ids.scheme, b.ids.mapper
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: scheme, Mapper: mapper,
		Cache: &client.CacheOptions{Reader: b.cache, Unstructured: true}})
	if err != nil {
		return err
	}
	if b.reader, err = client.New(cfg, client.Options{HTTPClient: hc, Scheme: scheme, Mapper: mapper}); err != nil {
		return err
	}
	if b.meta, err = metadata.NewForConfigAndClient(cfg, hc); err != nil {
		return err
	}
	responses, err := apply.NewMetadataResponses(cfg, hc, mapper)
	if err != nil {
		return err
	}
	b.applier = &apply.Applier{Client: c, Reader: b.reader, Responses: responses}
	b.modes = newBindingModes(b.reader)
	return nil
}

// start runs b's caches until ctx is done or b is released, and watches
// the child kinds its identity already has children of. A list its
// identity may not make is reported, never waited for: the reconciles of
// a kind that renders such children fail (syncTimeout) until its role
// allows it.
func (b *bundle) start(ctx context.Context) {
	ctx, b.cancel = context.WithCancel(ctx)
	b.done = make(chan struct{})
	stopped := make(chan struct{}, 2)
	for _, c := range []cache.Cache{b.cache, b.reads.cache} {
		go func() {
			defer func() { stopped <- struct{}{} }()
			if err := c.Start(ctx); err != nil {
				b.ids.log.Error(err, "identity cache stopped", "serviceAccount", b.sa.String())
			}
		}()
	}
	b.ids.controllers.Add(1) // Run returns once they stopped
	go func() {
		defer b.ids.controllers.Done()
		<-stopped
		<-stopped
		close(b.done)
	}()
	go func() {
		if err := b.discoverChildren(ctx, syncTimeout); err != nil && ctx.Err() == nil {
			b.ids.log.Error(err, "children of an identity not watched yet (list and watch permitted?)", "serviceAccount", b.sa.String())
		}
	}()
}

// identitySelector are the labels the children cache of sa selects:
// cueop's, the shard's when sharded, and sa's.
func (ids *identities) identitySelector(sa identity.ServiceAccount) labels.Set {
	set := labels.Set{wellknown.LabelManagedBy: wellknown.ManagedByValue}
	maps.Copy(set, childLabels(ids.shard))
	set[wellknown.LabelIdentity] = identityLabel(sa)
	return set
}

// kindIdentity is the ServiceAccount k acts as under ids.
func kindIdentity(ids *identity.Config, k *template.Kind) identity.ServiceAccount {
	return ids.For(k.Resource.GroupVersionKind().GroupKind(), k.Resource.CRDName())
}

// childLabels are the labels the children of a kind acting as b's
// identity carry, besides cueop's own: the shard's when sharded, and the
// identity's.
func (b *bundle) childLabels() map[string]string {
	return identityChildLabels(b.sa, b.ids.shard)
}

// identityChildLabels are the labels the children of a kind acting as sa
// (nil: the operator's own identity) carry, besides cueop's own: the
// shard's when r is set, and the identity's.
func identityChildLabels(sa *identity.ServiceAccount, r *shard.Range) map[string]string {
	out := childLabels(r)
	if sa == nil {
		return out
	}
	if out == nil {
		out = map[string]string{}
	}
	out[wellknown.LabelIdentity] = identityLabel(*sa)
	return out
}

// ChildLabels are the labels an operator that is not sharded, given
// Options.Identities ids, sets on every child of k besides cueop's own:
// the label of the ServiceAccount k acts as, none with the shared identity
// (ids nil). cueop diff renders the children with them, as the reconciles
// apply them (reconcile.PreviewRender).
func ChildLabels(ids *identity.Config, k *template.Kind) map[string]string {
	if ids == nil {
		return nil
	}
	sa := kindIdentity(ids, k)
	return identityChildLabels(&sa, nil)
}

// identityLabel is sa as a label value, namespace.name, or a hash of it
// when too long.
func identityLabel(sa identity.ServiceAccount) string {
	v := sa.Namespace + "." + sa.Name
	if len(v) <= validation.LabelValueMaxLength {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256-" + hex.EncodeToString(sum[:])[:40]
}

// as names b's identity in messages: "" for the operator's own, else
// " as namespace/name".
func (b *bundle) as() string {
	if b.sa == nil {
		return ""
	}
	return " as " + b.sa.String()
}

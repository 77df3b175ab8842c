package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/internal/useragent"
)

// Options configure an Operator.
type Options struct {
	// Templates is the templates directory.
	Templates string
	// InstallCRDs applies the generated CRDs at start and on template change.
	InstallCRDs bool
	// AllowedKinds is the administrator's allow-list of child kinds; nil
	// means render.DefaultAllowedKinds.
	AllowedKinds render.KindSet
	// ReadableKinds is the administrator's allow-list of kinds templates
	// may reference (read); nil means render.DefaultReadableKinds.
	ReadableKinds render.KindSet
	// DataKinds are the kinds whose children are released, not deleted,
	// unless the template says otherwise; nil means render.DefaultDataKinds.
	DataKinds render.KindSet
	// Budget bounds each render and each kind's compile (package budget);
	// the zero value is the defaults.
	Budget budget.Budget
	// TemplateLimits bound the files a template load reads; the zero value
	// is the defaults.
	TemplateLimits template.Limits
	// TemplatesAccepted, when set, is told the sources of a load that
	// serve every kind of theirs (accepted.go); a module source records
	// them.
	TemplatesAccepted func([]template.Source)
	// TemplatesLoaded, when set, is told each load of the templates that
	// gave a set (some kinds may be broken), before the controllers are
	// brought in line with it: `cueop dev` applies the kinds' generated
	// roles there, so that a kind's new children are permitted before its
	// CRs render them.
	TemplatesLoaded func(context.Context, *template.Set)
	// MaxConcurrent is the number of CRs of one kind reconciled at once.
	MaxConcurrent int
	// APICompression asks the API server for gzip-compressed responses
	// (client-go's default). Off unless set, as kube-controller-manager and
	// kube-scheduler run: next to the API server, compressing every watch
	// event and list costs both ends CPU to save bandwidth nobody lacks.
	APICompression bool
	// RolloutMaxInFlight bounds the CRs of a kind moving to a new template
	// revision at once; 0 means unlimited.
	RolloutMaxInFlight int
	// Namespace restricts the operator to the CRs (and children) of one
	// namespace; empty means every namespace.
	Namespace string
	// Manager are the options of the controller-runtime manager (metrics,
	// probes, leader election). Cache and client options are set here.
	Manager ctrl.Options
	// Shard, when set, makes the operator serve the CRs of one range of
	// the uid hash space only (shard.go); nil means all of them.
	Shard *shard.Range
	// Workers configure the worker processes that every render, every
	// evaluation of references and every compile runs in (loader.go).
	Workers worker.Options
	// StorageMigrationPageSize is the number of CRs a storage migration
	// lists at once (migrate.go); 0 means migrate.DefaultPageSize.
	StorageMigrationPageSize int64
	// InProcess renders and compiles in the operator's own process, where
	// one evaluation can take the whole operator down: for benchmarks and
	// trusted templates only.
	InProcess bool
	// Conversion serves the conversion webhook of the kinds with several
	// versions and points their CRDs at it (conversion.go); nil is
	// LocalConversion, for an API server on this machine (tests, dev).
	Conversion *Conversion
	// ReleaseKey, when set, is the key of the proofs released children
	// carry (releasekey.go), at least MinReleaseKeyBytes long; every
	// replica must be given the same. Unset, the key is kept in the Secret
	// ReleaseKeySecret of ReleaseKeyNamespace (DefaultReleaseKeyNamespace
	// when empty), created at first need.
	ReleaseKey          []byte
	ReleaseKeyNamespace string
	// Identities, when set, makes every kind act as its own ServiceAccount
	// (identities.go): each request for a kind's children and references
	// is made as it, by impersonation. nil is the shared identity: every
	// kind acts as the operator itself.
	Identities *identity.Config
	// Instance names the operator instance (holder.go): one install, its
	// replicas and shards alike, recorded on the CRDs of the kinds it
	// holds; DefaultInstance when empty. TakeOver are the kinds (Kind.group
	// or CRD name) it takes over from whichever instance holds them.
	Instance string
	TakeOver []string
}

// Operator serves every kind of a templates directory. It wires the
// owners of the jobs together and holds the manager and its caches; each
// job is its owner's: the kinds' lifecycle (kindLifecycle), their
// controllers (kindRunner), their CRDs (crdWriter), the templates' load
// (templateLoader), conversions (conversions), storage migrations
// (migrations), the identities and their caches (identities), the
// Templates (kindReports).
type Operator struct {
	opts    Options
	mgr     manager.Manager
	parents cache.Cache
	metrics *Metrics
	log     logr.Logger

	ids        *identities     // the identities the kinds act as, and their caches (identities.go)
	loader     *templateLoader // loader.go
	crds       *crdWriter
	kinds      *kindLifecycle
	migrations *migrations    // migrate.go
	conv       *conversions   // conversion.go; nil without Options.Conversion
	reports    *kindReports   // the kinds' Templates (templatestatus.go)
	watch      templatesWatch // watch.go

	controllers sync.WaitGroup // the kinds' running controllers and storage migrations
}

// withDefaults is opts with every default set: the one place they are.
func (opts Options) withDefaults() (Options, error) {
	if opts.AllowedKinds == nil {
		opts.AllowedKinds = render.MustKindSet(render.DefaultAllowedKinds)
	}
	if opts.ReadableKinds == nil {
		opts.ReadableKinds = render.MustKindSet(render.DefaultReadableKinds)
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 4
	}
	if opts.Instance == "" {
		opts.Instance = DefaultInstance
	}
	if opts.ReleaseKeyNamespace == "" {
		opts.ReleaseKeyNamespace = DefaultReleaseKeyNamespace
	}
	if opts.Conversion == nil {
		c, err := LocalConversion()
		if err != nil {
			return opts, err
		}
		opts.Conversion = c
	}
	if c := opts.Conversion; !c.NoServe {
		opts.Manager.WebhookServer = webhookServer(c) // conversion.go
	}
	return opts, nil
}

// New builds an operator on cfg. Run starts it.
func New(cfg *rest.Config, opts Options) (*Operator, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg = clientDefaults(cfg, opts)
	mgr, err := ctrl.NewManager(cfg, shardChildren(managerOptions(opts.Manager, opts.Namespace), opts.Shard))
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	parents, err := cache.New(cfg, shardParents(cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: namespaces(opts.Namespace), DefaultTransform: compactParent}, opts.Shard))
	if err != nil {
		return nil, fmt.Errorf("parents cache: %w", err)
	}
	responses, err := apply.NewMetadataResponses(cfg, mgr.GetHTTPClient(), mgr.GetRESTMapper())
	if err != nil {
		return nil, fmt.Errorf("apply client: %w", err)
	}
	o := &Operator{opts: opts, mgr: mgr, parents: parents, metrics: NewMetrics(), log: mgr.GetLogger().WithName("cueop"),
		watch: templatesWatch{dir: opts.Templates}}
	o.watch.log = o.log
	applier := &apply.Applier{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Responses: responses}
	if err := o.wire(cfg, applier); err != nil {
		return nil, err
	}
	return o, errors.Join(mgr.Add(parents), mgr.Add(o))
}

// wire makes the owners of the jobs, each given what it needs of the
// others.
func (o *Operator) wire(cfg *rest.Config, applier *apply.Applier) error {
	opts, mgr := o.opts, o.mgr
	recorder := mgr.GetEventRecorderFor("cueop")
	o.crds = &crdWriter{reader: mgr.GetAPIReader(), client: mgr.GetClient(), applier: applier, recorder: recorder, log: o.log,
		instance: opts.Instance, mark: o.TemplatesMark(), takeOver: opts.TakeOver, conversion: opts.Conversion}
	o.migrations = &migrations{
		migrates: opts.Shard == nil || opts.Shard.Index == 0,
		log:      o.log, metrics: o.metrics, event: o.crds.eventType, controllers: &o.controllers,
		reader: mgr.GetAPIReader(), client: mgr.GetClient(), config: mgr.GetConfig(), http: mgr.GetHTTPClient(),
		pageSize: opts.StorageMigrationPageSize,
	}
	o.crds.moveFields = o.migrations.moveFieldsBeforeDrop
	o.reports = o.newKindReports()
	o.conv = newConversions(opts.Conversion, opts.Budget, o.log.WithName("conversion"), mgr.GetAPIReader())
	var err error
	if o.loader, err = newTemplateLoader(opts, o.log, mgr.GetAPIReader(), o.conv); err != nil {
		return err
	}
	if !opts.Conversion.NoServe {
		l := &conversionLoader{conv: o.conv, loader: o.loader, watch: o.watch, log: o.log}
		if err := serveConversion(mgr, l, opts.Manager.LeaderElection); err != nil {
			return err
		}
	}
	kinds := &childKinds{allowed: opts.AllowedKinds, data: opts.DataKinds, log: o.log,
		scheme: mgr.GetScheme(), mapper: mgr.GetRESTMapper(), config: mgr.GetConfig(), http: mgr.GetHTTPClient()}
	if err := kinds.resolveAll(); err != nil {
		return err
	}
	o.ids = &identities{config: opts.Identities, kinds: kinds, log: o.log, restConfig: mgr.GetConfig(),
		scheme: mgr.GetScheme(), mapper: mgr.GetRESTMapper(), namespace: opts.Namespace, shard: opts.Shard,
		readable: opts.ReadableKinds, controllers: &o.controllers}
	if err := o.ids.newShared(cfg, mgr, applier); err != nil {
		return err
	}
	run := &kindRunner{mgr: mgr, parents: o.parents, ids: o.ids, crds: o.crds, recorder: recorder, metrics: o.metrics, log: o.log,
		eval: o.loader.eval, opts: opts, controllers: &o.controllers,
		keys: &releaseKeys{given: opts.ReleaseKey, namespace: opts.ReleaseKeyNamespace, reader: mgr.GetAPIReader(), client: mgr.GetClient(), log: o.log}}
	o.kinds = &kindLifecycle{run: run, crds: o.crds, conv: o.conv, reports: o.reports, migrations: o.migrations, metrics: o.metrics,
		log: o.log, load: o.loader.load, installCRDs: opts.InstallCRDs, loaded: opts.TemplatesLoaded, accept: opts.TemplatesAccepted,
		controllers: &o.controllers, records: kindRecords{}}
	o.loader.served = o.kinds.holdings
	return nil
}

// waitMapped is waitMapped of the manager's REST mapper (mapper.go).
func (o *Operator) waitMapped(ctx context.Context, gvk schema.GroupVersionKind) bool {
	return waitMapped(ctx, o.mgr.GetRESTMapper(), gvk)
}

// newKindReports is the reporter of the kinds' state: their Templates,
// written by a sharded replica's range 0 only, their CRDs' Events.
func (o *Operator) newKindReports() *kindReports {
	r := &kindReports{
		speaks:      o.opts.Shard == nil || o.opts.Shard.Index == 0,
		log:         o.log,
		identities:  o.opts.Identities,
		event:       o.crds.event,
		controllers: &o.controllers,
	}
	if r.speaks {
		r.writer = newTemplateWriter(templateWriterConfig{
			log: o.log, metrics: o.metrics,
			client: o.mgr.GetClient(), reader: o.mgr.GetAPIReader(), rest: o.mgr.GetConfig(), http: o.mgr.GetHTTPClient(),
			applier: o.crds.applier, mark: o.crds.mark, instance: o.crds.instance, installCRD: o.opts.InstallCRDs,
			established: o.crds.waitEstablished, mapped: o.waitMapped, holderOf: o.crds.holderOf,
		})
	}
	return r
}

// managerOptions makes the manager's cache hold only cueop's children and
// its client read unstructured objects from that cache.
func managerOptions(o ctrl.Options, namespace string) ctrl.Options {
	o.Cache.DefaultNamespaces = namespaces(namespace)
	o.Cache.DefaultTransform = compactChild
	if o.Scheme == nil {
		o.Scheme = runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(o.Scheme))
		utilruntime.Must(apiextensionsv1.AddToScheme(o.Scheme))
	}
	o.Cache.DefaultLabelSelector = labels.SelectorFromSet(labels.Set{wellknown.LabelManagedBy: wellknown.ManagedByValue})
	o.Client.Cache = &client.CacheOptions{Unstructured: true}
	if o.MapperProvider == nil {
		o.MapperProvider = cachedMapperProvider // mapper.go
	}
	return o
}

// keepOwnManagedFields drops from a cached child every managedFields entry
// but cueop's own: the applier needs that one to tell whether an apply would
// change anything, and the others only cost memory.
func keepOwnManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	entries := o.GetManagedFields()
	kept := entries[:0:0]
	for _, e := range entries {
		if e.Manager == apply.DefaultFieldManager {
			kept = append(kept, e)
		}
	}
	if len(kept) != len(entries) {
		o.SetManagedFields(kept)
	}
	return obj, nil
}

// compactParent is the parents cache's transform. Of a CR's managedFields
// only cueop's status entry is read, and of it only the top-level status
// fields it names (reconcile.ownedStatusFields) and the condition types
// (reconcile.ownedConditionTypes): the entry is kept with fieldsV1 cut down
// to those, the others are dropped: about half the size of a cached CR
// (docs/benchmarks.md).
func compactParent(obj any) (any, error) {
	return rewriteManagedFields(obj, func(entry map[string]any) (map[string]any, error) {
		if entry["manager"] != apply.DefaultFieldManager || entry["subresource"] != "status" {
			return nil, nil
		}
		fields, _ := entry["fieldsV1"].(map[string]any)
		status, _ := fields["f:status"].(map[string]any)
		top := make(map[string]any, len(status))
		for k := range status {
			top[k] = map[string]any{}
		}
		if conds, ok := status["f:conditions"].(map[string]any); ok {
			types := map[string]any{}
			for k := range conds {
				if strings.HasPrefix(k, "k:") {
					types[k] = map[string]any{}
				}
			}
			top["f:conditions"] = types
		}
		return map[string]any{
			"manager": entry["manager"], "operation": entry["operation"], "apiVersion": entry["apiVersion"],
			"fieldsType": entry["fieldsType"], "subresource": "status", "fieldsV1": map[string]any{"f:status": top},
		}, nil
	})
}

// compactChild is the children cache's transform: keepOwnManagedFields,
// and of an unstructured child (a kind the scheme does not know) cueop's
// entry keeps its fieldsV1 as JSON text, which the applier reads as is
// (apply.fieldsJSON): a string costs a fraction of the decoded tree
// (docs/benchmarks.md). Children of kinds the scheme
// knows are cached typed, where fieldsV1 is already raw JSON.
func compactChild(obj any) (any, error) {
	return rewriteManagedFields(obj, func(entry map[string]any) (map[string]any, error) {
		if entry["manager"] != apply.DefaultFieldManager {
			return nil, nil
		}
		if f, ok := entry["fieldsV1"]; ok {
			if _, text := f.(string); !text {
				b, err := json.Marshal(f)
				if err != nil {
					return nil, err
				}
				entry["fieldsV1"] = string(b)
			}
		}
		return entry, nil
	})
}

// rewriteManagedFields replaces each managedFields entry of an unstructured
// object with what rewrite returns for it, dropping it on nil; a typed
// object goes through keepOwnManagedFields.
func rewriteManagedFields(obj any, rewrite func(entry map[string]any) (map[string]any, error)) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return keepOwnManagedFields(obj)
	}
	md, _ := u.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	if len(entries) == 0 {
		return u, nil
	}
	var kept []any
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		out, err := rewrite(entry)
		if err != nil {
			return nil, fmt.Errorf("managedFields of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		if out != nil {
			kept = append(kept, out)
		}
	}
	if kept == nil {
		delete(md, "managedFields")
	} else {
		md["managedFields"] = kept
	}
	return u, nil
}

// Client-side rate limits used when the config sets none. client-go's own
// defaults (5 requests per second) would throttle a rollout of a few hundred
// children to minutes; cueop sends no request for a child in sync, so a
// higher limit costs nothing in steady state.
const (
	DefaultQPS   = 100
	DefaultBurst = 200
)

// clientDefaults is cfg with cueop's User-Agent and rate limits where it sets none and
// without compression unless opts.APICompression asks for it.
func clientDefaults(cfg *rest.Config, opts Options) *rest.Config {
	cfg = useragent.Set(rest.CopyConfig(cfg)) // the identities' configs are copies of it (identities.go)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	}
	if !opts.APICompression {
		cfg.DisableCompression = true
	}
	return cfg
}

func namespaces(ns string) map[string]cache.Config {
	if ns == "" {
		return nil
	}
	return map[string]cache.Config{ns: {}}
}

// Manager is the controller-runtime manager; Run starts it.
func (o *Operator) Manager() manager.Manager { return o.mgr }

// Run runs the operator until ctx is done.
func (o *Operator) Run(ctx context.Context) error {
	running.Store(o, struct{}{})
	defer running.Delete(o)
	// Return only once every kind's controller has drained.
	defer o.controllers.Wait()
	defer o.loader.stop() // a follower's, which Start never ran on (conversion.go loads templates there)
	return o.mgr.Start(ctx)
}

// NeedLeaderElection makes the operator's controllers run on the leader only.
func (o *Operator) NeedLeaderElection() bool { return true }

// Start watches the templates directory, loads the templates, starts one
// controller per kind and reloads on every edit until ctx is done. The
// watch is set up before the first load, so that no edit is missed. It is
// the manager's runnable.
func (o *Operator) Start(ctx context.Context) error {
	defer o.conv.firstLoadDone() // stopped early: hold no review
	// The schemas of the built-in kinds take seconds to parse: parse them
	// while the caches sync, not in the first reconcile that needs them.
	go kschema.Converter()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("templates watch: %w", err)
	}
	defer w.Close()
	defer o.loader.stop()
	o.watch.add(w)
	// The templates compile (in a worker, then here) while the caches
	// sync: a restarted process serves sooner. An edit made after the
	// watch was set up is loaded again before the first serve
	// (preload.go), a later one by the watch.
	pre := preload(ctx, o.log, w, o.loader.load, o.watch.add) // preload.go
	defer pre.stop()
	if !o.mgr.GetCache().WaitForCacheSync(ctx) || !o.parents.WaitForCacheSync(ctx) {
		return errors.New("caches did not sync")
	}
	// The children's informers sync while the templates compile, and the
	// CRs' informers list meanwhile once they have (warmparents.go).
	discovered := make(chan error, 1)
	go func() { discovered <- o.ids.discoverShared(ctx) }() // identities.go
	first, err := pre.result(ctx)
	if err != nil {
		<-discovered
		return nil // stopped before the first serve
	}
	warmed := o.kinds.run.warmParents(ctx, first.set)
	if err := <-discovered; err != nil {
		return err
	}
	if err := o.serveFirst(ctx, first); err != nil {
		return err
	}
	o.kinds.unwarm(ctx, warmed)
	go o.kinds.repoint(ctx)      // conversion.go
	go o.kinds.watchHolders(ctx) // holder.go
	return o.watch.run(ctx, w, o.kinds.reload)
}

// serveFirst serves the first load. No kind to serve is fatal, unless a
// kind was refused for its schema: exiting would make a restarted
// operator crash-loop on the CRs it protects; it waits for a fixed
// template instead (schemaguard.go). A kind waiting for its CRD
// (crdwait.go) is a kind to serve.
func (o *Operator) serveFirst(ctx context.Context, first preloaded) error {
	o.kinds.reloading.Lock()
	err := o.kinds.reloadSet(ctx, first.set, first.err)
	o.kinds.reloading.Unlock()
	o.conv.firstLoadDone()
	if err == nil {
		return nil
	}
	if o.kinds.idle() {
		return fmt.Errorf("templates %s: %w", o.opts.Templates, err)
	}
	if err := without(err, first.err); err != nil { // the load error was logged by loadFailed
		o.log.Error(err, "not every kind serves") // unserved.go retries what may pass
	}
	return nil
}

// Parents is the cache of the CRs, for callers that follow their status.
func (o *Operator) Parents() cache.Cache { return o.parents }

// HeldElsewhere are the packages this operator does not serve because
// another operator instance holds their kind, with that instance.
func (o *Operator) HeldElsewhere() map[string]string { return o.kinds.heldElsewhereNow() }

// Progress returns the rollout state of every kind served.
func (o *Operator) Progress() []KindProgress { return o.kinds.progress() }

// without is err, a join of errors, without load: a cause logged already
// is not logged twice.
func without(err, load error) error {
	if err == nil || load == nil {
		return err
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == load {
			return nil
		}
		return err
	}
	var rest []error
	for _, e := range j.Unwrap() {
		if e != load {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

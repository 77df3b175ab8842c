package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/engine/wellknown"
)

// A sharded replica runs one Operator per range it holds (Options.Shard):
// its parents cache lists and watches that range's CRs only (the API
// server's shardSelector where it honours it, else the same hash on the
// client: shard.Range.ListWatch), the children it applies carry the
// range's label (wellknown.LabelShard) and its children cache selects that
// label, so each replica's memory follows its share. Losing the range
// stops the Operator, and its controllers drain, before the range's Lease
// is released.

// shardParents makes the parents cache hold the CRs of r only.
func shardParents(o cache.Options, r *shard.Range) cache.Options {
	if r == nil {
		return o
	}
	o.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(r.ListWatch(lw), obj, resync, idx)
	}
	return o
}

// shardChildren makes the children cache select the children of r's CRs.
func shardChildren(o ctrl.Options, r *shard.Range) ctrl.Options {
	if r == nil {
		return o
	}
	req, err := labels.NewRequirement(wellknown.LabelShard, selection.Equals, []string{r.Label()})
	if err != nil {
		panic(err) // a range's label is a valid label value
	}
	if o.Cache.DefaultLabelSelector == nil {
		o.Cache.DefaultLabelSelector = labels.NewSelector()
	}
	o.Cache.DefaultLabelSelector = o.Cache.DefaultLabelSelector.Add(*req)
	return o
}

// childLabels are the labels the children of r's CRs carry.
func childLabels(r *shard.Range) map[string]string {
	if r == nil {
		return nil
	}
	return map[string]string{wellknown.LabelShard: r.Label()}
}

// Sharding configures a sharded replica (NewSharded).
type Sharding struct {
	// Shards is the number of ranges the CRs' uid hash space is cut into.
	Shards int
	// Identity names the replica in the Leases it holds; empty means the
	// host name and a random suffix.
	Identity string
	// Namespace holds the shard Leases (cueop-shard-<i>-of-<n>); empty
	// means the namespace of the pod cueop runs in.
	Namespace string
	// Fence names Leases of Namespace that keep the replica from taking
	// any range while they are held (shard.Options.Fence).
	Fence []string
	// LeaseDuration, RenewDeadline and RetryPeriod are the Leases' timing;
	// zero means shard.DefaultLeaseDuration and its siblings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Sharded is a replica that competes for the ranges of CRs and serves
// those it holds.
type Sharded struct {
	cfg    *rest.Config
	opts   Options
	sh     Sharding
	host   manager.Manager
	leases kubernetes.Interface
	log    logr.Logger

	conv *replicaConversion // the replica's conversion endpoint (conversion.go)

	mu  sync.Mutex
	ops map[int]*Operator // by range index
	// moduleRefused are the module versions refused at fetch, by
	// reference, marked on every range's operator (modulerefused.go).
	moduleRefused map[string]moduleRefusal
}

// ConversionNeeded is Operator.ConversionNeeded of the replica: closed
// once a kind its endpoint serves converts, or a range's operator points a
// CRD at it.
func (s *Sharded) ConversionNeeded() <-chan struct{} {
	if s.conv != nil {
		return s.conv.needed()
	}
	return conversionNeeded(nil, s.opts.Conversion)
}

// NewSharded builds a sharded replica on cfg; Run starts it. opts.Manager's
// metrics and probe addresses are the replica's; it takes no part in
// leader election (the shard Leases elect a holder per range).
func NewSharded(cfg *rest.Config, opts Options, sh Sharding) (*Sharded, error) {
	if sh.Shards < 1 {
		return nil, fmt.Errorf("shards: %d, want 1 or more", sh.Shards)
	}
	if opts.Manager.LeaderElection {
		return nil, errors.New("sharding and leader election exclude each other: each range's Lease elects its holder")
	}
	if sh.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("replica identity: %w", err)
		}
		sh.Identity = host + "_" + string(uuid.NewUUID())
	}
	if sh.Namespace == "" {
		ns, err := podNamespace()
		if err != nil {
			return nil, err
		}
		sh.Namespace = ns
	}
	cfg = clientDefaults(cfg, opts)
	leases, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Conversion == nil {
		if opts.Conversion, err = LocalConversion(); err != nil {
			return nil, err
		}
	}
	hostOpts := ctrl.Options{
		Metrics: opts.Manager.Metrics, HealthProbeBindAddress: opts.Manager.HealthProbeBindAddress,
		Logger: opts.Manager.Logger,
	}
	if !opts.Conversion.NoServe {
		hostOpts.WebhookServer = webhookServer(opts.Conversion)
	}
	host, err := ctrl.NewManager(cfg, hostOpts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	s := &Sharded{cfg: cfg, opts: opts, sh: sh, host: host, leases: leases,
		log: host.GetLogger().WithName("cueop"), ops: map[int]*Operator{}}
	if !opts.Conversion.NoServe { // else served elsewhere, from the ranges' converters
		if s.conv, err = serveReplicaConversion(host, opts, s.log); err != nil { // conversion.go
			return nil, err
		}
	}
	return s, host.Add(manager.RunnableFunc(s.compete))
}

// podNamespace is the namespace of the pod cueop runs in.
func podNamespace() (string, error) {
	const file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("namespace of the shard Leases: not in a pod (%s: %w); set it (--leader-election-namespace)", file, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Manager is the replica's manager (metrics, probes); Run starts it.
func (s *Sharded) Manager() manager.Manager { return s.host }

// Identity is the replica's name in the Leases.
func (s *Sharded) Identity() string { return s.sh.Identity }

// Run asks the API server whether it honours shardSelector, says once
// which filter the ranges get (the log, cueop_shard_filter), then serves
// the ranges this replica holds until ctx is done. It returns once every
// range is drained and its Lease released.
func (s *Sharded) Run(ctx context.Context) error {
	filter, err := shard.CheckServer(ctx, s.leases.CoordinationV1(), s.sh.Namespace)
	if err != nil {
		return err
	}
	defer shard.SetFilter(s.sh.Identity, filter)()
	msg := "sharding: the API server filters each range's CRs (shardSelector honoured)"
	if filter == shard.ByClient {
		msg = "sharding: the API server ignores shardSelector (feature gate ShardedListAndWatch off): " +
			"each range's CR cache filters on the client, every range lists and watches every CR"
	}
	s.log.Info(msg, "filter", filter, "replica", s.sh.Identity, "shards", s.sh.Shards, "leaseNamespace", s.sh.Namespace)
	if s.conv != nil {
		defer s.conv.loader.stop()
	}
	return s.host.Start(ctx)
}

// compete is the host manager's runnable: it holds and serves ranges.
func (s *Sharded) compete(ctx context.Context) error {
	return shard.Run(ctx, shard.Options{
		Leases: s.leases.CoordinationV1(), Namespace: s.sh.Namespace, Identity: s.sh.Identity, Shards: s.sh.Shards, Fence: s.sh.Fence,
		LeaseDuration: s.sh.LeaseDuration, RenewDeadline: s.sh.RenewDeadline, RetryPeriod: s.sh.RetryPeriod,
		Serve: s.serve, Log: s.log,
	})
}

// serve runs an Operator for r until ctx is done, and returns once its
// controllers have drained. An Operator that fails gives the range up.
func (s *Sharded) serve(ctx context.Context, r shard.Range) {
	opts := s.opts
	opts.Shard = &r
	conv := *s.opts.Conversion
	conv.NoServe = true // the replica serves it
	opts.Conversion = &conv
	opts.Manager = ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: s.opts.Manager.Logger, Scheme: s.opts.Manager.Scheme,
	}
	op, err := New(s.cfg, opts)
	if err != nil {
		s.log.Error(err, "shard range: operator", "replica", s.sh.Identity, "range", r.Label())
		return
	}
	s.mu.Lock()
	s.ops[r.Index] = op
	s.mu.Unlock()
	s.replayModuleRefused(op) // modulerefused.go
	defer func() {
		s.keepModuleRefused(op)
		s.mu.Lock()
		delete(s.ops, r.Index)
		s.mu.Unlock()
	}()
	if err := op.Run(ctx); err != nil {
		s.log.Error(err, "shard range: operator stopped", "replica", s.sh.Identity, "range", r.Label())
	}
}

// Held are the ranges the replica serves now, in order.
func (s *Sharded) Held() []shard.Range {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held()
}

func (s *Sharded) held() []shard.Range {
	var out []shard.Range
	for i := range s.ops {
		out = append(out, shard.Range{Index: i, Count: s.sh.Shards})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Operators are the operators of the ranges the replica serves now.
func (s *Sharded) Operators() []*Operator {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Operator, 0, len(s.ops))
	for _, r := range s.held() {
		out = append(out, s.ops[r.Index])
	}
	return out
}

// Progress is the rollout state of every kind over the ranges the replica
// serves.
func (s *Sharded) Progress() []KindProgress {
	var all [][]KindProgress
	for _, op := range s.Operators() {
		all = append(all, op.Progress())
	}
	return MergeProgress(all...)
}

// StorageMigrations are the storage migrations of the ranges the replica
// serves (the first range's operator migrates).
func (s *Sharded) StorageMigrations() []MigrationProgress {
	var out []MigrationProgress
	for _, op := range s.Operators() {
		out = append(out, op.StorageMigrations()...)
	}
	return out
}

// MergeProgress adds up the rollout states of several operators (ranges,
// replicas) kind by kind.
func MergeProgress(ps ...[]KindProgress) []KindProgress {
	byPackage := map[string]*KindProgress{}
	var order []string
	for _, list := range ps {
		for _, p := range list {
			m := byPackage[p.Package]
			if m == nil {
				m = &KindProgress{Kind: p.Kind, Package: p.Package, GVK: p.GVK}
				m.Revision, m.Previous, m.PerRevision = p.Revision, p.Previous, map[string]int{}
				byPackage[p.Package] = m
				order = append(order, p.Package)
			}
			for rev, n := range p.PerRevision {
				m.PerRevision[rev] += n
			}
			m.InFlight += p.InFlight
			m.Waiting += p.Waiting
			m.Stalled += p.Stalled
			m.Halted = m.Halted || p.Halted
		}
	}
	sort.Strings(order)
	out := make([]KindProgress, 0, len(order))
	for _, name := range order {
		out = append(out, *byPackage[name])
	}
	return out
}

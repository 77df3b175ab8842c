package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Storage migration (package migrate): when a kind is served (at start and
// at each new revision), the replica that migrates (the leader; with
// --shards, the holder of the first range) rewrites the stored CRs of a
// kind whose CRD lists stored versions other than its storage version, in
// the background, retried with backoff until it succeeds. Its progress
// shows in StorageMigrations (`cueop dev`), Events on the CRD, the
// cueop_storage_migration_* metrics and the CRD's StorageMigrating
// condition.

// MigrationProgress is the storage migration of one kind.
type MigrationProgress struct {
	migrate.Progress
	// Err is the error the last attempt failed with; it is retried.
	Err error
}

// migrations are the storage migrations of one operator, by CRD name:
// each runs in the background, given the clients it reads and writes
// with, and reports its progress (migrationReport).
type migrations struct {
	// migrates: this operator migrates. An unsharded one runs only on the
	// leader; of a sharded replica's, the first range's.
	migrates bool
	log      logr.Logger
	metrics  *Metrics
	reader   client.Reader // uncached: the stored CRs
	client   client.Client
	config   *rest.Config // with http, discovery and the storage version (migrate.Migrator)
	http     *http.Client
	pageSize int64 // Options.StorageMigrationPageSize
	// event emits an Event on a CRD (crds.go).
	event       func(ctx context.Context, crdName, typ, reason, msg string)
	controllers *sync.WaitGroup // the migrations run counted in

	mu      sync.Mutex
	running map[string]bool
	last    map[string]MigrationProgress
}

// StorageMigrations returns the storage migrations this operator ran or
// runs, the last state of each, by kind.
func (o *Operator) StorageMigrations() []MigrationProgress { return o.migrations.progress() }

func (m *migrations) progress() []MigrationProgress {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MigrationProgress, 0, len(m.last))
	for _, p := range m.last {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CRD < out[j].CRD })
	return out
}

// start starts the storage migration of k's CRD in the background unless
// one runs; it ends at once when there is nothing to migrate.
func (m *migrations) start(ctx context.Context, k *template.Kind) {
	if !m.migrates {
		return
	}
	name := k.Resource.CRDName()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running, m.last = map[string]bool{}, map[string]MigrationProgress{}
	}
	if m.running[name] {
		return
	}
	m.running[name] = true
	m.controllers.Add(1)
	go func() {
		defer m.controllers.Done()
		m.run(ctx, name)
		m.mu.Lock()
		delete(m.running, name)
		m.mu.Unlock()
	}()
}

// run migrates the CRD name until it succeeds or ctx is done, retrying a
// failed attempt with backoff (1 s to 1 min).
func (m *migrations) run(ctx context.Context, name string) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: 1 << 30}
	var retry *migrate.Progress // an attempt that CRs refused: the next rewrites only them
	for {
		r := &migrationReport{m: m, ctx: ctx}
		mg := m.migrator(r)
		mg.Retry = retry
		p, err := mg.Run(ctx, name)
		if err == nil || ctx.Err() != nil {
			return
		}
		retry = nil
		if refused := (*migrate.RefusedError)(nil); errors.As(err, &refused) {
			retry = &refused.Progress
		}
		msg := fmt.Sprintf("storage migration of %s failed, retrying: %v", name, err)
		m.log.Error(err, "storage migration failed, retrying", "crd", name)
		m.event(ctx, name, corev1.EventTypeWarning, wellknown.CRDReasonStorageMigrationFailed, msg)
		m.set(MigrationProgress{Progress: p, Err: err})
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Step()):
		}
	}
}

func (m *migrations) migrator(r *migrationReport) *migrate.Migrator {
	mg := &migrate.Migrator{Reader: m.reader, Client: m.client,
		PageSize: m.pageSize, Report: r.report}
	// The manager's HTTP client: one transport for the process.
	if d, err := discovery.NewDiscoveryClientForConfigAndClient(m.config, m.http); err == nil {
		mg.Discovery = d
	}
	mg.Config = m.config // the storage version read over new connections (migrate.Migrator.Config)
	// Half of the client's rate: the reconciles keep the other half.
	if qps := m.config.QPS / 2; qps > 0 {
		mg.Limiter = flowcontrol.NewTokenBucketRateLimiter(qps, 1)
	}
	return mg
}

func (m *migrations) set(p MigrationProgress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last[p.CRD] = p
}

// migrationReport turns the progress of one attempt into Events on the
// CRD, metrics, log lines and the StorageMigrations entry.
type migrationReport struct {
	m       *migrations
	ctx     context.Context
	started bool
}

func (r *migrationReport) report(p migrate.Progress) {
	m := r.m
	m.set(MigrationProgress{Progress: p})
	m.metrics.migration(p)
	reason := wellknown.CRDReasonStorageMigrationProgress
	switch {
	case p.Done:
		reason = wellknown.CRDReasonStorageMigrationSucceeded
	case !r.started && p.Resumed:
		reason = wellknown.CRDReasonStorageMigrationResumed
	case !r.started:
		reason = wellknown.CRDReasonStorageMigrationStarted
	}
	r.started = true
	msg := "storage migration of " + p.CRD + " " + p.String()
	m.log.Info(msg, "kind", p.Kind, "reason", reason)
	m.event(r.ctx, p.CRD, corev1.EventTypeNormal, reason, msg)
}

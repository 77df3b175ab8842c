package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/flowcontrol"

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

// migrations are the storage migrations of one operator, by CRD name.
type migrations struct {
	mu      sync.Mutex
	running map[string]bool
	last    map[string]MigrationProgress
}

// StorageMigrations returns the storage migrations this operator ran or
// runs, the last state of each, by kind.
func (o *Operator) StorageMigrations() []MigrationProgress {
	o.migrations.mu.Lock()
	defer o.migrations.mu.Unlock()
	out := make([]MigrationProgress, 0, len(o.migrations.last))
	for _, p := range o.migrations.last {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CRD < out[j].CRD })
	return out
}

// migratesStorage tells whether this operator migrates: an unsharded one
// runs only on the leader; of a sharded replica's, the first range's.
func (o *Operator) migratesStorage() bool {
	return o.opts.Shard == nil || o.opts.Shard.Index == 0
}

// migrateStorage starts the storage migration of k's CRD in the background
// unless one runs; it ends at once when there is nothing to migrate.
func (o *Operator) migrateStorage(ctx context.Context, k *template.Kind) {
	if !o.migratesStorage() {
		return
	}
	name := k.Resource.CRDName()
	m := &o.migrations
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running, m.last = map[string]bool{}, map[string]MigrationProgress{}
	}
	if m.running[name] {
		return
	}
	m.running[name] = true
	o.controllers.Add(1)
	go func() {
		defer o.controllers.Done()
		o.runMigration(ctx, name)
		m.mu.Lock()
		delete(m.running, name)
		m.mu.Unlock()
	}()
}

// runMigration migrates the CRD name until it succeeds or ctx is done,
// retrying a failed attempt with backoff (1 s to 1 min).
func (o *Operator) runMigration(ctx context.Context, name string) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: 1 << 30}
	var retry *migrate.Progress // an attempt that CRs refused: the next rewrites only them
	for {
		r := &migrationReport{o: o, ctx: ctx}
		m := o.migrator(r)
		m.Retry = retry
		p, err := m.Run(ctx, name)
		if err == nil || ctx.Err() != nil {
			return
		}
		retry = nil
		if refused := (*migrate.RefusedError)(nil); errors.As(err, &refused) {
			retry = &refused.Progress
		}
		msg := fmt.Sprintf("storage migration of %s failed, retrying: %v", name, err)
		o.log.Error(err, "storage migration failed, retrying", "crd", name)
		o.crdEventType(ctx, name, corev1.EventTypeWarning, wellknown.CRDReasonStorageMigrationFailed, msg)
		o.setMigration(MigrationProgress{Progress: p, Err: err})
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Step()):
		}
	}
}

func (o *Operator) migrator(r *migrationReport) *migrate.Migrator {
	m := &migrate.Migrator{Reader: o.mgr.GetAPIReader(), Client: o.mgr.GetClient(),
		PageSize: o.opts.StorageMigrationPageSize, Report: r.report}
	// The manager's HTTP client: one transport for the process.
	if d, err := discovery.NewDiscoveryClientForConfigAndClient(o.mgr.GetConfig(), o.mgr.GetHTTPClient()); err == nil {
		m.Discovery = d
	}
	m.Config = o.mgr.GetConfig() // the storage version read over new connections (migrate.Migrator.Config)
	// Half of the client's rate: the reconciles keep the other half.
	if qps := o.mgr.GetConfig().QPS / 2; qps > 0 {
		m.Limiter = flowcontrol.NewTokenBucketRateLimiter(qps, 1)
	}
	return m
}

func (o *Operator) setMigration(p MigrationProgress) {
	o.migrations.mu.Lock()
	defer o.migrations.mu.Unlock()
	o.migrations.last[p.CRD] = p
}

// migrationReport turns the progress of one attempt into Events on the
// CRD, metrics, log lines and the StorageMigrations entry.
type migrationReport struct {
	o       *Operator
	ctx     context.Context
	started bool
}

func (r *migrationReport) report(p migrate.Progress) {
	o := r.o
	o.setMigration(MigrationProgress{Progress: p})
	o.metrics.migration(p)
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
	o.log.Info(msg, "kind", p.Kind, "reason", reason)
	o.crdEventType(r.ctx, p.CRD, corev1.EventTypeNormal, reason, msg)
}

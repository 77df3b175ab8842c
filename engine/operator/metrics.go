package operator

import (
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
)

// Metrics are cueop's own metrics, beside controller-runtime's.
type Metrics struct {
	renderSeconds *prometheus.HistogramVec
	applies       *prometheus.CounterVec
	revisions     *prometheus.GaugeVec
	loadErrors    prometheus.Counter
	refused       *prometheus.GaugeVec
	migrations    *prometheus.GaugeVec
	settled       *prometheus.CounterVec
	conversions   *prometheus.CounterVec
	reviewSeconds *prometheus.HistogramVec
	statusFailed  *prometheus.CounterVec
	restores      *prometheus.CounterVec
}

var (
	registerOnce sync.Once
	registered   *Metrics
)

// NewMetrics returns the process's metrics, registered once with
// controller-runtime's registry. It is safe for concurrent use.
func NewMetrics() *Metrics {
	registerOnce.Do(func() { registered = newMetrics() })
	return registered
}

func newMetrics() *Metrics {
	m := &Metrics{
		renderSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cueop_render_duration_seconds", Help: "Time to render one CR.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14),
		}, []string{"kind", "result"}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cueop_applies_total", Help: "Children applied, by result (created, updated, unchanged, pruned, recreated, failed).",
		}, []string{"kind", "result"}),
		revisions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cueop_template_revision", Help: "1 for the template revision each kind is served by.",
		}, []string{"kind", "package", "revision"}),
		loadErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cueop_template_load_errors_total", Help: "Template loads that failed.",
		}),
		refused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cueop_template_refused", Help: "1 while a kind's newest template is refused for a breaking schema change or a lossy conversion, 0 once a revision of it is served again.",
		}, []string{"kind"}),
		migrations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cueop_storage_migration_crs", Help: "CRs of the kind's latest storage migration, by state: listed, migrated (stored anew), refused (rewrites the API server refused: the pass does not finish), managedfields (CRs whose managedFields entries at other versions were moved to the storage version), running (1 while it runs).",
		}, []string{"kind", "state"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cueop_reconciles_settled_total", Help: "Reconciles that found a CR converged by its recorded inputs digest, and neither rendered nor compared its children.",
		}, []string{"kind"}),
		conversions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cueop_conversion_objects_total", Help: "Objects in the conversion reviews the webhook answered, by the kind whose converter took them (none: no converter did), result (ok, failed: the whole review was refused), the versions converted from and to (empty unless ok) and review (one: a review of a single object, as the API server sends for each write it decodes for its watch cache of another version; list: of several, as for a list read at another version).",
		}, []string{"kind", "result", "from", "to", "review"}),
		reviewSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cueop_conversion_review_seconds", Help: "Time to answer one conversion review, by result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"result"}),
		statusFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cueop_status_write_failures_total", Help: "Status writes of CRs the API server refused or did not answer (the CR keeps its last written status).",
		}, []string{"kind"}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cueop_template_restores_total", Help: "Template statuses another writer changed, by result: restored (written again), held (left for a while: restored too often within a minute, another writer keeps changing it).",
		}, []string{"template", "result"}),
	}
	metrics.Registry.MustRegister(m.renderSeconds, m.applies, m.revisions, m.loadErrors, m.refused, m.migrations, m.settled,
		m.conversions, m.reviewSeconds, m.statusFailed, m.restores, rolloutCollector{})
	return m
}

// Rendered records one render.
func (m *Metrics) Rendered(kind string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.renderSeconds.WithLabelValues(kind, result).Observe(d.Seconds())
}

// Applied records one child's apply, prune or recreate.
func (m *Metrics) Applied(kind string, a apply.Action, err error) {
	result := string(a)
	if err != nil {
		result = "failed"
	}
	m.applies.WithLabelValues(kind, result).Inc()
}

// StatusWriteFailed counts a status write of a CR of kind that failed
// (reconcile.StatusObserver).
func (m *Metrics) StatusWriteFailed(kind string) { m.statusFailed.WithLabelValues(kind).Inc() }

// templateRestore counts a Template status another writer changed.
func (m *Metrics) templateRestore(template, result string) {
	m.restores.WithLabelValues(template, result).Inc()
}

// Settled counts a reconcile that found a CR converged by its inputs
// digest (reconcile/resync.go).
func (m *Metrics) Settled(kind string) { m.settled.WithLabelValues(kind).Inc() }

// Converted records one conversion review answered (webhook.Handler.Observe).
func (m *Metrics) Converted(r webhook.Reviewed) {
	kind, result, review := r.Kind, "ok", "one"
	if kind == "" {
		kind = "none"
	}
	if r.Failed {
		result = "failed"
	}
	if r.Objects > 1 {
		review = "list"
	}
	m.conversions.WithLabelValues(kind, result, r.From, r.To, review).Add(float64(r.Objects))
	m.reviewSeconds.WithLabelValues(result).Observe(r.Took.Seconds())
}

func (m *Metrics) revision(k *template.Kind) {
	m.revisions.DeletePartialMatch(prometheus.Labels{"kind": k.Resource.Kind})
	m.revisions.WithLabelValues(k.Resource.Kind, k.Name, k.Revision).Set(1)
}

func (m *Metrics) removed(k *template.Kind) {
	m.revisions.DeletePartialMatch(prometheus.Labels{"kind": k.Resource.Kind})
}

func (m *Metrics) loadError() { m.loadErrors.Inc() }

func (m *Metrics) schemaRefused(k *template.Kind, refused bool) {
	v := 0.0
	if refused {
		v = 1
	}
	m.refused.WithLabelValues(k.Resource.Kind).Set(v)
}

// migration records the progress of a kind's storage migration.
func (m *Metrics) migration(p migrate.Progress) {
	m.migrations.WithLabelValues(p.Kind, "listed").Set(float64(p.Listed))
	m.migrations.WithLabelValues(p.Kind, "migrated").Set(float64(p.Migrated))
	m.migrations.WithLabelValues(p.Kind, "refused").Set(float64(p.Refused))
	m.migrations.WithLabelValues(p.Kind, "managedfields").Set(float64(p.Fields))
	m.migrations.WithLabelValues(p.Kind, "running").Set(boolValue(!p.Done))
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

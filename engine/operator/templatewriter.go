package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/wellknown"
)

// templateWriter writes the Templates' status (templatestatus.go) off the
// reload's goroutine: a reload only queues each package's report, the
// newest one replacing the one before, and the writer applies a status
// (server-side apply, field manager cueop) only where it differs from the
// one written last, or found at start: a reload that changes nothing
// writes nothing, and a restarted operator keeps each condition's
// lastTransitionTime. Where the Template CRD is not served and cueop may
// not install it, it says so once and writes nothing; the kinds serve as
// before.
type templateWriter struct {
	templateWriterConfig
	wake chan struct{}

	mu      sync.Mutex
	started bool                  // run is running
	pending map[string]kindReport // by package
	names   map[string]string     // by package, the Template named by it
	current map[string]bool       // the packages of the last reload; nil before it
	created []string              // the Templates this process created
	drift   map[string]bool       // the Templates changed since last compared (templatedrift.go)

	// Owned by run.
	seeded, quiet, watching bool
	last                    map[string]*liveTemplate  // by Template name
	store                   toolscache.Store          // the Templates as watched
	restores                map[string]*restoreBudget // by Template name (templatedrift.go)
}

// liveTemplate is a Template's status as last written or found.
type liveTemplate struct {
	status *templateState
	gen    int64
	rv     string // the resourceVersion of the last write; "" when found
	ours   bool   // written by this operator, which holds it (templatedrift.go)
}

// Retries of a failed write, from templateRetry to templateRetryMax.
const (
	templateRetry    = time.Second
	templateRetryMax = time.Minute
)

// templateWriterConfig is what the writer is given: the clients and the
// operator's identity, and what it asks of the CRDs.
type templateWriterConfig struct {
	log      logr.Logger
	metrics  *Metrics // nil: no metrics
	client   client.Client
	reader   client.Reader // reads uncached: the Templates at start, the CRD
	rest     *rest.Config  // with http, watches the Templates
	http     *http.Client
	applier  *apply.Applier
	mark     string // the value of wellknown.AnnotationTemplates it writes (Operator.TemplatesMark)
	instance string // the operator's instance (Operator.Instance)
	// installCRD: cueop installs CRDs (Options.InstallCRDs), the Template
	// CRD among them.
	installCRD bool
	// established waits until the CRD name serves (crds.go); mapped until
	// the mapper knows gvk (mapper.go).
	established func(ctx context.Context, name string) error
	mapped      func(ctx context.Context, gvk schema.GroupVersionKind) bool
	// holderOf is the instance and templates a CRD names (holder.go).
	holderOf func(ctx context.Context, crdName string) (instance, templates string, found bool, err error)
}

func newTemplateWriter(c templateWriterConfig) *templateWriter {
	return &templateWriter{templateWriterConfig: c, wake: make(chan struct{}, 1),
		pending: map[string]kindReport{}, names: map[string]string{}, drift: map[string]bool{}, last: map[string]*liveTemplate{}}
}

// start runs the writer with ctx, counted in wg, unless it runs already.
func (w *templateWriter) start(ctx context.Context, wg *sync.WaitGroup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return
	}
	w.started = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run(ctx)
	}()
}

// running tells whether start ran.
func (w *templateWriter) running() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

// queueAll queues the reports of a reload, which found the packages seen,
// and the removal of each package known before and not seen.
func (w *templateWriter) queueAll(reports []kindReport, seen map[string]bool) {
	w.mu.Lock()
	w.current = seen
	for pkg := range w.names {
		if !seen[pkg] {
			reports = append(reports, removedReport(pkg))
		}
	}
	w.mu.Unlock()
	w.queue(reports...)
}

func (w *templateWriter) queue(reports ...kindReport) {
	w.mu.Lock()
	for _, r := range reports {
		w.pending[r.pkg] = r
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// packages are the packages that name a Template written or found.
func (w *templateWriter) packages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.names))
	for pkg := range w.names {
		out = append(out, pkg)
	}
	return out
}

func (w *templateWriter) run(ctx context.Context) {
	delay := templateRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		if w.flush(ctx) {
			delay = templateRetry
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, templateRetryMax)
		w.queue()
	}
}

// flush writes the reports pending; false when one should be retried.
func (w *templateWriter) flush(ctx context.Context) bool {
	if !w.seeded {
		if err := w.seed(ctx); err != nil {
			return w.unavailable(err)
		}
	}
	if err := w.watchTemplates(ctx); err != nil {
		w.log.Error(err, "Templates not watched; retrying")
		return false
	}
	ok := true
	for _, r := range w.take() {
		if err := w.writeReport(ctx, r); err != nil {
			if w.unavailable(err) {
				continue
			}
			w.log.Error(err, "kind's state not written; retrying", "package", r.pkg)
			w.requeue(r)
			ok = false
		}
	}
	return w.restoreAll(ctx) && ok
}

// unavailable tells whether err says that Templates cannot be written at
// all (no CRD, no permission), saying so once; the reports stay for later.
func (w *templateWriter) unavailable(err error) bool {
	if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !apierrors.IsMethodNotSupported(err) {
		return false
	}
	if !w.quiet {
		w.quiet = true
		w.log.Info("the kinds' state is not written to Template objects (the Template CRD is not installed, or cueop may not write it); it shows in the log and in Events on the kinds' CRDs", "crd", TemplateCRDName, "error", err.Error())
	}
	return true
}

// take empties the reports pending: the removals last, so that one applies
// only to a Template that still names the removed package.
func (w *templateWriter) take() []kindReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]kindReport, 0, len(w.pending))
	for _, r := range w.pending {
		out = append(out, r)
	}
	w.pending = map[string]kindReport{}
	sort.Slice(out, func(i, j int) bool {
		if out[i].removed != out[j].removed {
			return out[j].removed
		}
		return out[i].pkg < out[j].pkg
	})
	return out
}

// requeue queues r again unless a newer report of its package is pending.
func (w *templateWriter) requeue(r kindReport) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[r.pkg]; !ok {
		w.pending[r.pkg] = r
	}
}

// writeReport writes the Template of r where its status changes.
func (w *templateWriter) writeReport(ctx context.Context, r kindReport) error {
	w.mu.Lock()
	name := r.name
	if name == "" {
		name = w.names[r.pkg]
	}
	w.mu.Unlock()
	prev := w.last[name]
	if name == "" || r.removed && (prev == nil || !prev.ours || prev.status.Package != r.pkg) {
		return nil
	}
	gen, status := int64(1), (*templateState)(nil)
	if prev != nil {
		gen, status = prev.gen, prev.status
	}
	next := r.merge(status, gen)
	if prev != nil && prev.ours && sameJSON(prev.status, next) {
		return nil
	}
	if held, err := w.holds(ctx, name); err != nil { // templatedrift.go
		return err
	} else if !held {
		w.leave(name, prev)
		return nil
	}
	create := prev == nil || !prev.ours
	rv, err := w.write(ctx, name, next, create)
	if err != nil {
		return err
	}
	w.last[name] = &liveTemplate{status: next, gen: gen, rv: rv, ours: true}
	w.mu.Lock()
	if create {
		w.created = append(w.created, name)
	}
	w.names[next.Package] = name
	w.mu.Unlock()
	return nil
}

// write applies status to the Template name, creating it (or marking it
// this operator's) first when create is set; it answers the resourceVersion
// written.
func (w *templateWriter) write(ctx context.Context, name string, status *templateState, create bool) (string, error) {
	c := w.client
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(TemplateGVK)
	obj.SetName(name)
	if create {
		obj.Object["spec"] = map[string]any{}
		obj.SetAnnotations(map[string]string{wellknown.AnnotationTemplates: w.mark})
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(apply.DefaultFieldManager), client.ForceOwnership); err != nil {
			return "", fmt.Errorf("Template %s: %w", name, err)
		}
		// Apply filled obj with the object as stored (managedFields and
		// all): the status apply starts from a fresh object.
		obj = &unstructured.Unstructured{}
		obj.SetGroupVersionKind(TemplateGVK)
		obj.SetName(name)
	}
	b, err := json.Marshal(status)
	if err != nil {
		return "", err
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return "", err
	}
	obj.Object["status"] = s
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(apply.DefaultFieldManager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("Template %s status: %w", name, err)
	}
	if !sameStatus(obj, status) {
		// Fields another manager set (by update, under any name, cueop's
		// too) that status does not have outlive an apply: the status is
		// replaced whole, at the resourceVersion applied.
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
			{"op": "add", "path": "/status", "value": s},
		})
		if err != nil {
			return "", err
		}
		if err := c.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(apply.DefaultFieldManager)); err != nil {
			return "", fmt.Errorf("Template %s status: %w", name, err)
		}
	}
	return obj.GetResourceVersion(), nil
}

// seed installs the Template CRD when cueop installs CRDs and reads the
// Templates there are, the status each was last written with. A package
// of one of this operator's that the last reload did not find was removed
// meanwhile.
func (w *templateWriter) seed(ctx context.Context) error {
	if w.installCRD {
		if err := w.install(ctx); err != nil {
			return err
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(TemplateGVK.GroupVersion().WithKind("TemplateList"))
	if err := w.reader.List(ctx, list); err != nil {
		return fmt.Errorf("list Templates: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range list.Items {
		item := &list.Items[i]
		st, ours := statusOf(item), item.GetAnnotations()[wellknown.AnnotationTemplates] == w.mark
		w.last[item.GetName()] = &liveTemplate{status: st, gen: item.GetGeneration(), ours: ours}
		if ours && st.Package != "" {
			w.names[st.Package] = item.GetName()
			if _, ok := w.pending[st.Package]; !ok && w.current != nil && !w.current[st.Package] {
				w.pending[st.Package] = removedReport(st.Package)
			}
		}
	}
	w.seeded = true
	return nil
}

// install applies the Template CRD and waits until it serves.
func (w *templateWriter) install(ctx context.Context) error {
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(templateCRDYAML, &crd.Object); err != nil {
		return fmt.Errorf("CRD %s: %w", TemplateCRDName, err)
	}
	live, err := schemaguard.Live(ctx, w.reader, TemplateCRDName)
	if err != nil {
		return err
	}
	// The applier writes only when the live CRD differs: a fresh operator
	// over an installed CRD sends no request.
	if _, err := w.applier.Apply(ctx, crd, live); err != nil {
		return fmt.Errorf("CRD %s: %w", TemplateCRDName, err)
	}
	if err := w.established(ctx, TemplateCRDName); err != nil {
		return fmt.Errorf("CRD %s: %w", TemplateCRDName, err)
	}
	w.mapped(ctx, TemplateGVK)
	return nil
}

func sameJSON(a, b *templateState) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// CreatedTemplates are the names of the Template objects this operator
// created (tests delete them at their end: a Template outlives the kind's
// controller by design).
func (o *Operator) CreatedTemplates() []string {
	if o.reports == nil || o.reports.writer == nil {
		return nil
	}
	return o.reports.writer.createdTemplates()
}

func (w *templateWriter) createdTemplates() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.created)
}

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster"
)

// followDev applies the samples, then prints a line per CR of every kind
// served (the samples and any applied with kubectl) whenever its status
// changes, until ctx is done, the operator fails or, with
// --exit-when-ready, every sample CR is Ready (the samples that are not
// CRs of set's kinds, a ConfigMap a CR references, are only applied).
func followDev(ctx context.Context, out io.Writer, op devView, set *template.Set, cluster *localcluster.Cluster, f *devFlags, runErr <-chan error) error {
	samples, err := readSamples(f.samples)
	if err != nil {
		return err
	}
	crs, _, err := splitSamples(set, samples)
	if err != nil {
		return fmt.Errorf("%s: %w", f.samples, err)
	}
	if len(crs) == 0 && f.exitWhenReady {
		return fmt.Errorf("no sample in %s: --exit-when-ready waits for the samples to be Ready", f.samples)
	}
	if err := applySamples(ctx, cluster, samples); err != nil {
		return err
	}
	fmt.Fprintf(out, "applied %d samples from %s; Ctrl-C stops everything\n", len(samples), f.samples)
	p := newPrinter(out, op, crs)
	if err := p.follow(ctx, sampleKinds(crs)); err != nil {
		return err
	}
	var timeout <-chan time.Time
	if f.exitWhenReady {
		timeout = time.After(f.timeout)
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	rollouts, migrations := map[schema.GroupKind]string{}, map[string]string{}
	allReady := p.allReady
	for {
		select {
		case <-tick.C:
			printRollouts(out, op, rollouts)
			printMigrations(out, op, migrations)
			if err := p.follow(ctx, servedKinds(op)); err != nil {
				return err
			}
		case <-ctx.Done():
			// What changed since the last tick is not lost on exit.
			printRollouts(out, op, rollouts)
			printMigrations(out, op, migrations)
			return nil
		case err := <-runErr:
			return fmt.Errorf("operator stopped: %w", err)
		case <-allReady:
			if f.exitWhenReady {
				fmt.Fprintln(out, "every sample is Ready")
				return nil
			}
			// Closed for good: a nil channel is never selected, so an
			// idle dev sleeps until the next tick.
			allReady = nil
		case <-timeout:
			return fmt.Errorf("%w after %s: %s", errNotReady, f.timeout, p.notReady())
		}
	}
}

func readSamples(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		o, err := golden.ParseObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// applySamples applies the samples with server-side apply, their
// Namespaces first, waiting for their CRDs to be served.
func applySamples(ctx context.Context, cluster *localcluster.Cluster, samples []*unstructured.Unstructured) error {
	c, err := client.New(cluster.Config, client.Options{})
	if err != nil {
		return err
	}
	samples = slices.Clone(samples)
	slices.SortStableFunc(samples, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(sampleOrder(a), sampleOrder(b))
	})
	deadline := time.Now().Add(time.Minute)
	for _, s := range samples {
		for {
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(s.DeepCopy()), client.FieldOwner("cueop-dev"), client.ForceOwnership)
			if err == nil {
				break
			}
			if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
				return fmt.Errorf("apply sample %s %s: %w", s.GetKind(), s.GetName(), err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// sampleOrder puts the Namespaces before the objects they hold.
func sampleOrder(o *unstructured.Unstructured) int {
	if gvk := o.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Namespace" {
		return 0
	}
	return 1
}

// printer prints one line per CR status change and tells when every sample
// is Ready.
type printer struct {
	out      io.Writer
	op       devView
	followed map[schema.GroupVersionKind]bool // by follow's goroutine only

	mu       sync.Mutex
	kinds    []schema.GroupKind // followed, for their names (kindName)
	last     map[crID]string
	ready    map[crID]bool // by sample
	allReady chan struct{}
	closed   bool
}

// crID is a CR: its kind by group and kind, as two kinds of one name in
// two groups are two kinds (a StaticSite of web.example.com and one of
// web.example.org), and its namespace and name.
type crID struct {
	kind            schema.GroupKind
	namespace, name string
}

func crKey(cr *unstructured.Unstructured) crID {
	return crID{kind: cr.GroupVersionKind().GroupKind(), namespace: cr.GetNamespace(), name: cr.GetName()}
}

// label is how the console names the CR, kinds the kinds followed.
func (id crID) label(kinds []schema.GroupKind) string {
	return kindName(id.kind, kinds) + " " + id.namespace + "/" + id.name
}

// kindName is how the console names gk among kinds: its Kind, or
// Kind.group when another of kinds has the same Kind.
func kindName(gk schema.GroupKind, kinds []schema.GroupKind) string {
	for _, k := range kinds {
		if k.Kind == gk.Kind && k.Group != gk.Group {
			return gk.String()
		}
	}
	return gk.Kind
}

func newPrinter(out io.Writer, op devView, samples []*unstructured.Unstructured) *printer {
	p := &printer{out: out, op: op, last: map[crID]string{}, ready: map[crID]bool{},
		followed: map[schema.GroupVersionKind]bool{}, allReady: make(chan struct{})}
	for _, s := range samples {
		p.ready[crKey(s)] = false
	}
	return p
}

func sampleKinds(samples []*unstructured.Unstructured) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, s := range samples {
		out = append(out, s.GroupVersionKind())
	}
	return out
}

// servedKinds are the kinds the operator serves now (a new template
// directory adds one while dev runs).
func servedKinds(op devView) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, p := range op.Progress() {
		out = append(out, p.GVK)
	}
	return out
}

// follow prints the status changes of the CRs of each kind not followed yet.
func (p *printer) follow(ctx context.Context, gvks []schema.GroupVersionKind) error {
	for _, gvk := range gvks {
		if p.followed[gvk] || gvk.Empty() {
			continue
		}
		p.followed[gvk] = true
		p.mu.Lock()
		if !slices.Contains(p.kinds, gvk.GroupKind()) {
			p.kinds = append(p.kinds, gvk.GroupKind())
		}
		p.mu.Unlock()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		inf, err := p.op.Parents().GetInformer(ctx, u)
		if err != nil {
			return fmt.Errorf("follow %s: %w", gvk.Kind, err)
		}
		show := func(obj any) {
			if cr, ok := obj.(*unstructured.Unstructured); ok {
				p.show(cr)
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: show, UpdateFunc: func(_, obj any) { show(obj) },
		}); err != nil {
			return err
		}
	}
	return nil
}

// lockedWriter serialises the writes of several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// String is what was written, when w is a fmt.Stringer (a bytes.Buffer).
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.w)
}

func (p *printer) show(cr *unstructured.Unstructured) {
	key := crKey(cr)
	line := summary(cr)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last[key] == line {
		return
	}
	p.last[key] = line
	fmt.Fprintf(p.out, "%s  %-40s %s\n", time.Now().Format("15:04:05"), key.label(p.kinds), line)
	if _, sample := p.ready[key]; !sample {
		return
	}
	p.ready[key] = isReady(cr)
	if !p.closed && len(p.ready) > 0 && p.allSamplesReady() {
		p.closed = true
		close(p.allReady)
	}
}

func (p *printer) allSamplesReady() bool {
	for _, r := range p.ready {
		if !r {
			return false
		}
	}
	return true
}

func (p *printer) notReady() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for key, ready := range p.ready {
		if line, seen := p.last[key]; seen && !ready {
			out = append(out, key.label(p.kinds)+": "+line)
		} else if !seen {
			out = append(out, key.label(p.kinds)+": no status yet")
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "no sample reported a status"
	}
	return strings.Join(out, "; ")
}

// summary is the status of any kind in one line: its scalar status fields
// but digests, and its Ready condition.
func summary(cr *unstructured.Unstructured) string {
	st, _ := cr.Object["status"].(map[string]any)
	var parts []string
	for k, v := range st {
		switch v.(type) {
		case map[string]any, []any:
		default:
			if k != "observedGeneration" && k != "selector" && !isDigest(v) {
				parts = append(parts, fmt.Sprintf("%s=%v", k, v))
			}
		}
	}
	sort.Strings(parts)
	cond := condition(cr, wellknown.ConditionReady)
	if cond == nil {
		return strings.Join(append(parts, "Ready=Unknown"), " ")
	}
	return strings.Join(append(parts, fmt.Sprintf("Ready=%v (%v)", cond["status"], cond["reason"])), " ")
}

func condition(cr *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

func isReady(cr *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	c := condition(cr, wellknown.ConditionReady)
	return c != nil && c["status"] == "True" && gen == cr.GetGeneration()
}

// printRollouts prints one line per kind whose rollout state changed;
// last holds each kind's last state, by group and kind.
func printRollouts(out io.Writer, op devView, last map[schema.GroupKind]string) {
	progress := op.Progress()
	kinds := make([]schema.GroupKind, len(progress))
	for i, p := range progress {
		kinds[i] = p.GVK.GroupKind()
	}
	for i, p := range progress {
		gk, line := kinds[i], rolloutLine(p)
		if last[gk] == line {
			continue
		}
		if _, seen := last[gk]; seen || p.Previous != "" {
			fmt.Fprintf(out, "%s  %-40s %s\n", time.Now().Format("15:04:05"), "rollout "+kindName(gk, kinds), line)
		}
		last[gk] = line
	}
}

func rolloutLine(p operator.KindProgress) string {
	var revs []string
	for rev, n := range p.PerRevision {
		revs = append(revs, fmt.Sprintf("%d on %s", n, rev))
	}
	sort.Strings(revs)
	if len(revs) == 0 {
		revs = []string{"no CR yet"}
	}
	line := fmt.Sprintf("revision %s: %s; %d in flight, %d waiting", p.Revision, strings.Join(revs, ", "), p.InFlight, p.Waiting)
	if p.Halted {
		line += fmt.Sprintf("; HALTED, %d stalled (fix the template to resume)", p.Stalled)
	}
	return line
}

// printMigrations prints one line per storage migration whose state
// changed: `storage migration Shelf  v1 -> v2: 40 CRs rewritten of 40
// listed (1 pages); status.storedVersions is [v2]`.
func printMigrations(out io.Writer, op devView, last map[string]string) {
	migrations := op.StorageMigrations()
	// The kinds, as the rollouts name them (kindName): a migration of one
	// of two kinds sharing a Kind name is named with its group.
	var kinds []schema.GroupKind
	for _, p := range op.Progress() {
		kinds = append(kinds, p.GVK.GroupKind())
	}
	for _, m := range migrations {
		kinds = append(kinds, migrationKind(m))
	}
	for _, m := range migrations {
		line := m.String()
		if m.Err != nil {
			line += "; FAILED, retrying: " + m.Err.Error()
		}
		if last[m.CRD] == line {
			continue
		}
		last[m.CRD] = line
		fmt.Fprintf(out, "%s  %-40s %s\n", time.Now().Format("15:04:05"), "storage migration "+kindName(migrationKind(m), kinds), line)
	}
}

// migrationKind is the kind a storage migration rewrites: its group is its
// CRD's name but the plural (<plural>.<group>).
func migrationKind(m operator.MigrationProgress) schema.GroupKind {
	_, group, _ := strings.Cut(m.CRD, ".")
	return schema.GroupKind{Group: group, Kind: m.Kind}
}

// isDigest tells whether a status value is a digest (status.inputsDigest,
// a sha256:... reference): 32 hex digits or more say nothing to a person
// reading the console.
func isDigest(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "default:"), "sha256:") // resync.go: byDefaultPrefix
	if len(s) < 32 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

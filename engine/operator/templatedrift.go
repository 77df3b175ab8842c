package operator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/cueop/cueop/engine/apply"
)

// A Template is the operator's: an edit of its status or spec by anyone
// else, or its deletion, is undone within seconds (the writer watches the
// Templates and writes the status it last wrote again, at the object's
// generation), as long as its kind is in the templates. A Template of a
// kind removed from the templates is left to the administrator, who may
// delete it for good.
//
// A Template belongs to the operator whose templates it was written from,
// marked by the annotation TemplatesAnnotation: an operator marks removed,
// or broken by a load that failed, only the Templates of its own
// templates, so that two operators on one cluster (other teams, other
// templates) leave each other's alone. A kind an operator serves is its to
// write whatever the mark: it takes the Template over.

// TemplatesAnnotation names, on a Template, the templates its writer loads
// (the directory; for registry modules, the directory they are laid out
// in, whose modules the status' source names).
const TemplatesAnnotation = "cueop.dev/templates"

// TemplatesMark is the value of TemplatesAnnotation this operator writes.
func (o *Operator) TemplatesMark() string {
	if abs, err := filepath.Abs(o.opts.Templates); err == nil {
		return abs
	}
	return o.opts.Templates
}

// watchTemplates starts the informer that tells the writer of every change
// to a Template (drifted); once, after the CRD serves.
func (w *templateWriter) watchTemplates(ctx context.Context) error {
	if w.watching {
		return nil
	}
	dc, err := dynamic.NewForConfigAndClient(w.o.mgr.GetConfig(), w.o.mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	gvr := TemplateGVK.GroupVersion().WithResource("templates")
	inf := dynamicinformer.NewFilteredDynamicInformer(dc, gvr, "", 0, toolscache.Indexers{}, nil).Informer()
	on := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			w.drifted(u.GetName())
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, obj any) { on(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			on(obj)
		},
	}); err != nil {
		return err
	}
	w.store = inf.GetStore()
	w.watching = true
	go inf.Run(ctx.Done())
	return nil
}

// drifted queues name to be compared with what was written last.
func (w *templateWriter) drifted(name string) {
	w.mu.Lock()
	w.drift[name] = true
	w.mu.Unlock()
	w.queue()
}

// restoreAll writes again each Template changed by someone else; false
// when one should be retried.
func (w *templateWriter) restoreAll(ctx context.Context) bool {
	w.mu.Lock()
	names := w.drift
	w.drift = map[string]bool{}
	w.mu.Unlock()
	ok := true
	for name := range names {
		if err := w.restore(ctx, name); err != nil {
			w.o.log.Error(err, "Template not restored; retrying", "template", name)
			w.mu.Lock()
			w.drift[name] = true
			w.mu.Unlock()
			ok = false
		}
	}
	return ok
}

// restore writes the Template name again where it is one of this
// operator's kinds' and differs from what was written last: deleted, its
// status edited, its mark removed, or its spec edited (a new generation,
// which the conditions then observe).
func (w *templateWriter) restore(ctx context.Context, name string) error {
	prev := w.last[name]
	if prev == nil || !prev.ours || !w.serves(prev.status.Package, name) {
		return nil
	}
	item, exists, err := w.store.GetByKey(name)
	if err != nil {
		return err
	}
	live, _ := item.(*unstructured.Unstructured)
	gen := int64(1)
	if exists && live != nil {
		if live.GetResourceVersion() == prev.rv {
			return nil // what was written last, or a change not yet seen
		}
		gen = live.GetGeneration()
		mark := live.GetAnnotations()[TemplatesAnnotation]
		if mark != "" && mark != w.o.TemplatesMark() {
			// Another operator's templates serve the kind: it is theirs
			// until this one's state of the kind changes (writeReport).
			prev.ours, prev.taken = false, true
			return nil
		}
		if gen == prev.gen && mark != "" && sameJSON(statusOf(live), prev.status) {
			prev.rv = live.GetResourceVersion()
			return nil
		}
		if mark != "" && lastStatusWriter(live) == apply.DefaultFieldManager {
			// Another cueop of the same templates wrote it (a replica):
			// take its status as the one written last, never fight it.
			w.last[name] = &liveTemplate{status: statusOf(live), gen: gen, rv: live.GetResourceVersion(), ours: true}
			return nil
		}
	}
	next := observed(prev.status, gen)
	rv, err := w.write(ctx, name, next, !exists || live.GetAnnotations()[TemplatesAnnotation] != w.o.TemplatesMark())
	if err != nil {
		return err
	}
	if rv != prev.rv { // else the watch was behind this writer's own last write
		w.o.log.Info("Template changed by another writer; its status is written again", "template", name)
	}
	w.last[name] = &liveTemplate{status: next, gen: gen, rv: rv, ours: true}
	return nil
}

// serves tells whether name is the Template of pkg and pkg is in the
// templates of the last reload.
func (w *templateWriter) serves(pkg, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current[pkg] && w.names[pkg] == name
}

// statusOf is the status of a Template as read; empty where cueop did not
// write it.
func statusOf(item *unstructured.Unstructured) *templateState {
	st := &templateState{}
	if raw, ok := item.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, st) // a status cueop did not write is written anew
	}
	return st
}

// lastStatusWriter is the field manager that wrote the status of item
// last; one that is not cueop wins a tie (times are in seconds).
func lastStatusWriter(item *unstructured.Unstructured) string {
	var last string
	var at time.Time
	for _, f := range item.GetManagedFields() {
		if f.Subresource != "status" || f.Time == nil {
			continue
		}
		t := f.Time.Time
		if last == "" || t.After(at) || t.Equal(at) && f.Manager != apply.DefaultFieldManager {
			last, at = f.Manager, t
		}
	}
	return last
}

// observed is s with every condition observing generation gen.
func observed(s *templateState, gen int64) *templateState {
	n := *s
	n.Conditions = append(n.Conditions[:0:0], s.Conditions...)
	for i := range n.Conditions {
		n.Conditions[i].ObservedGeneration = gen
	}
	return &n
}

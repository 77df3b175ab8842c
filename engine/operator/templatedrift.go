package operator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/wellknown"
)

// A Template is the operator's: an edit of its status or spec by anyone
// else, or its deletion, is undone within seconds (the writer watches the
// Templates and writes the status it last wrote again, at the object's
// generation), as long as its kind is in the templates. A Template of a
// kind removed from the templates is left to the administrator, who may
// delete it for good.
//
// A Template is written by the operator holding its kind's CRD
// (holder.go): the instance the CRD names (wellknown.AnnotationOperator), and of its
// operators the one whose templates applied it last (the CRD's
// wellknown.AnnotationTemplates); while there is no CRD, or it names nobody, by
// the operators whose templates have the kind. Only administrators and
// operators may write a CRD, so that who writes a Template cannot be
// changed by whoever may write Templates. The Template's own
// wellknown.AnnotationTemplates (its mark) says which templates wrote it, for
// people and for removals (an operator marks removed, or broken by a load
// that failed, only the Templates of its own templates); it decides
// nothing: a changed mark is put back with the status. The status is the
// operator's alone: one that differs from what the operator wrote last is
// written again whoever wrote it (the field manager cueop included, which
// anyone who may patch the status may name), a few times a minute at most
// (restoreBudget), saying so in the log and in
// cueop_template_restores_total{template,result}.

// TemplatesMark is the value of wellknown.AnnotationTemplates this operator writes.
func (o *Operator) TemplatesMark() string { return templatesMark(o.opts.Templates) }

// templatesMark is the mark of the templates directory dir: its absolute
// path.
func templatesMark(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// watchTemplates starts the informer that tells the writer of every change
// to a Template (drifted); once, after the CRD serves.
func (w *templateWriter) watchTemplates(ctx context.Context) error {
	if w.watching {
		return nil
	}
	dc, err := dynamic.NewForConfigAndClient(w.rest, w.http)
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
			w.log.Error(err, "Template not restored; retrying", "template", name)
			w.mu.Lock()
			w.drift[name] = true
			w.mu.Unlock()
			ok = false
		}
	}
	return ok
}

// restore writes the Template name again where it is one of this
// operator's kinds', this operator holds it (holds), and its status
// differs, by content, from what was written last: deleted, its status
// edited (whatever field manager wrote it: a status patched with
// --field-manager=cueop is no more this operator's than any other), its
// mark removed or changed, or its spec edited (a new generation, which the
// conditions then observe). Restores are bounded (restoreBudget): a writer
// that keeps changing a Template is not fought without end.
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
		if gen == prev.gen && live.GetAnnotations()[wellknown.AnnotationTemplates] == w.mark && sameStatus(live, prev.status) {
			prev.rv = live.GetResourceVersion()
			return nil
		}
	}
	if held, err := w.holds(ctx, name); err != nil {
		return err
	} else if !held {
		w.leave(name, prev)
		return nil
	}
	b, now := w.budget(name), time.Now()
	if wait := b.take(now); wait > 0 {
		if w.metrics != nil {
			w.metrics.templateRestore(name, "held")
		}
		if !now.Before(b.heldUntil) { // once per hold: one log line, one wake-up at its end
			b.heldUntil = now.Add(wait)
			w.log.Info("Template keeps being changed by another writer; it is left as it is for a while, then written again",
				"template", name, "restores", templateRestoreBurst, "within", templateRestoreWindow.String(), "retryIn", wait.Round(time.Second).String())
			time.AfterFunc(wait, func() { w.drifted(name) })
		}
		return nil
	}
	next := observed(prev.status, gen)
	rv, err := w.write(ctx, name, next, !exists || live.GetAnnotations()[wellknown.AnnotationTemplates] != w.mark)
	if err != nil {
		return err
	}
	if rv != prev.rv { // else the watch was behind this writer's own last write
		if w.metrics != nil {
			w.metrics.templateRestore(name, "restored")
		}
		writer := "" // deleted
		if live != nil {
			writer = lastStatusWriter(live)
		}
		w.log.Info("Template changed by another writer; its status is written again", "template", name, "statusWriter", writer)
	}
	w.last[name] = &liveTemplate{status: next, gen: gen, rv: rv, ours: true}
	return nil
}

// Restores of one Template: at most templateRestoreBurst within
// templateRestoreWindow; beyond, the Template is left until the window
// ends (a write war with another writer costs a few writes a minute).
const (
	templateRestoreBurst  = 5
	templateRestoreWindow = time.Minute
)

// restoreBudget is the times of a Template's recent restores, and the end
// of the last hold, when a wake-up is due.
type restoreBudget struct {
	at        []time.Time
	heldUntil time.Time
}

// budget is name's restore budget; owned by run.
func (w *templateWriter) budget(name string) *restoreBudget {
	if w.restores == nil {
		w.restores = map[string]*restoreBudget{}
	}
	b := w.restores[name]
	if b == nil {
		b = &restoreBudget{}
		w.restores[name] = b
	}
	return b
}

// take counts a restore at now and answers 0, or, when the budget is
// spent, how long until it is not.
func (b *restoreBudget) take(now time.Time) time.Duration {
	kept := b.at[:0]
	for _, t := range b.at {
		if now.Sub(t) < templateRestoreWindow {
			kept = append(kept, t)
		}
	}
	b.at = kept
	if len(b.at) >= templateRestoreBurst {
		return templateRestoreWindow - now.Sub(b.at[0])
	}
	b.at = append(b.at, now)
	return 0
}

// sameStatus tells whether live's status is, as JSON, status: a field the
// operator did not write, or one written otherwise, is a difference.
func sameStatus(live *unstructured.Unstructured, status *templateState) bool {
	var a, b any
	x, err1 := json.Marshal(live.Object["status"])
	y, err2 := json.Marshal(status)
	if err1 != nil || err2 != nil || json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// holds tells whether this operator writes the Template name (named by
// its kind's CRD name): the CRD names this operator's instance, or none,
// and was applied last from this operator's templates, or from unknown
// ones; or there is no CRD.
func (w *templateWriter) holds(ctx context.Context, name string) (bool, error) {
	instance, templates, found, err := w.holderOf(ctx, name) // holder.go
	if err != nil || !found {
		return err == nil, err
	}
	if instance != "" && instance != w.instance {
		return false, nil
	}
	return templates == "" || templates == w.mark, nil
}

// leave leaves the Template name, which another operator holds, until
// this one's state of its kind changes (writeReport asks again).
func (w *templateWriter) leave(name string, prev *liveTemplate) {
	if prev != nil && !prev.ours {
		return
	}
	w.log.Info("Template left to the operator holding its kind's CRD", "template", name, "instance", w.instance)
	if prev == nil {
		w.last[name] = &liveTemplate{status: &templateState{}, gen: 1}
		return
	}
	prev.ours = false
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
// last, for the log; one that is not cueop wins a tie (times are in
// seconds).
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

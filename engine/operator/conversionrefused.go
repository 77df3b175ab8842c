package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/engine/wellknown"
)

// conversionFieldManager writes a CR's wellknown.ConditionConvertible,
// beside the reconciler's conditions.
const conversionFieldManager = "cueop-conversion"

// conversionReports turns the webhook's refusals of a CR into its
// Convertible condition and an Event, off the review's goroutine: a review
// only queues them (at most reportQueue, the rest dropped and logged; the
// next conversion of the CR reports it again). It writes only when the
// CR's condition differs from what it would write.
type conversionReports struct {
	client   client.Client
	reader   client.Reader     // the CR as the API server shows it (uncached)
	reg      *webhook.Registry // the converters that check it
	recorder record.EventRecorder
	log      logr.Logger
	queue    chan conversionReport

	mu      sync.Mutex
	written map[types.UID]string // per CR, the refusal last written
}

type conversionReport struct {
	obj *unstructured.Unstructured
	to  string // the version the review converted it to
	msg string // "" removes the condition
}

const reportQueue = 64

func newConversionReports(mgr manager.Manager, reg *webhook.Registry, log logr.Logger) *conversionReports {
	return &conversionReports{client: mgr.GetClient(), reader: mgr.GetAPIReader(), reg: reg, recorder: mgr.GetEventRecorderFor("cueop"), log: log,
		queue: make(chan conversionReport, reportQueue)}
}

// report is webhook.Handler.Report. The condition names one conversion
// (`conversion v1 to v2: ...`): it is removed only when that conversion
// succeeds, and a refusal of another is not written while it stands. A
// kind served at versions of which one holds the fields and another does
// not converts the CR to both at every write: were each to set and remove
// the condition in turn, each write would bring the next.
func (r *conversionReports) report(obj *unstructured.Unstructured, to string, err error) {
	var tooLarge *convert.AnnotationTooLargeError
	refused := errors.As(err, &tooLarge)
	if !refused && err != nil {
		return // another refusal: the render reports the CR's spec
	}
	cur := findCondition(obj, wellknown.ConditionConvertible)
	standing := cur != nil && cur["status"] == string(metav1.ConditionFalse) && cur["reason"] == wellknown.ReasonAnnotationTooLarge
	curMsg, _ := cur["message"].(string)
	names := strings.Contains(curMsg, fmt.Sprintf("conversion %s to %s: ", obj.GroupVersionKind().Version, to))
	msg := ""
	if refused {
		msg = err.Error()
		if standing && (curMsg == msg || !names) || r.lastWritten(obj.GetUID()) == msg {
			return
		}
	} else if !standing || !names {
		return
	}
	select {
	case r.queue <- conversionReport{obj: obj, to: to, msg: msg}:
	default:
		r.log.Info("conversion refusal not reported: too many at once; the next conversion of the CR reports it", "cr", obj.GetNamespace()+"/"+obj.GetName())
	}
}

// NeedLeaderElection: every replica answers conversions.
func (r *conversionReports) NeedLeaderElection() bool { return false }

// Start writes the reports queued until ctx ends.
func (r *conversionReports) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case rep := <-r.queue:
			err := r.write(ctx, rep)
			switch {
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				r.log.Info("conversion refusal not reported: the CR changed since its review; its next conversion reports it", "cr", rep.obj.GetNamespace()+"/"+rep.obj.GetName())
			case err != nil:
				r.log.Error(err, "conversion refusal not reported", "cr", rep.obj.GetNamespace()+"/"+rep.obj.GetName())
			}
		}
	}
}

// write applies the Convertible condition of rep to the CR, as the API
// server shows it: a review's text is anyone's who reaches the webhook
// (it may name any CR), so it is only a hint. The CR is read from the API
// server at the version the review held it at, must have the review's
// uid, and is converted again to the review's target version; the
// condition written (or removed) is what that conversion says, with the
// live CR's uid and resourceVersion as preconditions. A CR that converts
// and has no standing condition gets nothing, whatever the review said.
func (r *conversionReports) write(ctx context.Context, rep conversionReport) error {
	live, msg, err := r.recheck(ctx, rep)
	if err != nil || live == nil {
		return err
	}
	cur := findCondition(live, wellknown.ConditionConvertible)
	standing := cur != nil && cur["status"] == string(metav1.ConditionFalse) && cur["reason"] == wellknown.ReasonAnnotationTooLarge
	curMsg, _ := cur["message"].(string)
	names := strings.Contains(curMsg, fmt.Sprintf("conversion %s to %s: ", live.GroupVersionKind().Version, rep.to))
	if msg == "" && (!standing || !names) || msg != "" && standing && curMsg == msg {
		r.wrote(live.GetUID(), msg)
		return nil
	}
	return r.apply(ctx, live, msg)
}

// apply writes the Convertible condition of msg (none when empty) to the
// CR's status, as obj holds it (its uid and resourceVersion are
// preconditions: a CR deleted and created again under its name, or
// changed since, is left alone), and its Event.
func (r *conversionReports) apply(ctx context.Context, live *unstructured.Unstructured, msg string) error {
	md := map[string]any{"name": live.GetName(), "namespace": live.GetNamespace()}
	if uid := live.GetUID(); uid != "" {
		md["uid"] = string(uid)
	}
	if rv := live.GetResourceVersion(); rv != "" {
		md["resourceVersion"] = rv
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": live.GetAPIVersion(), "kind": live.GetKind(), "metadata": md,
	}}
	if msg != "" {
		obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": wellknown.ConditionConvertible, "status": string(metav1.ConditionFalse), "reason": wellknown.ReasonAnnotationTooLarge,
			"message": msg, "observedGeneration": live.GetGeneration(),
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}}
	}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(conversionFieldManager), client.ForceOwnership); err != nil {
		return err
	}
	r.wrote(live.GetUID(), msg)
	if msg != "" {
		r.recorder.Event(live, corev1.EventTypeWarning, wellknown.ReasonAnnotationTooLarge, msg)
	}
	return nil
}

// recheck reads the CR rep names from the API server, at the version the
// review held it at, and converts it to the review's target version with
// the kind's converter: msg is the refusal to write ("" when it
// converts). live is nil when there is nothing to write: the CR is gone,
// is another (its uid differs from the review's), or fails to convert for
// another reason (its render reports its spec).
func (r *conversionReports) recheck(ctx context.Context, rep conversionReport) (live *unstructured.Unstructured, msg string, _ error) {
	gvk := rep.obj.GroupVersionKind()
	conv, ok := r.reg.Get(gvk.GroupKind())
	if !ok || rep.obj.GetName() == "" || rep.to == "" {
		return nil, "", nil
	}
	live = &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: rep.obj.GetNamespace(), Name: rep.obj.GetName()}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		return nil, "", err
	}
	if live.GetUID() != rep.obj.GetUID() {
		r.log.V(1).Info("conversion refusal not reported: the review's object is not the CR of its name", "cr", live.GetNamespace()+"/"+live.GetName())
		return nil, "", nil
	}
	in := live.DeepCopy()
	in.SetManagedFields(nil)
	var err error
	if cc, ok := conv.(webhook.ContextConverter); ok {
		_, err = cc.ConvertContext(ctx, in, rep.to)
	} else {
		_, err = conv.Convert(in, rep.to)
	}
	var tooLarge *convert.AnnotationTooLargeError
	switch {
	case err == nil:
		return live, "", nil
	case errors.As(err, &tooLarge):
		return live, err.Error(), nil
	default:
		return nil, "", nil
	}
}

// wrote remembers msg as the refusal last written to the CR of uid (""
// when its condition was removed). The objects of some reviews do not hold
// the CR's status as it is (the API server converts objects of its own
// writes too): a refusal already written is not written again from them,
// each write bringing another such review.
func (r *conversionReports) wrote(uid types.UID, msg string) {
	if uid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if msg == "" {
		delete(r.written, uid)
		return
	}
	if r.written == nil {
		r.written = map[types.UID]string{}
	}
	r.written[uid] = msg
}

// lastWritten is the refusal last written to the CR of uid, or "".
func (r *conversionReports) lastWritten(uid types.UID) string {
	if uid == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[uid]
}

// findCondition is the condition of type typ in obj's status, or nil.
func findCondition(obj *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

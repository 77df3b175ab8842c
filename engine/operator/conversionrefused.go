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
)

// The condition the conversion webhook sets False on a CR it cannot
// convert for a reason of the CR itself: its annotation of the fields the
// other version cannot hold would not fit in metadata.annotations
// (convert.AnnotationTooLargeError). It is written by its own field
// manager, beside the reconciler's conditions, with a Warning Event of the
// same reason, and removed once the CR converts again.
const (
	ConditionConvertible     = "Convertible"
	ReasonAnnotationTooLarge = "AnnotationTooLarge"
	conversionFieldManager   = "cueop-conversion"
)

// conversionReports turns the webhook's refusals of a CR into its
// Convertible condition and an Event, off the review's goroutine: a review
// only queues them (at most reportQueue, the rest dropped and logged; the
// next conversion of the CR reports it again). It writes only when the
// CR's condition differs from what it would write.
type conversionReports struct {
	client   client.Client
	recorder record.EventRecorder
	log      logr.Logger
	queue    chan conversionReport

	mu      sync.Mutex
	written map[types.UID]string // per CR, the refusal last written
}

type conversionReport struct {
	obj *unstructured.Unstructured
	msg string // "" removes the condition
}

const reportQueue = 64

func newConversionReports(mgr manager.Manager, log logr.Logger) *conversionReports {
	return &conversionReports{client: mgr.GetClient(), recorder: mgr.GetEventRecorderFor("cueop"), log: log,
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
	cur := findCondition(obj, ConditionConvertible)
	standing := cur != nil && cur["status"] == string(metav1.ConditionFalse) && cur["reason"] == ReasonAnnotationTooLarge
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
	case r.queue <- conversionReport{obj: obj, msg: msg}:
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

// write applies the Convertible condition of rep (none when its message is
// empty) to the CR's status, at the version the review held it at. It
// writes only the CR the review held, as the review held it (its uid and
// resourceVersion are preconditions): a CR deleted and created again
// under its name, or changed since, is left alone, and its next
// conversion reports it again.
func (r *conversionReports) write(ctx context.Context, rep conversionReport) error {
	md := map[string]any{"name": rep.obj.GetName(), "namespace": rep.obj.GetNamespace()}
	if uid := rep.obj.GetUID(); uid != "" {
		md["uid"] = string(uid)
	}
	if rv := rep.obj.GetResourceVersion(); rv != "" {
		md["resourceVersion"] = rv
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rep.obj.GetAPIVersion(), "kind": rep.obj.GetKind(), "metadata": md,
	}}
	if rep.msg != "" {
		obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": ConditionConvertible, "status": string(metav1.ConditionFalse), "reason": ReasonAnnotationTooLarge,
			"message": rep.msg, "observedGeneration": rep.obj.GetGeneration(),
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}}
	}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(conversionFieldManager), client.ForceOwnership); err != nil {
		return err
	}
	r.wrote(rep.obj.GetUID(), rep.msg)
	if rep.msg != "" {
		r.recorder.Event(rep.obj, corev1.EventTypeWarning, ReasonAnnotationTooLarge, rep.msg)
	}
	return nil
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

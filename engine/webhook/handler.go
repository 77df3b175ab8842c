package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Path is where the conversion endpoint is served.
const Path = "/convert"

// Handler answers ConversionReviews (apiextensions.k8s.io/v1) with the
// converters of Registry, within Limits. A request any of whose objects
// fails to convert gets a Failed response naming the object (Kind ns/name)
// and the reason; the API server passes that message on to its client. A
// ConversionResponse has one result for all its objects, and the API
// server takes a response only with every object converted: one object
// that fails fails the review.
type Handler struct {
	Registry *Registry
	Log      logr.Logger
	// Limits bound a review's body, objects, time and the reviews served
	// at once (limits.go).
	Limits Limits
	// Observe, when set, is told of each review answered (Reviewed).
	// The API server sends one for every write of a CR to each version it
	// serves besides the storage version (its watch cache of that version),
	// so this is the webhook's share of a write's cost.
	Observe func(Reviewed)
	// Report, when set, is told of each object a converter of the
	// Registry took: the object as the review holds it but for its
	// metadata.managedFields (slim.go), the version it
	// was converted to and the error of its conversion (nil when it
	// converted). It must return at once.
	Report func(obj *unstructured.Unstructured, to string, err error)
	// Loaded, when set, is closed once the templates have been loaded for
	// the first time. Until then a review of a kind with no converter is
	// held (at most MaxHold, and while its caller waits) rather than
	// refused: a restarted operator answers as soon as its templates have
	// compiled, and the API server's watch cache of another version does
	// not fail on every CR written meanwhile.
	Loaded <-chan struct{}

	held      atomic.Int64  // reviews held now
	reading   atomic.Int64  // bytes of the bodies read or held now (limits.go)
	slots     chan struct{} // reviews read and converted now (limits.go)
	slotsOnce sync.Once
}

// MaxHold bounds the hold of a review that waits for the first load of
// the templates, under the API server's timeout of a conversion webhook
// call (30 s).
const MaxHold = 20 * time.Second

// maxHeld bounds the reviews held at once: a review's text is anyone's who
// reaches the port.
const maxHeld = 64

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		refuse(w, r, http.StatusMethodNotAllowed, "conversion review: want POST")
		return
	}
	limit := h.Limits.maxBytes()
	if r.ContentLength > limit {
		refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("conversion review: body of %d bytes over the webhook's limit of %d", r.ContentLength, limit))
		return
	}
	// The body is read before the review takes a slot, within
	// Limits.BodyTime: a client that sends it slowly or never holds a
	// connection for that long at most, and no slot.
	body, release, err := h.readBody(w, r, limit, h.Limits.bodyTime()) // limits.go
	defer release()
	if err != nil {
		refuseUnread(w, r, err, limit)
		return
	}
	requestRead(r.Context()) // server.go: the request came whole within RequestTime
	s := h.acquire(r.Context())
	if s == nil {
		h.busy(w, r)
		return
	}
	defer s.free()
	rr, err := decodeReview(body, h.Limits.maxObjects()) // envelope.go: the objects stay in body
	if err == nil && !rr.hasRequest {
		err = errors.New("no request")
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("conversion review: bad request: %v", err), http.StatusBadRequest)
		return
	}
	h.answer(w, r, s, rr)
}

// refuseUnread answers a review whose body was not read (err): over
// limit, refused for the bytes being read already (to retry), or not
// read whole.
func refuseUnread(w http.ResponseWriter, r *http.Request, err error, limit int64) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("conversion review: body over the webhook's limit of %d bytes", limit))
	case errors.Is(err, errReading):
		w.Header().Set("Retry-After", "1")
		refuse(w, r, http.StatusTooManyRequests, "conversion review: refused: "+err.Error()+"; retry")
	default:
		refuse(w, r, http.StatusBadRequest, fmt.Sprintf("conversion review: body not read: %v", err))
	}
}

// answer converts the review rr, holding the slot s, and writes its
// answer: the converted objects, or a Failed response naming why.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, s *slot, rr *reviewRequest) {
	converted, err := h.review(context.WithValue(r.Context(), slotKey{}, s), rr)
	// The slot is held until the answer is written: within WriteTime, so
	// that a client that reads it slowly or never does not keep it.
	defer writeWithin(w, h.Limits.writeTime())()
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		h.writeFailure(w, rr, err)
		return
	}
	if _, err := w.Write(appendReview(make([]byte, 0, 256+sumLen(converted)), rr, converted)); err != nil {
		h.Log.Error(err, "conversion review: write response")
	}
}

// writeFailure answers the review rr with a Failed response whose message
// is err's.
func (h *Handler) writeFailure(w http.ResponseWriter, rr *reviewRequest, err error) {
	h.Log.Info("conversion refused", "to", rr.desired, "error", err.Error())
	review := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: rr.apiVersion, Kind: rr.kind},
		Response: &apiextensionsv1.ConversionResponse{UID: types.UID(rr.uid), Result: metav1.Status{
			Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonBadRequest,
		}},
	}
	if err := json.NewEncoder(w).Encode(review); err != nil {
		h.Log.Error(err, "conversion review: write response")
	}
}

// writeWithin sets a write deadline of d from now on w's connection (over
// HTTP/2, its stream), and returns what clears it once the answer is
// written: the server sets none of its own, and a keep-alive
// connection's next answer must not find it past.
func writeWithin(w http.ResponseWriter, d time.Duration) (clear func()) {
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Now().Add(d)); err != nil {
		return func() {} // a writer without deadlines (a test's recorder)
	}
	return func() {
		if err := rc.Flush(); err == nil {
			_ = rc.SetWriteDeadline(time.Time{})
		}
	}
}

func sumLen(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}

// review converts the objects of rr to its desired version. It stops
// when ctx ends (the caller gone: nobody reads the rest) or after
// Limits.MaxTime.
func (h *Handler) review(ctx context.Context, rr *reviewRequest) ([][]byte, error) {
	start := time.Now()
	out, kind, from, err := h.convertAll(ctx, rr.desired, rr.objects, rr.count)
	if h.Observe != nil {
		r := Reviewed{Kind: kind, Objects: rr.count, Took: time.Since(start), Failed: err != nil}
		if kind != "" && err == nil {
			r.From, r.To = from, rr.desired[strings.LastIndexByte(rr.desired, '/')+1:]
		}
		h.Observe(r)
	}
	return out, err
}

// convertAll converts objects, count in the review, to the version
// desired; kind is that of the first object a converter of the Registry
// took ("" when none did).
func (h *Handler) convertAll(ctx context.Context, desired string, objects [][]byte, count int) (_ [][]byte, kind, from string, _ error) {
	to, err := schema.ParseGroupVersion(desired)
	if err != nil {
		return nil, "", "", fmt.Errorf("desired api version %q: %w", desired, err)
	}
	if n, limit := count, h.Limits.maxObjects(); n > limit || len(objects) != n {
		return nil, "", "", fmt.Errorf("conversion to %s: review of %d objects over the webhook's limit of %d (a list at this version needs smaller pages)", desired, n, limit)
	}
	out := make([][]byte, len(objects))
	deadline := time.Now().Add(h.Limits.maxTime())
	for i, raw := range objects {
		err := ctx.Err()
		if err == nil && time.Now().After(deadline) {
			err = fmt.Errorf("over the webhook's %s for one review", h.Limits.maxTime())
		}
		if err != nil {
			return nil, kind, "", fmt.Errorf("conversion to %s: stopped at object %d of %d: %w", desired, i+1, len(objects), err)
		}
		b, k, v, err := h.convert(ctx, raw, to)
		if kind == "" {
			kind, from = k, v
		}
		if err != nil {
			return nil, kind, "", err
		}
		out[i] = b
	}
	return out, kind, from, nil
}

// PartialConversion is a conversion error that comes with an object to
// answer with (engine/convert's IncompleteError): the object converted
// without what could not be carried, marked so that a write of it is
// refused. Answering it keeps one CR from failing every read and watch at
// the target version, as a failed object fails its whole review.
type PartialConversion interface {
	error
	Converted() *unstructured.Unstructured
}

// convert converts one object, given and returned as JSON, to version to.
// kind is the object's Kind.group when a converter of the Registry took
// it, from then the object's version.
func (h *Handler) convert(ctx context.Context, raw []byte, to schema.GroupVersion) (_ []byte, kind, from string, _ error) {
	obj, _, err := decodeSlim(raw) // slim.go
	if err != nil {
		return nil, "", "", fmt.Errorf("object: %w", err)
	}
	gvk := obj.GroupVersionKind()
	if gvk.Group != to.Group {
		return nil, "", "", fmt.Errorf("%s: conversion to %s: group %s differs", subject(obj), to, gvk.Group)
	}
	if gvk.Version == to.Version {
		// Not a review the API server sends; answered with the object
		// as decoded, nothing unread sent back.
		b, err := encodeSlim(obj)
		return b, "", "", err
	}
	c, ok := h.converter(ctx, gvk.GroupKind())
	if !ok {
		return nil, "", "", fmt.Errorf("%s: conversion to %s: no converter for kind %s (no template of it loaded)", subject(obj), to, gvk.GroupKind())
	}
	kind = gvk.GroupKind().String()
	conv, err := convertWith(ctx, c, obj, to.Version) // context.go
	reported := err
	var partial PartialConversion
	if errors.As(err, &partial) && partial.Converted() != nil {
		conv, err = partial.Converted(), nil // reported on the CR; its readers are not failed
	}
	var b []byte
	if err == nil {
		conv.SetAPIVersion(to.String())
		if b, err = encodeSlim(conv); err != nil && reported == nil {
			reported = err
		}
	}
	if h.Report != nil {
		h.Report(obj, to.Version, reported)
	}
	if err != nil {
		return nil, kind, "", fmt.Errorf("%s: conversion from %s to %s: %w", subject(obj), gvk.Version, to.Version, err)
	}
	return b, kind, gvk.Version, nil
}

// Reviewed is what Handler.Observe is told of one review answered.
type Reviewed struct {
	// Kind is the Kind.group whose converter took its objects ("" when
	// none did: a review's text is anyone's who reaches the port, so only
	// a kind of the Registry is named).
	Kind string
	// From and To are the versions its first object was converted from
	// and to, set only when the review converted (versions the kind's
	// converter knows, not any text a caller sent). From the storage
	// version, a review of one object is the API server decoding a write
	// for its watch cache of To (or a get at To), of several a list at
	// To; to the storage version, a write made at From.
	From, To string
	Objects  int
	Took     time.Duration
	Failed   bool
}

// converter is gk's converter. Before the first load of the templates
// (Loaded open) a review of a kind with none is held until one is set, the
// load ends, the caller leaves or MaxHold passes; at most maxHeld reviews
// are held at once, the others are answered at once.
func (h *Handler) converter(ctx context.Context, gk schema.GroupKind) (Converter, bool) {
	c, ok := h.Registry.Get(gk)
	if ok || h.Loaded == nil {
		return c, ok
	}
	select {
	case <-h.Loaded:
		return h.Registry.Get(gk)
	default:
	}
	if h.held.Add(1) > maxHeld {
		h.held.Add(-1)
		return nil, false
	}
	defer h.held.Add(-1)
	s := slotOf(ctx) // a held review converts nothing: its slot is free meanwhile
	s.free()
	defer s.take(ctx)
	t := time.NewTimer(MaxHold)
	defer t.Stop()
	for {
		changed := h.Registry.Changed()
		if c, ok := h.Registry.Get(gk); ok {
			return c, true
		}
		select {
		case <-h.Loaded:
			return h.Registry.Get(gk)
		case <-changed:
		case <-ctx.Done():
			return nil, false
		case <-t.C:
			return nil, false
		}
	}
}

// subject names obj: Kind ns/name, or Kind name for a cluster-scoped one.
func subject(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

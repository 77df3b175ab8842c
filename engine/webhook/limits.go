package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Limits bound what a review may cost the operator: the endpoint answers
// whoever reaches its port, and the API server presents no client
// certificate to a conversion webhook. A zero field takes its default.
type Limits struct {
	// MaxBytes bounds a review's body (413 beyond it); DefaultMaxBytes
	// when zero.
	MaxBytes int64
	// MaxObjects bounds the objects of one review (a Failed response
	// beyond it); DefaultMaxObjects when zero.
	MaxObjects int
	// MaxConcurrent bounds the reviews converted at once (a review's body
	// is read before it takes one of them, within BodyTime);
	// DefaultMaxConcurrent when zero. A review beyond it waits up to
	// DefaultWait for a slot, then is refused with 429 and Retry-After,
	// which the API server's client retries.
	MaxConcurrent int
	// Wait is how long a review waits for a slot; DefaultWait when zero.
	Wait time.Duration
	// MaxTime bounds the conversion of one review; MaxReviewTime when
	// zero.
	MaxTime time.Duration
	// BodyTime bounds the read of a review's body, which is read before
	// the review takes a slot (a client that sends its body slowly or
	// never holds no slot); DefaultBodyTime when zero. A body not read in
	// time ends its connection.
	BodyTime time.Duration
	// WriteTime bounds the write of a review's answer (its slot is held
	// until it is written: a client that reads it slowly or never holds
	// the slot that long at most); DefaultWriteTime when zero. An answer
	// not written in time ends its connection (over HTTP/2, its stream).
	WriteTime time.Duration
	// MaxConnections bounds the connections open at once (Server);
	// DefaultMaxConnections when zero.
	MaxConnections int
	// MaxConnectionsPerSource bounds those from one source address
	// (Server); DefaultMaxConnectionsPerSource when zero.
	MaxConnectionsPerSource int
}

// Defaults of Limits. A list page of 500 CRs of 16 KiB is 8 MiB; 5,000
// objects convert well within the API server's 30 s timeout of a
// conversion webhook call (docs/benchmarks.md has the cost per object).
const (
	DefaultMaxBytes      = 8 << 20
	DefaultMaxObjects    = 5000
	DefaultMaxConcurrent = 4
	DefaultWait          = time.Second
	DefaultBodyTime      = 10 * time.Second
	DefaultWriteTime     = 10 * time.Second
)

// MaxReviewTime bounds the conversion of one review: the API server gives
// up on a conversion webhook call after 30 s, and nobody reads an answer
// after that.
const MaxReviewTime = 30 * time.Second

func (l Limits) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxBytes
}

func (l Limits) maxObjects() int {
	if l.MaxObjects > 0 {
		return l.MaxObjects
	}
	return DefaultMaxObjects
}

func (l Limits) maxConcurrent() int {
	if l.MaxConcurrent > 0 {
		return l.MaxConcurrent
	}
	return DefaultMaxConcurrent
}

func (l Limits) maxTime() time.Duration {
	if l.MaxTime > 0 {
		return l.MaxTime
	}
	return MaxReviewTime
}

func (l Limits) bodyTime() time.Duration {
	if l.BodyTime > 0 {
		return l.BodyTime
	}
	return DefaultBodyTime
}

// maxReading bounds the bytes of the bodies read or held at once: a body
// is read before its review takes a slot, so without it every connection
// could hold a whole body.
func (l Limits) writeTime() time.Duration {
	if l.WriteTime > 0 {
		return l.WriteTime
	}
	return DefaultWriteTime
}

func (l Limits) maxReading() int64 {
	return 2 * int64(l.maxConcurrent()+1) * l.maxBytes()
}

func (l Limits) wait() time.Duration {
	if l.Wait > 0 {
		return l.Wait
	}
	return DefaultWait
}

// slot is a review's share of Limits.MaxConcurrent, carried in its
// context: a review held for the first load frees it while it waits.
type slot struct {
	slots chan struct{}
	held  bool
}

type slotKey struct{}

// acquire takes one of the review slots, waiting up to Limits.Wait; nil
// when none freed (or the caller left).
func (h *Handler) acquire(ctx context.Context) *slot {
	h.slotsOnce.Do(func() { h.slots = make(chan struct{}, h.Limits.maxConcurrent()) })
	s := &slot{slots: h.slots, held: true}
	select {
	case h.slots <- struct{}{}:
		return s
	default:
	}
	t := time.NewTimer(h.Limits.wait())
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return s
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// free gives the slot back.
func (s *slot) free() {
	if s != nil && s.held {
		<-s.slots
		s.held = false
	}
}

// take takes a slot again, waiting for one while ctx lasts.
func (s *slot) take(ctx context.Context) {
	if s == nil || s.held {
		return
	}
	select {
	case s.slots <- struct{}{}:
		s.held = true
	case <-ctx.Done():
	}
}

// slotOf is the slot ctx carries, or nil.
func slotOf(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// busy answers a review refused for want of a slot.
func (h *Handler) busy(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("conversion review: refused: %d reviews are being converted (the webhook's limit of concurrent reviews); retry", h.Limits.maxConcurrent()))
}

// refuse answers a refused request and ends its connection: nothing more
// of its body is read (the server would otherwise wait for up to 256 KiB
// of it, from a client that may never send it, before answering or
// closing).
//
// Over HTTP/2 only the stream ends (its unread body is reset): the
// connection carries the API server's other reviews, and "Connection:
// close" would shut it down.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if r.ProtoMajor < 2 {
		w.Header().Set("Connection", "close")
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	http.Error(w, msg, code)
}

// errReading is a body refused for the bytes of the bodies read at once.
var errReading = errors.New("too many bytes of review bodies being read at once")

// initialBody is the most bytes a body's buffer starts with before any
// is read.
const initialBody = 511

// readBody reads r's body, at most limit bytes, within d, reserving its
// bytes from h's share of bodies read at once as they come (a client that
// sends slowly reserves little); release gives them back. The deadline is
// lifted once the body is read whole (the server's read of the
// connection after it must not cancel the review). A ResponseWriter that
// cannot set one reads without it.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, limit int64, d time.Duration) (body []byte, release func(), err error) {
	rc := http.NewResponseController(w)
	set := rc.SetReadDeadline(time.Now().Add(d)) == nil
	var reserved int64
	release = func() { h.reading.Add(-reserved) }
	max := h.Limits.maxReading()
	src := http.MaxBytesReader(w, r.Body, limit)
	// The buffer grows as bytes come, from a small start whatever the
	// Content-Length: a declared length is no reason to reserve; 160
	// clients declaring 8 MB and sending a byte would otherwise hold
	// every byte of maxReading, and refuse the API server's reviews.
	n := r.ContentLength
	if n < 0 || n > initialBody {
		n = initialBody
	}
	buf := make([]byte, 0, n+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		if grow := int64(cap(buf)) - reserved; grow > 0 {
			if h.reading.Add(grow) > max {
				h.reading.Add(-grow)
				return nil, release, errReading
			}
			reserved += grow
		}
		var k int
		k, err = src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, release, err
		}
	}
	if set {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return buf, release, nil
}

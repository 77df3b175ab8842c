package webhook

import (
	"context"
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
	// MaxConcurrent bounds the reviews read and converted at once;
	// DefaultMaxConcurrent when zero. A review beyond it waits up to
	// DefaultWait for a slot, then is refused with 429 and Retry-After,
	// which the API server's client retries.
	MaxConcurrent int
	// Wait is how long a review waits for a slot; DefaultWait when zero.
	Wait time.Duration
	// MaxTime bounds the conversion of one review; MaxReviewTime when
	// zero.
	MaxTime time.Duration
}

// Defaults of Limits. A list page of 500 CRs of 16 KiB is 8 MiB; 5,000
// objects are about 3 s of CUE at 600 µs each, under the API server's
// 30 s timeout of a conversion webhook call.
const (
	DefaultMaxBytes      = 8 << 20
	DefaultMaxObjects    = 5000
	DefaultMaxConcurrent = 4
	DefaultWait          = time.Second
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
func (h *Handler) busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, fmt.Sprintf("conversion review: refused: %d reviews are being converted (the webhook's limit of concurrent reviews); retry", h.Limits.maxConcurrent()),
		http.StatusTooManyRequests)
}

// readBody reads r's body, at most limit bytes, within d: a review holds
// its slot while its body is read, and a client that sends its body slowly
// or never would hold it for good. The deadline is lifted once the body is
// read whole (the server's read of the connection after it must not cancel
// the review); a body not read in time ends its connection. A
// ResponseWriter that cannot set one reads without it.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, d time.Duration) ([]byte, error) {
	rc := http.NewResponseController(w)
	set := rc.SetReadDeadline(time.Now().Add(d)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if set && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		w.Header().Set("Connection", "close")
	}
	return body, err
}

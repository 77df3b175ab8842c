package testkit

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// RoundTripFunc is a function as an http.RoundTripper.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Intercept is a copy of cfg whose requests go through f, which is handed
// the request and the transport that sends it on.
func Intercept(cfg *rest.Config, f func(req *http.Request, next http.RoundTripper) (*http.Response, error)) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return RoundTripFunc(func(req *http.Request) (*http.Response, error) { return f(req, rt) })
	})
	return cfg
}

// Request is one request a Requests saw.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string    // of a write, cut to 4 KiB
	At     time.Time // when it was answered
	Code   int       // the answer's status; 0 before the answer or on an error
}

// String is the request's method and path.
func (r Request) String() string { return r.Method + " " + r.Path }

// Write says whether the request may change the cluster: neither a GET, a
// HEAD nor an OPTIONS.
func (r Request) Write() bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// Watch says whether the request is a watch.
func (r Request) Watch() bool { return r.Query.Get("watch") == "true" }

// Refused says whether the request is a write the API server answered with
// an error status.
func (r Request) Refused() bool { return r.Write() && r.Code >= 400 }

// Resource is the last segment of the request's path: the resource of a
// list or a watch.
func (r Request) Resource() string { return path.Base(r.Path) }

// Requests records the requests of the clients whose transport it wraps, in
// the order they are sent: a request is recorded before it is sent (a test
// that sees its effect sees it counted), its answer when it comes.
type Requests struct {
	mu  sync.Mutex
	all []Request
}

// CountRequests is a copy of cfg whose requests the returned Requests
// records.
func CountRequests(cfg *rest.Config) (*rest.Config, *Requests) {
	r := &Requests{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(r.Wrap)
	return cfg, r
}

// Wrap is next with its requests recorded.
func (r *Requests) Wrap(next http.RoundTripper) http.RoundTripper {
	return RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		rec := Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Header: req.Header.Clone()}
		if rec.Write() {
			rec.Body = requestBody(req)
		}
		r.mu.Lock()
		i := len(r.all)
		r.all = append(r.all, rec)
		r.mu.Unlock()
		resp, err := next.RoundTrip(req)
		r.mu.Lock()
		r.all[i].At = time.Now()
		if err == nil {
			r.all[i].Code = resp.StatusCode
		}
		r.mu.Unlock()
		return resp, err
	})
}

// requestBody is the body of req, cut to 4 KiB, or "".
func requestBody(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	rc, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 4<<10))
	return string(b)
}

// All is every request recorded so far.
func (r *Requests) All() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.all...)
}

// Len is the number of requests recorded so far.
func (r *Requests) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// Where is the requests recorded so far for which keep says true.
func (r *Requests) Where(keep func(Request) bool) []Request {
	var out []Request
	for _, req := range r.All() {
		if keep(req) {
			out = append(out, req)
		}
	}
	return out
}

// Count is the number of requests recorded so far for which keep says
// true.
func (r *Requests) Count(keep func(Request) bool) int { return len(r.Where(keep)) }

// Writes is the writes recorded after the first n.
func (r *Requests) Writes(n int) []Request {
	w := r.Where(Request.Write)
	return w[min(n, len(w)):]
}

// WriteCount is the number of writes recorded so far.
func (r *Requests) WriteCount() int { return r.Count(Request.Write) }

// Reads is the number of requests recorded so far that are not writes.
func (r *Requests) Reads() int { return r.Count(func(req Request) bool { return !req.Write() }) }

// Answered is the number of requests answered with status code.
func (r *Requests) Answered(code int) int {
	return r.Count(func(req Request) bool { return req.Code == code })
}

// Strings is the method and path of each of reqs.
func Strings(reqs []Request) []string {
	out := make([]string, len(reqs))
	for i, req := range reqs {
		out[i] = req.String()
	}
	return out
}

// Bodies is the body of each of reqs.
func Bodies(reqs []Request) []string {
	out := make([]string, len(reqs))
	for i, req := range reqs {
		out[i] = req.Body
	}
	return out
}

// Cut cuts the clients whose transport it wraps off the API server while
// it is set, as a network partition or a crashed process would: each
// request fails at once.
type Cut struct{ atomic.Bool }

// Wrap is next, failing every request while c is set.
func (c *Cut) Wrap(next http.RoundTripper) http.RoundTripper {
	return RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if c.Load() {
			return nil, errors.New("replica cut off from the API server")
		}
		return next.RoundTrip(req)
	})
}

// Package harness holds what the benchmark driver and the baseline's tests
// share: a counting transport for an operator's rest.Config and CRD
// installation.
package harness

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Counts are the API requests an operator sent.
type Counts struct {
	// Reads are GET requests other than watches (gets and lists).
	Reads int64 `json:"reads"`
	// Watches are watch requests (GET ?watch=true).
	Watches int64 `json:"watches"`
	// Writes are POST, PUT, PATCH and DELETE requests.
	Writes int64 `json:"writes"`
	// WritesBy counts writes by "VERB resource[/subresource]", e.g.
	// "PATCH pods" or "PATCH redisclusters/status".
	WritesBy map[string]int64 `json:"writesBy"`
}

// Sub returns c - o.
func (c Counts) Sub(o Counts) Counts {
	d := Counts{Reads: c.Reads - o.Reads, Watches: c.Watches - o.Watches, Writes: c.Writes - o.Writes, WritesBy: map[string]int64{}}
	for k, v := range c.WritesBy {
		if n := v - o.WritesBy[k]; n != 0 {
			d.WritesBy[k] = n
		}
	}
	return d
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	s := Counts{Reads: c.Reads + o.Reads, Watches: c.Watches + o.Watches, Writes: c.Writes + o.Writes, WritesBy: map[string]int64{}}
	for _, m := range []map[string]int64{c.WritesBy, o.WritesBy} {
		for k, v := range m {
			s.WritesBy[k] += v
		}
	}
	return s
}

// Counter is an http.RoundTripper that counts requests.
type Counter struct {
	rt http.RoundTripper
	mu sync.Mutex
	c  Counts
}

// Count makes every client built from cfg count its requests in the
// returned Counter. It modifies cfg.
func Count(cfg *rest.Config) *Counter {
	ct := &Counter{c: Counts{WritesBy: map[string]int64{}}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &counting{rt: rt, c: ct}
	})
	return ct
}

// counting is one wrapped transport; every client of the config gets one,
// all counting into the same Counter.
type counting struct {
	rt http.RoundTripper
	c  *Counter
}

func (t *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.mu.Lock()
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		if req.URL.Query().Get("watch") == "true" {
			t.c.c.Watches++
		} else {
			t.c.c.Reads++
		}
	default:
		t.c.c.Writes++
		t.c.c.WritesBy[req.Method+" "+Resource(req.URL.Path)]++
	}
	t.c.mu.Unlock()
	return t.rt.RoundTrip(req)
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.c
	s.WritesBy = make(map[string]int64, len(c.c.WritesBy))
	for k, v := range c.c.WritesBy {
		s.WritesBy[k] = v
	}
	return s
}

// Resource names the resource (and subresource) of an API path:
// /api/v1/namespaces/ns/pods/p is "pods", /apis/g/v1/namespaces/ns/x/n/status
// is "x/status".
func Resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "namespaces"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// Bounds of the webhook's connections: whoever reaches the port may open
// them, and each costs a file and a TLS connection's buffers.
const (
	// DefaultMaxConnections bounds the connections open at once; those
	// beyond wait in the kernel's accept queue (no file, no memory of the
	// operator's) until one closes, or until an idle one is closed for
	// them.
	DefaultMaxConnections = 256
	// DefaultMaxConnectionsPerSource bounds the connections open at once
	// from one source address: one beyond is accepted and closed at once,
	// so that one client holds neither the bound nor the accept queue
	// that the API server's connections wait in.
	DefaultMaxConnectionsPerSource = 32
	// HeaderTime bounds a connection's TLS handshake and the read of a
	// request's headers.
	HeaderTime = 10 * time.Second
	// RequestTime bounds a new connection's TLS handshake and first
	// request's headers and body together, and a request's headers and
	// body after an idle keep-alive: a connection that has not sent them
	// by then is closed.
	RequestTime = 10 * time.Second
	// IdleTime bounds an idle keep-alive connection (the API server's
	// client keeps its connections for 90 s); when connections are scarce
	// (all MaxConnections open), the one idle longest is closed at once
	// for a new one.
	IdleTime = 90 * time.Second
)

// Server serves the conversion endpoint over TLS, as controller-runtime's
// webhook server does (it implements sigs.k8s.io/controller-runtime's
// webhook.Server), within bounds of its own: at most MaxConnections
// connections open (a listener that accepts no more until one closes, or
// closes an idle one for the next), at most MaxConnectionsPerSource of
// them from one address, RequestTime for a connection's handshake and a
// request's headers and body, IdleTime for an idle connection.
type Server struct {
	Host string
	Port int // 0 is 9443
	// TLS configures the listener (its certificates).
	TLS *tls.Config
	// MaxConnections bounds the connections open at once;
	// DefaultMaxConnections when zero.
	MaxConnections int
	// MaxConnectionsPerSource bounds the connections open at once from one
	// source address; DefaultMaxConnectionsPerSource when zero.
	MaxConnectionsPerSource int
	// RequestTime bounds a connection's handshake and request (see the
	// constant RequestTime, its default when zero).
	RequestTime time.Duration

	mux      *http.ServeMux
	muxOnce  sync.Once
	mu       sync.Mutex
	started  bool
	addr     string
	listener *limitListener
}

// NeedLeaderElection: every replica answers conversions.
func (s *Server) NeedLeaderElection() bool { return false }

// WebhookMux is the server's mux.
func (s *Server) WebhookMux() *http.ServeMux {
	s.muxOnce.Do(func() { s.mux = http.NewServeMux() })
	return s.mux
}

// Register serves hook at path.
func (s *Server) Register(path string, hook http.Handler) { s.WebhookMux().Handle(path, hook) }

// Open is the number of connections open now.
func (s *Server) Open() int64 {
	s.mu.Lock()
	l := s.listener
	s.mu.Unlock()
	if l == nil {
		return 0
	}
	return l.open.Load()
}

// Refused is the number of connections closed at once for their source's
// bound (MaxConnectionsPerSource), and Evicted the number of idle ones
// closed for a new connection, so far.
func (s *Server) Refused() int64 {
	return s.counter(func(l *limitListener) int64 { return l.refused.Load() })
}

// Evicted: see Refused.
func (s *Server) Evicted() int64 {
	return s.counter(func(l *limitListener) int64 { return l.evicted.Load() })
}

func (s *Server) counter(f func(*limitListener) int64) int64 {
	s.mu.Lock()
	l := s.listener
	s.mu.Unlock()
	if l == nil {
		return 0
	}
	return f(l)
}

// Accepted is the number of connections accepted so far.
func (s *Server) Accepted() int64 {
	s.mu.Lock()
	l := s.listener
	s.mu.Unlock()
	if l == nil {
		return 0
	}
	return l.accepted.Load()
}

// Addr is the address listened on once started ("" before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Listen makes the server's listener at Host:Port.
func (s *Server) listen() (net.Listener, error) {
	port := s.Port
	if port == 0 {
		port = 9443
	}
	l, err := net.Listen("tcp", net.JoinHostPort(s.Host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("conversion webhook: listen: %w", err)
	}
	return l, nil
}

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	l, err := s.listen()
	if err != nil {
		return err
	}
	srv, tl := s.serve(ctx, l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
	}()
	if err := srv.Serve(tl); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}

// serve makes the http.Server of s on l, and the TLS listener to serve.
func (s *Server) serve(ctx context.Context, l net.Listener) (*http.Server, net.Listener) {
	max := s.MaxConnections
	if max <= 0 {
		max = DefaultMaxConnections
	}
	perSource := s.MaxConnectionsPerSource
	if perSource <= 0 {
		perSource = DefaultMaxConnectionsPerSource
	}
	requestTime := s.RequestTime
	if requestTime <= 0 {
		requestTime = RequestTime
	}
	ll := &limitListener{Listener: l, sem: make(chan struct{}, max), done: make(chan struct{}),
		perSource: perSource, requestTime: requestTime, bySource: map[string]int{}, conns: map[*limitConn]struct{}{}}
	cfg := s.TLS.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	s.mu.Lock()
	s.started, s.addr, s.listener = true, l.Addr().String(), ll
	s.mu.Unlock()
	srv := NewHTTPServer(ctx, s.WebhookMux())
	srv.ConnState = connState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if lc := limitConnOf(c); lc != nil {
			return context.WithValue(ctx, connKey{}, lc)
		}
		return ctx
	}
	return srv, tls.NewListener(ll, cfg)
}

// NewHTTPServer is the http.Server of the conversion endpoint: HeaderTime
// for a connection's handshake and a request's headers, IdleTime for an
// idle connection; a review's body is bounded by the Handler
// (Limits.BodyTime).
func NewHTTPServer(ctx context.Context, h http.Handler) *http.Server {
	return &http.Server{
		BaseContext:       func(net.Listener) context.Context { return ctx },
		Handler:           h,
		ReadHeaderTimeout: HeaderTime,
		IdleTimeout:       IdleTime,
		MaxHeaderBytes:    64 << 10,
		// Clients that only open a connection (probes, scanners) end
		// their handshakes early: not worth a line each.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

// StartedChecker is healthy once the server listens.
func (s *Server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.started {
			return errors.New("conversion webhook server not started yet")
		}
		return nil
	}
}

// limitListener accepts at most cap(sem) connections open at once: a
// connection beyond takes the slot of the connection idle longest, closed
// for it, if one is, else waits until one closes (the kernel's accept
// queue holds the others, costing the process nothing). A connection from
// a source that has perSource open is closed as soon as accepted.
type limitListener struct {
	net.Listener
	sem         chan struct{}
	perSource   int
	requestTime time.Duration
	open        atomic.Int64
	accepted    atomic.Int64
	refused     atomic.Int64
	evicted     atomic.Int64
	done        chan struct{}
	once        sync.Once

	mu       sync.Mutex
	bySource map[string]int
	conns    map[*limitConn]struct{}
}

// scarceCheck is how often an Accept waiting for a slot looks for an idle
// connection to close.
const scarceCheck = 100 * time.Millisecond

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceOf(c)
		l.mu.Lock()
		full := l.bySource[src] >= l.perSource
		l.mu.Unlock()
		if full {
			_ = c.Close()
			l.refused.Add(1)
			continue
		}
		// A slot for it: one of an idle connection's if none is free, else
		// the next to close (the kernel's accept queue holds the others).
		if err := l.reserve(src); err != nil {
			_ = c.Close()
			return nil, err
		}
		l.mu.Lock()
		l.bySource[src]++
		lc := &limitConn{Conn: c, l: l, src: src, state: http.StateNew, since: time.Now()}
		l.conns[lc] = struct{}{}
		lc.arm()
		l.mu.Unlock()
		l.open.Add(1)
		l.accepted.Add(1)
		return lc, nil
	}
}

// reserve takes a slot for a connection from src, closing another
// source's connection while there is none (evictFor).
func (l *limitListener) reserve(src string) error {
	for {
		select {
		case l.sem <- struct{}{}:
			return nil
		default:
		}
		l.evictFor(src)
		select {
		case l.sem <- struct{}{}:
			return nil
		case <-l.done:
			return net.ErrClosed
		case <-time.After(scarceCheck):
		}
	}
}

// evictFor closes a connection for a new one from src when every slot is
// taken: one of the source holding the most connections, and only if it
// holds more than src does, so that a flood from many addresses closes
// its own connections, never those of a client holding fewer (the API
// server's keep-alive connections among them). Of that source, the
// connection idle longest, else the oldest (one stuck in a handshake or a
// slow request).
func (l *limitListener) evictFor(src string) {
	l.mu.Lock()
	busiest, most := "", l.bySource[src]
	for s, n := range l.bySource {
		if n > most {
			busiest, most = s, n
		}
	}
	var victim *limitConn
	if busiest != "" {
		for c := range l.conns {
			if c.src != busiest {
				continue
			}
			switch {
			case victim == nil:
				victim = c
			case c.state == http.StateIdle && victim.state != http.StateIdle:
				victim = c
			case c.state == http.StateIdle && victim.state == http.StateIdle && c.idleSince.Before(victim.idleSince):
				victim = c
			case c.state != http.StateIdle && victim.state != http.StateIdle && c.since.Before(victim.since):
				victim = c
			}
		}
	}
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		_ = victim.Close()
	}
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// sourceOf is the address c comes from, without its port.
func sourceOf(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

type limitConn struct {
	net.Conn
	l    *limitListener
	src  string
	once sync.Once

	// Guarded by l.mu.
	state     http.ConnState
	idleSince time.Time
	since     time.Time   // accepted
	deadline  *time.Timer // closes the connection at RequestTime
}

// arm starts the connection's RequestTime, unless it runs; l.mu held.
func (c *limitConn) arm() {
	if c.deadline == nil {
		c.deadline = time.AfterFunc(c.l.requestTime, func() { _ = c.Close() })
	}
}

// disarm stops it; l.mu held.
func (c *limitConn) disarm() {
	if c.deadline != nil {
		c.deadline.Stop()
		c.deadline = nil
	}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.disarm()
		delete(c.l.conns, c)
		if c.l.bySource[c.src]--; c.l.bySource[c.src] <= 0 {
			delete(c.l.bySource, c.src)
		}
		c.l.mu.Unlock()
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}

// limitConnOf is the limitConn under c (a TLS connection of the server's).
func limitConnOf(c net.Conn) *limitConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	lc, _ := c.(*limitConn)
	return lc
}

// connState follows each connection's state: idle between requests (it
// may be closed for a new connection when they are scarce), or reading
// a request, which must have come whole within RequestTime.
func connState(c net.Conn, state http.ConnState) {
	lc := limitConnOf(c)
	if lc == nil {
		return
	}
	lc.l.mu.Lock()
	defer lc.l.mu.Unlock()
	lc.state = state
	switch state {
	case http.StateIdle:
		lc.idleSince = time.Now()
		lc.disarm()
	case http.StateActive:
		lc.arm()
	}
}

type connKey struct{}

// requestRead tells the connection of ctx (a request's) that the request's
// body is read: its RequestTime stops.
func requestRead(ctx context.Context) {
	lc, _ := ctx.Value(connKey{}).(*limitConn)
	if lc == nil {
		return
	}
	lc.l.mu.Lock()
	lc.disarm()
	lc.l.mu.Unlock()
}

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
	// operator's) until one closes.
	DefaultMaxConnections = 256
	// HeaderTime bounds a connection's TLS handshake and the read of a
	// request's headers.
	HeaderTime = 10 * time.Second
	// IdleTime bounds an idle keep-alive connection (the API server's
	// client keeps its connections for 90 s).
	IdleTime = 90 * time.Second
)

// Server serves the conversion endpoint over TLS, as controller-runtime's
// webhook server does (it implements sigs.k8s.io/controller-runtime's
// webhook.Server), within bounds of its own: at most MaxConnections
// connections open (a listener that accepts no more until one closes),
// HeaderTime for a connection's handshake and a request's headers,
// IdleTime for an idle connection.
type Server struct {
	Host string
	Port int // 0 is 9443
	// TLS configures the listener (its certificates).
	TLS *tls.Config
	// MaxConnections bounds the connections open at once;
	// DefaultMaxConnections when zero.
	MaxConnections int

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
	ll := &limitListener{Listener: l, sem: make(chan struct{}, max), done: make(chan struct{})}
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
	return NewHTTPServer(ctx, s.WebhookMux()), tls.NewListener(ll, cfg)
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

// limitListener accepts at most cap(sem) connections open at once: the
// next Accept waits until one closes (the kernel's accept queue holds the
// others, costing the process nothing).
type limitListener struct {
	net.Listener
	sem      chan struct{}
	open     atomic.Int64
	accepted atomic.Int64
	done     chan struct{}
	once     sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	l.open.Add(1)
	l.accepted.Add(1)
	return &limitConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}

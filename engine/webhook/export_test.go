package webhook

import (
	"context"
	"net"
)

// MaxHeld is maxHeld, for the tests.
const MaxHeld = maxHeld

// ServeOn serves s on l (a listener of the test's), for the tests; stop
// ends it.
func ServeOn(s *Server, l net.Listener) (stop func()) {
	srv, tl := s.serve(context.Background(), l)
	go func() { _ = srv.Serve(tl) }()
	return func() { _ = srv.Close() }
}

// Reading is the bytes of the bodies h reads or holds now, for the tests.
func Reading(h *Handler) int64 { return h.reading.Load() }

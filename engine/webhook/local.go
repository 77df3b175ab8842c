package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
)

// ServeLocal serves the conversions of reg on 127.0.0.1, at a port free
// now, with fresh certificates of its own (LocalCerts), until stop is
// called: an endpoint that outlives any one operator, for the tests of a
// process that start and stop many operators on one control plane.
func ServeLocal(reg *Registry) (e *Endpoint, stop func() error, err error) {
	certs, err := LocalCerts()
	if err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("conversion webhook: listen: %w", err)
	}
	s := &Server{TLS: &tls.Config{GetCertificate: certs.GetCertificate}}
	s.Register(Path, &Handler{Registry: reg})
	srv, tl := s.serve(context.Background(), l)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(tl) }()
	stop = func() error {
		err := srv.Close()
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			return serr
		}
		return err
	}
	return &Endpoint{URL: LocalURL("127.0.0.1", l.Addr().(*net.TCPAddr).Port), Certs: certs}, stop, nil
}

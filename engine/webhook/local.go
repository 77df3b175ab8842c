package webhook

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
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
	mux := http.NewServeMux()
	mux.Handle(Path, &Handler{Registry: reg})
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{GetCertificate: certs.GetCertificate, NextProtos: []string{"h2", "http/1.1"}},
		// Probes that only open a connection (tests waiting for the
		// endpoint) end their handshakes early: not worth a line each.
		ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(l, "", "") }()
	stop = func() error {
		err := srv.Close()
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			return serr
		}
		return err
	}
	return &Endpoint{URL: LocalURL("127.0.0.1", l.Addr().(*net.TCPAddr).Port), Certs: certs}, stop, nil
}

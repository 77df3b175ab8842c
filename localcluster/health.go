package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

const pollInterval = 100 * time.Millisecond

// waitHealthy polls p's health endpoint until it answers 200 OK. It fails early
// if p exits.
func (c *Cluster) waitHealthy(ctx context.Context, p *process) error {
	url, client, err := c.healthEndpoint(p.name)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if err := p.exited(); err != nil {
			return err
		}
		last := get(ctx, client, url)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w (last: %v)", p.name, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// healthEndpoint returns the URL that tells whether the named component is
// healthy, and a client for it.
func (c *Cluster) healthEndpoint(name string) (string, *http.Client, error) {
	switch name {
	case Etcd:
		return localURL("http", c.ports.etcd) + "/health", &http.Client{}, nil
	case KubeAPIServer:
		tlsConfig, err := rest.TLSConfigFor(c.Config)
		return c.Config.Host + "/readyz", tlsClient(tlsConfig), err
	case KubeControllerManager, KubeScheduler:
		port := c.ports.controllerManager
		if name == KubeScheduler {
			port = c.ports.scheduler
		}
		// They serve a self-signed certificate.
		insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // 127.0.0.1 only
		return localURL("https", port) + "/healthz", tlsClient(insecure), nil
	case Kwok:
		return localURL("http", c.ports.kwok) + "/healthz", &http.Client{}, nil
	}
	return "", nil, fmt.Errorf("unknown component %s", name)
}

func tlsClient(cfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

// get returns nil if url answers 200 OK within a second.
func get(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/webhook"
)

// webhookFlags are the flags of the conversion webhook of `cueop run`.
type webhookFlags struct {
	host, service, secret, url string
	port                       int
	external, local            bool
	limits                     webhook.Limits
}

func (f *webhookFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&f.port, "webhook-port", 9443, "port of the conversion webhook (HTTPS, every replica)")
	fl.StringVar(&f.host, "webhook-bind-address", "127.0.0.1",
		"address the conversion webhook listens on: the API server's way in only (config/ gives the pod's IP; \"\" is every interface)")
	fl.StringVar(&f.service, "webhook-service", webhook.ServiceNamespace+"/"+webhook.ServiceName,
		"namespace/name of the Service in front of the replicas' conversion webhook (port 443), written into the CRDs installed")
	fl.StringVar(&f.secret, "webhook-cert-secret", webhook.SecretName,
		"Secret (in the Service's namespace) of the webhook's serving certificate: made and rotated by cueop, or by cert-manager with --webhook-cert-external")
	fl.BoolVar(&f.external, "webhook-cert-external", false,
		"the webhook's Secret is kept by another issuer (cert-manager): only read it (tls.crt, tls.key, ca.crt)")
	fl.BoolVar(&f.local, "webhook-local", false,
		"serve the conversion webhook on 127.0.0.1 at a free port with a CA made in memory, and point the CRDs there (a cueop on the API server's machine, as cueop dev runs; no Service, no Secret)")
	fl.StringVar(&f.url, "webhook-url", "",
		"URL the API server reaches the conversion webhook at, instead of the Service (a cueop outside the cluster)")
	fl.Int64Var(&f.limits.MaxBytes, "webhook-max-review-bytes", webhook.DefaultMaxBytes, "bytes of one conversion review's body (413 beyond)")
	fl.IntVar(&f.limits.MaxObjects, "webhook-max-review-objects", webhook.DefaultMaxObjects, "objects of one conversion review (refused beyond)")
	fl.IntVar(&f.limits.MaxConcurrent, "webhook-max-concurrent-reviews", webhook.DefaultMaxConcurrent,
		"conversion reviews converted at once (each body is read first, within 10s); one beyond waits a second for a slot, then is refused with 429 and Retry-After")
	fl.IntVar(&f.limits.MaxConnections, "webhook-max-connections", webhook.DefaultMaxConnections,
		"connections to the conversion webhook open at once; more wait to be accepted until one closes, or an idle one is closed for them")
	fl.IntVar(&f.limits.MaxConnectionsPerSource, "webhook-max-connections-per-source", webhook.DefaultMaxConnectionsPerSource,
		"connections to the conversion webhook open at once from one source address; one more is closed as soon as accepted")
}

// conversion is the operator's conversion endpoint of f, with certificates
// kept in the Secret by the Rotator added to mgr (addRotator).
func (f *webhookFlags) conversion() (*operator.Conversion, error) {
	if f.local {
		c, err := operator.LocalConversion()
		if c != nil {
			c.Limits = f.limits
		}
		return c, err
	}
	ns, name, ok := strings.Cut(f.service, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--webhook-service %q: want namespace/name", f.service)
	}
	return &operator.Conversion{Host: f.host, Port: f.port, Limits: f.limits, Endpoint: webhook.Endpoint{
		URL: f.url, ServiceNamespace: ns, ServiceName: name, Certs: &webhook.Certs{}}}, nil
}

// addRotator adds to mgr the Rotator that keeps c's certificates in the
// Secret of f, once needed is closed (a kind converts): an operator of
// single-version kinds reads and writes no Secret.
func (f *webhookFlags) addRotator(mgr manager.Manager, c *operator.Conversion, needed <-chan struct{}) error {
	if f.local {
		return nil // its certificates are made in memory
	}
	e := c.Endpoint
	return mgr.Add(&webhook.Rotator{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: e.ServiceNamespace, Name: f.secret,
		Hosts: webhook.ServiceHosts(e.ServiceNamespace, e.ServiceName), Certs: e.Certs, External: f.external,
		Needed: needed, Log: mgr.GetLogger().WithName("webhook-cert"),
	})
}

package operator

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
)

// Conversion configures the conversion webhook of the kinds with several
// versions (engine/webhook): where it listens, where the CRDs point, and
// how a kind's converter is made.
type Conversion struct {
	// Host and Port the webhook server listens on; Port 0 is 9443.
	Host string
	Port int
	// Endpoint is written into the conversion clientConfig of the CRDs
	// installed, with its Certs' CA bundle; its Certs are served.
	Endpoint webhook.Endpoint
	// Limits bound the reviews served (engine/webhook's defaults when zero).
	Limits webhook.Limits
	// NoServe points the CRDs at the endpoint without serving it (the
	// operators of a sharded replica's ranges: the replica serves it; an
	// endpoint served from Registry elsewhere).
	NoServe bool
	// New makes a kind's converter (nil for a kind with one version); by
	// default engine/convert's, evaluated in the operator's workers
	// (engine/worker; in process with Options.InProcess).
	New func(*template.Kind) (webhook.Converter, error)
	// Registry, when set, is where the converters are served from (an
	// endpoint served elsewhere, with NoServe: tests share one across the
	// operators they start); else the operator has one of its own.
	Registry *webhook.Registry
}

// conversions are the converters served, one per kind: the last good
// revision's. A revision whose converter does not compile, or whose
// conversions lose or invent a field (checkRoundTrips), is refused (the
// operator keeps its previous revision, serving and converting).
type conversions struct {
	reg    *webhook.Registry
	make   func(*template.Kind) (webhook.Converter, error)
	log    logr.Logger
	reader client.Reader // the stored CRs' specs checkRoundTrips reads
	// checkIn runs checkRoundTrips' conversions where they are isolated
	// (the workers); nil runs them here (converters of the caller's own).
	checkIn func(context.Context, *template.Kind, []convert.Spec) error
	budget  budget.Budget
	limits  webhook.Limits // the handler's (Conversion.Limits)

	mu    sync.Mutex
	revs  map[schema.GroupKind]string         // the revision converting, by kind
	vers  map[schema.GroupKind][]string       // the versions it converts, by kind
	kinds map[schema.GroupKind]*template.Kind // its template, by kind (checkRoundTrips)

	// loaded is closed once the templates have been loaded for the first
	// time (Start's first serve, or the conversion loader's first load):
	// until then the handler holds a review of a kind with no converter.
	loaded     chan struct{}
	loadedOnce sync.Once
}

// firstLoadDone releases the reviews held for the first load.
func (c *conversions) firstLoadDone() {
	if c == nil {
		return
	}
	c.loadedOnce.Do(func() { close(c.loaded) })
}

func newConversions(c *Conversion, b budget.Budget, log logr.Logger, r client.Reader) *conversions {
	mk := c.New
	if mk == nil {
		mk = converterWithin(b) // convert.go
	}
	reg := c.Registry
	if reg == nil {
		reg = &webhook.Registry{}
	}
	return &conversions{reg: reg, make: mk, log: log, reader: r, budget: b, limits: c.Limits, revs: map[schema.GroupKind]string{}, vers: map[schema.GroupKind][]string{}, kinds: map[schema.GroupKind]*template.Kind{}, loaded: make(chan struct{})}
}

// prepare compiles k's converter and checks its round trips
// (checkRoundTrips); commit makes it the one of its kind. An error leaves
// the previous one in place.
func (c *conversions) prepare(ctx context.Context, k *template.Kind) (commit func(), err error) {
	if c == nil {
		return func() {}, nil
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	c.mu.Lock()
	same := c.revs[gk] == k.Revision
	c.mu.Unlock()
	if same {
		return func() {}, nil
	}
	conv, err := c.make(k)
	if err != nil {
		return nil, fmt.Errorf("kind %s: conversion: %w", k.Name, err)
	}
	if err := c.checkRoundTrips(ctx, k); err != nil { // conversioncheck.go
		return nil, err
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reg.Set(gk, conv) // nil for a kind with one version: none
		c.revs[gk] = k.Revision
		c.vers[gk] = versionNames(k)
		c.kinds[gk] = k
		c.log.V(1).Info("conversions served", "kind", gk.String(), "revision", k.Revision, "versions", conv != nil)
	}, nil
}

// convertingKind is the template of the revision of k's kind converting
// now, or nil.
func (c *conversions) convertingKind(k *template.Kind) *template.Kind {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kinds[k.Resource.GroupVersionKind().GroupKind()]
}

// converting tells whether a revision of k's kind converts already.
func (c *conversions) converting(k *template.Kind) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.revs[k.Resource.GroupVersionKind().GroupKind()]
	return ok
}

// covers tells whether the converting revision of k's kind converts every
// version k serves: false for its first revision, and for one that adds a
// version, whose converter must serve before its CRD does.
func (c *conversions) covers(k *template.Kind) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gk := k.Resource.GroupVersionKind().GroupKind()
	if _, ok := c.revs[gk]; !ok {
		return false
	}
	have := c.vers[gk]
	for _, v := range versionNames(k) {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

// snapshot returns what puts the converter of k's kind back as it is now
// (none, if none converts).
func (c *conversions) snapshot(k *template.Kind) (restore func()) {
	if c == nil {
		return func() {}
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	c.mu.Lock()
	defer c.mu.Unlock()
	conv, _ := c.reg.Get(gk)
	rev, had := c.revs[gk]
	vers, kind := c.vers[gk], c.kinds[gk]
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !had {
			c.reg.Set(gk, nil)
			delete(c.revs, gk)
			delete(c.vers, gk)
			delete(c.kinds, gk)
			return
		}
		c.reg.Set(gk, conv)
		c.revs[gk], c.vers[gk], c.kinds[gk] = rev, vers, kind
	}
}

// versionNames are the versions k serves.
func versionNames(k *template.Kind) []string {
	out := []string{k.Resource.Version}
	for _, v := range k.Versions {
		if v.Name != k.Resource.Version {
			out = append(out, v.Name)
		}
	}
	return out
}

// forget withdraws the converter of k's kind.
func (c *conversions) forget(k *template.Kind) {
	if c == nil {
		return
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reg.Set(gk, nil)
	delete(c.revs, gk)
	delete(c.vers, gk)
	delete(c.kinds, gk)
}

// serve makes k's converter the one of its kind.
func (c *conversions) serve(ctx context.Context, k *template.Kind) error {
	commit, err := c.prepare(ctx, k)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// serveSet serves the kinds of set (a broken kind keeps its last good
// revision; a removed kind keeps converting, as its CRD stays).
func (c *conversions) serveSet(ctx context.Context, set *template.Set) {
	for _, k := range set.Kinds {
		if err := c.serve(ctx, k); err != nil {
			c.log.Error(err, "conversion refused; the last good revision keeps converting")
		}
	}
}

// serveConversion adds the conversion endpoint to mgr: its webhook server
// (TLS with c's certificates, no leader needed), the handler at
// webhook.Path, and, with leader election, the loader that keeps the
// converters current on a replica that is not the leader (a replica
// without election is the leader: its reload serves them).
func serveConversion(mgr manager.Manager, l *conversionLoader, leaderElection bool) error {
	if err := handleConversions(mgr, l.conv, l.log.WithName("conversion")); err != nil {
		return err
	}
	if !leaderElection {
		return nil
	}
	l.elected = mgr.Elected()
	return mgr.Add(l)
}

// handleConversions answers the conversion reviews at webhook.Path of
// mgr's webhook server with conv's converters, counted in cueop's
// metrics, the CRs it refuses reported on them by a runnable of mgr
// (conversionrefused.go).
func handleConversions(mgr manager.Manager, conv *conversions, log logr.Logger) error {
	reports := newConversionReports(mgr, conv.reg, log)
	h := &webhook.Handler{Registry: conv.reg, Log: log, Observe: NewMetrics().Converted,
		Loaded: conv.loaded, Report: reports.report, Limits: conv.limits}
	mgr.GetWebhookServer().Register(webhook.Path, h)
	return mgr.Add(reports)
}

// webhookServer is the manager's webhook server of c: engine/webhook's,
// whose connections are bounded (Limits.MaxConnections, of them
// Limits.MaxConnectionsPerSource from one address, a request read
// deadline).
func webhookServer(c *Conversion) ctrlwebhook.Server {
	return &webhook.Server{Host: c.Host, Port: c.Port, MaxConnections: c.Limits.MaxConnections, MaxConnectionsPerSource: c.Limits.MaxConnectionsPerSource,
		TLS: &tls.Config{GetCertificate: c.Endpoint.Certs.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}}
}

// conversionLoader loads the templates for the converters on a replica
// that is not the leader, at start and on every template change: the
// leader's own reload serves them there (lifecycle.go), so that each revision
// compiles once. It stops once elected.
type conversionLoader struct {
	conv    *conversions
	loader  *templateLoader
	watch   templatesWatch
	log     logr.Logger
	elected <-chan struct{} // nil: never elected (a sharded replica's)
}

// NeedLeaderElection: a follower answers conversions too.
func (l *conversionLoader) NeedLeaderElection() bool { return false }

func (l *conversionLoader) Start(ctx context.Context) error {
	stopped := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Stopped before a first load: hold no review. Elected, the leader's
	// first serve ends the hold.
	defer func() {
		if stopped.Err() != nil {
			l.conv.firstLoadDone()
		}
	}()
	go func() {
		select {
		case <-l.elected: // the leader's reload serves them
			cancel()
		case <-ctx.Done():
		}
	}()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("conversion templates watch: %w", err)
	}
	defer w.Close()
	l.watch.add(w)
	_ = l.load(ctx)
	return l.watch.run(ctx, w, l.load) // watch.go
}

func (l *conversionLoader) load(ctx context.Context) error {
	set, err := l.loader.load(ctx)
	if set != nil {
		l.conv.serveSet(ctx, set)
	}
	if ctx.Err() == nil {
		l.conv.firstLoadDone()
	}
	if err != nil && ctx.Err() == nil {
		l.log.Error(err, "conversion: templates did not load; the last good revision of each kind keeps converting")
	}
	return nil
}

// ConversionNeeded is closed once the conversion endpoint's certificate
// is needed: a kind served converts between versions, or a CRD is pointed
// at the endpoint (webhook.Rotator.Needed). It is never closed when no
// kind has several versions.
func (o *Operator) ConversionNeeded() <-chan struct{} {
	var reg *webhook.Registry
	if o.conv != nil {
		reg = o.conv.reg
	}
	return conversionNeeded(reg, o.opts.Conversion)
}

// replicaConversion is a sharded replica's conversion endpoint: its
// converters, loaded by a loader and workers of its own.
type replicaConversion struct {
	conv   *conversions
	loader *templateLoader
	c      *Conversion
}

// needed is Operator.ConversionNeeded of the replica.
func (r *replicaConversion) needed() <-chan struct{} { return conversionNeeded(r.conv.reg, r.c) }

func conversionNeeded(reg *webhook.Registry, c *Conversion) <-chan struct{} {
	var converting, wanted <-chan struct{} // nil: never
	if reg != nil {
		converting = reg.Converting()
	}
	if c != nil && c.Endpoint.Certs != nil {
		wanted = c.Endpoint.Certs.Wanted()
	}
	needed := make(chan struct{})
	go func() {
		select {
		case <-converting:
		case <-wanted:
		}
		close(needed)
	}()
	return needed
}

// endpoint is where the CRDs point; nil without conversion.
func (c *Conversion) endpoint() *webhook.Endpoint {
	if c == nil {
		return nil
	}
	return &c.Endpoint
}

// repointEvery is how often the live CRDs are checked for the conversion
// endpoint when cueop does not install them: a GET per kind served with
// several versions, a write only when the bundle or address is gone.
const repointEvery = 20 * time.Second

// LocalConversion serves conversions on 127.0.0.1, at a port free now,
// with a CA and serving certificate of its own that the CRDs are given
// (`cueop dev`, tests).
func LocalConversion() (*Conversion, error) {
	certs, err := webhook.LocalCerts()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("conversion webhook: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return &Conversion{Host: "127.0.0.1", Port: port,
		Endpoint: webhook.Endpoint{URL: webhook.LocalURL("127.0.0.1", port), Certs: certs}}, nil
}

// serveReplicaConversion serves the conversion endpoint of a sharded
// replica on its host manager, whatever ranges it holds (none included):
// the templates are loaded for it on the replica, in workers of its own.
func serveReplicaConversion(host manager.Manager, opts Options, log logr.Logger) (*replicaConversion, error) {
	clog := log.WithName("conversion")
	conv := newConversions(opts.Conversion, opts.Budget, clog, host.GetAPIReader())
	loader, err := newTemplateLoader(opts, log, host.GetAPIReader(), conv)
	if err != nil {
		return nil, err
	}
	if err := handleConversions(host, conv, clog); err != nil {
		loader.stop()
		return nil, err
	}
	l := &conversionLoader{conv: conv, loader: loader, watch: templatesWatch{dir: opts.Templates, log: log}, log: log}
	return &replicaConversion{conv: conv, loader: loader, c: opts.Conversion}, host.Add(l) // never elected: loads on every change
}

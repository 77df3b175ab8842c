package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/pinstore"
	"github.com/cueop/cueop/engine/template"
)

// sourceFlags say where --templates module references are fetched to and
// how they are followed.
type sourceFlags struct {
	cache          string
	pollInterval   time.Duration
	registryConfig string
	fetchTimeout   time.Duration
	// accepted is told what the operator accepted (Source.Accept); nil
	// when --templates is a directory.
	accepted func([]template.Source)
	// refusals are the module versions refused at fetch, for the operator
	// to report (refusals.deliver).
	refusals refusals
	// record, when set, keeps the record of pinned.json in the cluster
	// too (cueop run --pin-record: pinRecordFlags).
	record source.Record
}

// pinRecordFlags say which ConfigMap cueop run keeps the record of the
// modules' digests in (engine/source/pinstore), so that a pin's
// dependencies survive an empty module cache.
type pinRecordFlags struct{ name, namespace string }

func (f *pinRecordFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.name, "pin-record", pinstore.DefaultName, "with --templates from a registry: the ConfigMap of --pin-record-namespace keeping what the module cache's pinned.json records (the digests resolved and accepted, and the dependencies of each pin), read at start before the first fetch and winning over the file; empty: the module cache alone")
	fl.StringVar(&f.namespace, "pin-record-namespace", runIdentityNamespace(), "namespace of the --pin-record ConfigMap (default: the pod's)")
}

// record is the ConfigMap record of cueop run, through the client config
// names (made at its first use); nil when --templates is a directory or
// --pin-record is empty.
func (f *pinRecordFlags) record(templates string, config func() (*rest.Config, error)) source.Record {
	if f.name == "" || !source.IsRefs(templates) {
		return nil
	}
	return pinstore.New(config, f.namespace, f.name)
}

// refusals holds the module versions refused at fetch until the operator
// is there to report them (Operator.ModuleRefused), then hands them on.
type refusals struct {
	mu      sync.Mutex
	pending []source.Refusal
	to      func(ref string, err error)
}

func (r *refusals) report(rf source.Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.to == nil {
		r.pending = append(r.pending, rf)
		return
	}
	r.to(rf.Ref, rf.Err)
}

// deliver reports the refusals to to, those held first.
func (r *refusals) deliver(to func(ref string, err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.to = to
	for _, rf := range r.pending {
		to(rf.Ref, rf.Err)
	}
	r.pending = nil
}

func (f *sourceFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.cache, "module-cache", defaultModuleCache(), "directory of the template modules fetched from a registry (--templates oci://...), by digest, and of the digests recorded for a restart")
	fl.DurationVar(&f.fetchTimeout, "registry-timeout", source.DefaultFetchTimeout, "how long the fetch of one module reference (its manifest, archive and dependencies) may take; a registry that hangs fails the fetch and what serves is left as it is")
	fl.StringVar(&f.registryConfig, "registry-config", "", "docker config.json holding the registry credentials (default: anonymous)")
}

// registerPoll adds --registry-poll-interval: only run and dev follow the
// moving references; the other commands ask the registry once.
func (f *sourceFlags) registerPoll(fl *pflag.FlagSet) {
	fl.DurationVar(&f.pollInterval, "registry-poll-interval", source.DefaultPollInterval, "how often a module reference that moves (a tag, @v1) is asked for")
}

func defaultModuleCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ".cueop/modules"
	}
	return filepath.Join(dir, "cueop", "modules")
}

// templatesValue is --templates: a directory, or module references; module
// references given again add up (comma-separated), a directory replaces.
type templatesValue struct {
	s   *string
	set bool
}

func (v *templatesValue) String() string { return *v.s }
func (v *templatesValue) Type() string   { return "string" }
func (v *templatesValue) Set(s string) error {
	if v.set && source.IsRefs(*v.s) && source.IsRefs(s) {
		s = *v.s + "," + s
	}
	*v.s, v.set = s, true
	return nil
}

// openSource, when --templates names modules, fetches them (or takes the
// recorded digests) into the module cache and points the command at the
// layout: run and dev then follow the moving references in the background;
// the other commands ask the registry once. It is every command's
// PersistentPreRunE but run's and dev's: they open the source themselves
// once their logger is set (openSourceLogged), so that its lines are
// records of the operator's log, not text among them.
func (g *globals) openSource(cmd *cobra.Command, _ []string) error {
	if servesWithOwnLog(cmd) {
		return nil
	}
	return g.openSourceLogged(cmd, logr.FromSlogHandler(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
}

// servesWithOwnLog tells the commands that run the operator, with a
// logger of their own.
func servesWithOwnLog(cmd *cobra.Command) bool {
	return cmd.Name() == "run" || cmd.Name() == "dev"
}

// openSourceLogged is openSource logging to log.
func (g *globals) openSourceLogged(cmd *cobra.Command, log logr.Logger) error {
	if !source.IsRefs(g.templates) {
		return nil
	}
	refs, err := source.ParseRefs(g.templates)
	if err != nil {
		return err
	}
	s, err := source.New(source.Options{Refs: refs, CacheDir: g.source.cache, PollInterval: g.source.pollInterval,
		RegistryConfig: g.source.registryConfig, FetchTimeout: g.source.fetchTimeout, Limits: g.limits.limits(), Log: log,
		Refused: g.source.refusals.report, Record: g.source.record})
	if err != nil {
		return err
	}
	if err := s.Start(context.Background()); err != nil {
		return fmt.Errorf("--templates: %w", err)
	}
	g.templates, g.source.accepted = s.Dir(), s.Accept
	if servesWithOwnLog(cmd) {
		go s.Run(context.Background())
		return nil
	}
	if _, err := s.Poll(context.Background()); err != nil {
		log.Error(err, "template modules: serving the recorded digests")
	}
	return nil
}

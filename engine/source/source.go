package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"cuelang.org/go/mod/module"
	"github.com/go-logr/logr"

	"github.com/cueop/cueop/engine/template"
)

// DefaultPollInterval is how often a moving reference is asked for.
const DefaultPollInterval = time.Minute

// Options configure a Source.
type Options struct {
	// Refs are the modules to serve.
	Refs []Ref
	// CacheDir is the module cache (cache.go).
	CacheDir string
	// PollInterval is how often the moving references are followed; 0
	// means DefaultPollInterval.
	PollInterval time.Duration
	// RegistryConfig is a docker config.json holding the registries'
	// credentials; empty, or a file that is not there, means anonymous.
	RegistryConfig string
	// Limits bound each module's files as a template load bounds a
	// directory's.
	Limits template.Limits
	// FetchTimeout bounds the resolution of one reference (harden.go); 0
	// means DefaultFetchTimeout.
	FetchTimeout time.Duration
	// MaxModuleFiles bounds the entries of a module's archive; 0 means
	// DefaultMaxModuleFiles.
	MaxModuleFiles int
	// Log receives the poll errors.
	Log logr.Logger
	// Refused, when set, is told once of each module version whose
	// content is refused at fetch (refused.go).
	Refused func(Refusal)
	// Record, when set, keeps what pinned.json records where it outlives
	// the module cache (record.go): Start reads it before the first fetch,
	// and it wins over pinned.json; every change is written to both.
	Record Record
}

// Source serves the modules of Options.Refs in Dir.
type Source struct {
	opts    Options
	c       *cache
	remotes map[string]*remote

	polling  sync.Mutex // held by Poll: one poll at a time
	mu       sync.Mutex // guards serving, accepted and pinned.json
	serving  []Resolved
	accepted map[string]Resolved // by reference, what the operator accepted (accept.go)
	refused  map[string]*Refusal // by digest, the content refused at fetch (refused.go)

	saving sync.Mutex // held across a write of the Record (record.go); guards saved
	saved  []byte     // what was last written to the Record
}

// New makes a Source; Start lays out the first modules.
func New(opts Options) (*Source, error) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultFetchTimeout
	}
	if opts.MaxModuleFiles <= 0 {
		opts.MaxModuleFiles = DefaultMaxModuleFiles
	}
	opts.Limits = opts.Limits.WithDefaults()
	if err := os.MkdirAll(filepath.Join(opts.CacheDir, "modules"), 0o755); err != nil {
		return nil, fmt.Errorf("module cache: %w", err)
	}
	for _, dir := range []string{opts.CacheDir, filepath.Join(opts.CacheDir, "modules")} {
		if err := checkWritable(dir); err != nil {
			return nil, err
		}
	}
	var auth []byte
	if opts.RegistryConfig != "" {
		data, err := os.ReadFile(opts.RegistryConfig)
		switch {
		case errors.Is(err, fs.ErrNotExist): // an optional Secret not created: anonymous
			opts.Log.Info("registry config not there: asking the registries anonymously", "path", opts.RegistryConfig)
		case err != nil:
			return nil, fmt.Errorf("registry config: %w", err)
		default:
			auth = data
		}
	}
	s := &Source{opts: opts, c: &cache{dir: opts.CacheDir, limits: opts.Limits, maxFiles: opts.MaxModuleFiles}, remotes: map[string]*remote{}, refused: map[string]*Refusal{}}
	for _, r := range opts.Refs {
		if s.remotes[r.Registry] != nil {
			continue
		}
		rem, err := newRemote(r.Registry, auth, opts.CacheDir, s.c.maxModule()+maxManifest)
		if err != nil {
			return nil, err
		}
		s.remotes[r.Registry] = rem
	}
	return s, nil
}

// Dir is the templates directory to load and watch.
func (s *Source) Dir() string { return s.c.templatesDir() }

// Serving is what each reference resolved to, as laid out in Dir.
func (s *Source) Serving() []Resolved {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Resolved(nil), s.serving...)
}

// Start lays out the first modules: the recorded digest of each reference
// whose files are cached (no registry asked), the registry's answer for
// the others. The record is pinned.json under Options.Record's, which
// wins (record.go); a Record that cannot be read or written fails the
// start: a pin's dependencies would be resolved anew from their tags.
func (s *Source) Start(ctx context.Context) error {
	p, err := readPinned(s.opts.CacheDir)
	if err != nil {
		s.opts.Log.Error(err, "module cache: recorded digests unreadable, resolving anew")
	}
	if s.opts.Record != nil {
		durable, err := s.loadRecord(ctx)
		if err != nil {
			return err
		}
		p = overlay(p, durable)
	}
	s.mu.Lock()
	s.accepted = p.Accepted
	s.mu.Unlock()
	rs := make([]Resolved, len(s.opts.Refs))
	var errs []error
	for i, ref := range s.opts.Refs {
		if rec, ok := p.restart(ref.Raw); ok && s.c.cached(rec) && (!ref.Pinned() || rec.Digest == ref.Digest) {
			rs[i] = rec
			continue
		}
		if rs[i], err = s.resolve(ctx, ref, nil, p.pin(ref), p.vouched(ref)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if _, err = s.commit(rs); err != nil {
		return err
	}
	return s.saveRecord(ctx, true)
}

// Poll follows the moving references once; when one moved it lays out the
// new modules. An error leaves what serves as it is.
func (s *Source) Poll(ctx context.Context) (changed bool, err error) {
	s.polling.Lock() // one poll at a time: a second waits, then finds nothing new
	defer s.polling.Unlock()
	rs := s.Serving()
	have := s.Serving()
	if len(rs) != len(s.opts.Refs) {
		return false, errors.New("template modules: no poll before Start laid out the first modules")
	}
	var errs []error
	for i, ref := range s.opts.Refs {
		if ref.Pinned() {
			continue
		}
		r, err := s.resolve(ctx, ref, &have[i], nil, false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rs[i] = r
	}
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	changed, err = s.commit(rs)
	if err == nil {
		if err := s.saveRecord(ctx, true); err != nil { // written again at the next poll
			s.opts.Log.Error(err, "template modules: the digests serving are not recorded in the cluster")
		}
	}
	return changed, err
}

// Run polls now and at every interval until ctx is done, logging errors.
func (s *Source) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		if changed, err := s.Poll(ctx); err != nil && onlyKnownRefusals(err) {
			s.opts.Log.V(1).Info("template modules: the versions refused before are still there; what serves is unchanged", "error", err.Error())
		} else if err != nil {
			s.opts.Log.Error(err, "template modules: poll failed; what serves is unchanged")
		} else if changed {
			s.opts.Log.Info("template modules: new version laid out", "serving", s.Serving())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// commit lays out rs and records them.
func (s *Source) commit(rs []Resolved) (bool, error) {
	changed, err := s.c.layout(s.opts.Refs, rs)
	if err != nil {
		return false, fmt.Errorf("module cache %s: %w", s.opts.CacheDir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = rs
	if err := s.record().write(s.opts.CacheDir); err != nil {
		return changed, fmt.Errorf("module cache %s: %w", s.opts.CacheDir, err)
	}
	return changed, nil
}

// resolve asks the registry what ref names now; when it is still have's
// digest, have is the answer. pin, when set, is the record of ref's pinned
// digest: each dependency must still be the digest it records. vouched
// tells that a record holds ref's pinned digest (checkTag).
func (s *Source) resolve(ctx context.Context, ref Ref, have, pin *Resolved, vouched bool) (Resolved, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.FetchTimeout)
	defer cancel()
	r, err := s.resolveWithin(ctx, ref, have, pin, vouched)
	return r, timedOut(ctx, ref, s.opts.FetchTimeout, err)
}

func (s *Source) resolveWithin(ctx context.Context, ref Ref, have, pin *Resolved, vouched bool) (Resolved, error) {
	rem := s.remotes[ref.Registry]
	vers := ref.Query
	if !ref.Exact() {
		v, err := rem.latest(ctx, ref.Module, ref.Query)
		if err != nil {
			return Resolved{}, err
		}
		vers = v
	}
	mv, err := module.NewVersion(ref.Module, vers)
	if err != nil {
		return Resolved{}, fmt.Errorf("module reference %s: %w", ref.Raw, err)
	}
	var tagged func(ctx context.Context) error
	if ref.Pinned() {
		tagged = func(ctx context.Context) error { return s.checkTag(ctx, ref, rem, mv, vouched) }
	}
	digest, err := s.fetch(ctx, ref, rem, mv, ref.Digest, tagged)
	if err != nil {
		return Resolved{}, err
	}
	if have != nil && have.Digest == digest && have.Version == vers {
		return *have, nil
	}
	deps, err := resolveDeps(ctx, s.c.moduleDir(digest), func(ctx context.Context, mv module.Version) (string, error) {
		got, err := s.fetch(ctx, ref, rem, mv, "", nil)
		if err == nil && pin != nil {
			err = pin.checkDep(ref, mv, got, s.recordNames())
		}
		return got, err
	}, s.c)
	if err != nil {
		return Resolved{}, fmt.Errorf("module %s: dependencies: %w", describe(mv, digest), err)
	}
	return Resolved{Ref: ref.Raw, Module: mv.Path(), Version: vers, Digest: digest, Deps: deps}, nil
}

// fetch reads mv's manifest and, unless its digest is cached or was
// refused before, downloads and extracts it; it answers the digest. The
// content refused (an archive over the limits, an entry refused by
// extract) is remembered by digest and reported once. tagged, when set,
// is asked once the manifest is read and checked, before any download.
func (s *Source) fetch(ctx context.Context, ref Ref, rem *remote, mv module.Version, digest string, tagged func(context.Context) error) (string, error) {
	f, err := rem.manifest(ctx, mv, digest)
	if err != nil {
		return "", err
	}
	if tagged != nil {
		if err := tagged(ctx); err != nil {
			return "", err
		}
	}
	if s.c.has(f.digest) {
		return f.digest, nil
	}
	if err := s.refusedBefore(f.digest); err != nil {
		return "", err // refused before: not downloaded and checked again
	}
	data, err := f.archive(ctx, s.c.maxModule())
	if errors.Is(err, errTooLarge) {
		s.refuse(&Refusal{Ref: ref.Raw, Module: mv.Path(), Version: mv.Version(), Digest: f.digest, Err: err})
	}
	if err != nil {
		return "", err
	}
	if err := s.c.extract(ctx, mv, f.digest, data); err != nil {
		if cacheFailed(err) || ctx.Err() != nil { // not the content's fault: fetched again
			return "", err
		}
		rf := &Refusal{Ref: ref.Raw, Module: mv.Path(), Version: mv.Version(), Digest: f.digest, Err: err}
		s.refuse(rf)
		return "", rf
	}
	return f.digest, nil
}

// checkTag refuses a pin whose digest is not the one its version's tag
// names: the pin would serve that digest's content and report the
// version, which is another's (v1.1.0@<digest of v1.0.0>). The registry
// keeps no history of a tag, so a tag moved since the pin was written
// (re-pushed) cannot be told from a wrong digest: at a pin's first fetch
// both are refused, naming the two digests. Once a pin is recorded
// (vouched: its fetch found the tag naming it, pinned.json or the
// cluster's record keeps it), a later fetch (a new Pod's empty module
// cache) takes the pinned digest when the tag has moved since, logging
// both digests: the digest is what the pin names, and a re-pushed tag
// must not stop a fleet that pinned against exactly that.
func (s *Source) checkTag(ctx context.Context, ref Ref, rem *remote, mv module.Version, vouched bool) error {
	f, err := rem.manifest(ctx, mv, "")
	if err != nil {
		return fmt.Errorf("module reference %s: the pin's version tag: %w", ref.Raw, err)
	}
	if f.digest == ref.Digest {
		return nil
	}
	if vouched {
		s.opts.Log.Info("template modules: the tag of a recorded pin has moved since; serving the pinned digest", "ref", ref.Raw, "tagDigest", f.digest, "pinnedDigest", ref.Digest)
		return nil
	}
	return fmt.Errorf("module reference %s: tag %s of %s names digest %s, not the pinned %s: refused (the pin would serve other content than %s under its version; pin the digest the tag names, or the version whose tag names %s)",
		ref.Raw, mv.Version(), mv.BasePath(), f.digest, ref.Digest, mv.Version(), ref.Digest)
}

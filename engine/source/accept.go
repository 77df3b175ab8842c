package source

import (
	"context"
	"fmt"

	"github.com/cueop/cueop/engine/template"
)

// Accept records, for each reference serving, the digest the operator
// reports it loaded and serves every kind of (operator
// Options.TemplatesAccepted): a restart comes back on it rather than on
// a version fetched and then refused. A source of another digest (a load
// of an older layout) records nothing.
func (s *Source) Accept(srcs []template.Source) {
	if s.accept(srcs) {
		if err := s.saveRecord(context.Background(), false); err != nil { // written again at the next change
			s.opts.Log.Error(err, "template modules: accepted digests not recorded in the cluster")
		}
	}
}

// accept records srcs in pinned.json, and tells whether that changed.
func (s *Source) accept(srcs []template.Source) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.record()
	changed := false
	for _, r := range s.serving {
		for _, src := range srcs {
			if src.Ref == r.Ref && src.Digest == r.Digest && p.Accepted[r.Ref].Digest != r.Digest {
				p.Accepted[r.Ref], changed = r, true
			}
		}
	}
	if !changed {
		return false
	}
	s.accepted = p.Accepted
	if err := p.write(s.opts.CacheDir); err != nil {
		s.opts.Log.Error(fmt.Errorf("module cache %s: %w", s.opts.CacheDir, err), "template modules: accepted digests not recorded")
	}
	return true
}

// record is what pinned.json is to say: the digests serving and those
// accepted. The caller holds s.mu.
func (s *Source) record() pinned {
	p := pinned{Refs: map[string]Resolved{}, Accepted: map[string]Resolved{}}
	for _, r := range s.serving {
		p.Refs[r.Ref] = r
	}
	for ref, r := range s.accepted {
		p.Accepted[ref] = r
	}
	return p
}

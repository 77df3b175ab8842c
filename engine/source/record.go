package source

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Record keeps the record of pinned.json where it outlives the module
// cache (Options.Record): a ConfigMap of the operator's namespace (package
// engine/source/pinstore). The module cache of a Pod is an emptyDir; a
// new Pod finding no pinned.json would resolve a pin's dependencies from
// their tags again, and take a dependency whose tag moved.
type Record interface {
	// Load answers the record, nil when there is none yet.
	Load(ctx context.Context) ([]byte, error)
	// Update writes what update makes of the record there now (nil when
	// none), reading it again and retrying when another writer changed
	// it meanwhile.
	Update(ctx context.Context, update func(old []byte) ([]byte, error)) error
	// String names it in errors: ConfigMap namespace/name.
	String() string
}

// recordTimeout bounds one read or write of the Record.
const recordTimeout = 30 * time.Second

// decodeRecord reads a record in pinned.json's encoding; from names
// where it was read.
func decodeRecord(data []byte, from string) (pinned, error) {
	p := pinned{Refs: map[string]Resolved{}, Accepted: map[string]Resolved{}}
	if len(data) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return pinned{Refs: map[string]Resolved{}, Accepted: map[string]Resolved{}}, fmt.Errorf("%s: %w", from, err)
	}
	if p.Refs == nil {
		p.Refs = map[string]Resolved{}
	}
	if p.Accepted == nil {
		p.Accepted = map[string]Resolved{}
	}
	return p, nil
}

func (p pinned) encode() ([]byte, error) { return json.MarshalIndent(p, "", "  ") }

// overlay is base with every reference top records taken from top: at a
// start, the module cache's pinned.json (base) under the cluster's
// record (top). The cluster's record wins: it outlives every Pod and is
// the one every replica reads, so it holds the first fetch of a pin,
// while a pinned.json that disagrees was written later, by a fetch the
// cluster's record did not see (its write failed, or the ConfigMap was
// edited since). A reference only one of them records is kept.
func overlay(base, top pinned) pinned {
	out := pinned{Refs: map[string]Resolved{}, Accepted: map[string]Resolved{}}
	for _, p := range []pinned{base, top} {
		for ref, r := range p.Refs {
			out.Refs[ref] = r
		}
		for ref, r := range p.Accepted {
			out.Accepted[ref] = r
		}
	}
	return out
}

// save is what the cluster's record is to say once ours is written over
// old, the record there now: ours for each reference we serve, old's for
// the references we do not (another operator naming the same ConfigMap,
// a pin taken out of --templates and given again), and old's record of a
// pin's digest, dependencies included, wherever it has one: the first
// record of a pin is never replaced. A pin whose dependencies we
// resolved otherwise than old records (another replica recorded it
// between our read and our write, and a dependency's tag moved
// meanwhile; an edited record) is an error naming them, from: we would
// serve other content than the record's.
func save(old, ours pinned, from string) (pinned, error) {
	out := overlay(old, ours)
	for _, m := range []struct{ old, ours, out map[string]Resolved }{{old.Refs, ours.Refs, out.Refs}, {old.Accepted, ours.Accepted, out.Accepted}} {
		for ref, r := range m.old {
			if !pinRecord(r) {
				continue
			}
			if have, ok := m.ours[ref]; ok && pinRecord(have) && have.Digest == r.Digest {
				if err := sameDeps(r, have, from); err != nil {
					return pinned{}, err
				}
			}
			if have := m.out[ref]; have.Digest == r.Digest {
				m.out[ref] = r
			}
		}
	}
	return out, nil
}

// sameDeps refuses ours, a pin's record, whose dependencies are not those
// of rec, the record of that pin in from.
func sameDeps(rec, ours Resolved, from string) error {
	digests := func(r Resolved) map[string]string {
		m := make(map[string]string, len(r.Deps))
		for _, d := range r.Deps {
			base, _, _ := strings.Cut(d.Module, "@") // without its major version suffix
			m[base+"@"+d.Version] = d.Digest
		}
		return m
	}
	want, got := digests(rec), digests(ours)
	var diff []string
	for mv, d := range got {
		if w, ok := want[mv]; !ok {
			diff = append(diff, fmt.Sprintf("%s is digest %s here, not recorded there", mv, d))
		} else if w != d {
			diff = append(diff, fmt.Sprintf("%s is digest %s here, %s there", mv, d, w))
		}
	}
	for mv, w := range want {
		if _, ok := got[mv]; !ok {
			diff = append(diff, fmt.Sprintf("%s is recorded there as digest %s, not a dependency here", mv, w))
		}
	}
	if len(diff) == 0 {
		return nil
	}
	sort.Strings(diff)
	return fmt.Errorf("the pin %s is recorded there with other dependencies than this operator fetched (a dependency's tag moved while another replica recorded the pin, or the record was edited): %s: refused (remove the pin's record from %s, every replica stopped, and start again to take what the tags name now)",
		rec.Ref, strings.Join(diff, "; "), from)
}

// pinRecord tells a record of a pinned reference's digest with the
// dependencies its fetch resolved.
func pinRecord(r Resolved) bool {
	ref, err := ParseRef(r.Ref)
	return err == nil && ref.Pinned() && ref.Digest == r.Digest && r.Deps != nil
}

// loadRecord reads the cluster's record.
func (s *Source) loadRecord(ctx context.Context) (pinned, error) {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	data, err := s.opts.Record.Load(ctx)
	if err != nil {
		return pinned{}, fmt.Errorf("pin record %s: %w", s.opts.Record, err)
	}
	return decodeRecord(data, "pin record "+s.opts.Record.String())
}

// saveRecord writes what serves and what was accepted to the cluster's
// record, when that changed since it was last written, or always (a
// poll: a read, and a write when the record there lost what this replica
// serves, deleted or edited meanwhile). The caller does not hold s.mu: a
// write may wait on the API server.
func (s *Source) saveRecord(ctx context.Context, always bool) error {
	if s.opts.Record == nil {
		return nil
	}
	s.saving.Lock()
	defer s.saving.Unlock()
	s.mu.Lock()
	ours := s.record()
	s.mu.Unlock()
	data, err := ours.encode()
	if err != nil || (!always && string(data) == string(s.saved)) {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	err = s.opts.Record.Update(ctx, func(old []byte) ([]byte, error) {
		p, err := decodeRecord(old, "pin record "+s.opts.Record.String())
		if err != nil {
			return nil, err
		}
		p, err = save(p, ours, s.opts.Record.String())
		if err != nil {
			return nil, err
		}
		return bounded(p, ours, s.opts.Record.String())
	})
	if err != nil {
		return fmt.Errorf("pin record %s: %w", s.opts.Record, err)
	}
	s.saved = data
	return nil
}

// maxRecordBytes bounds the cluster's record, well under a ConfigMap's
// 1 MiB: references kept for others (save) would otherwise pile up with
// every pin an administrator ever gave.
const maxRecordBytes = 512 << 10

// bounded encodes p, the record to write, within maxRecordBytes: when it
// is larger it keeps only the references of ours (what this operator
// serves and accepted), dropping those of others and of pins no longer
// given (a pin given again is then recorded at its next fetch, from the
// tags of its dependencies then); ours alone larger is an error naming
// the record.
func bounded(p, ours pinned, from string) ([]byte, error) {
	data, err := p.encode()
	if err != nil || len(data) <= maxRecordBytes {
		return data, err
	}
	for _, m := range []struct{ out, ours map[string]Resolved }{{p.Refs, ours.Refs}, {p.Accepted, ours.Accepted}} {
		for ref := range m.out {
			if _, ok := m.ours[ref]; !ok {
				delete(m.out, ref)
			}
		}
	}
	if data, err = p.encode(); err == nil && len(data) > maxRecordBytes {
		err = fmt.Errorf("%s would hold %d bytes for the references served alone, over %d: refused", from, len(data), maxRecordBytes)
	}
	return data, err
}

// recordNames names where a pin's record is, in errors.
func (s *Source) recordNames() string {
	if s.opts.Record == nil {
		return pinnedFile
	}
	return s.opts.Record.String() + " (and the module cache's " + pinnedFile + ")"
}

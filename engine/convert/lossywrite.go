package convert

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// The annotation rule when someone wrote at the version converted from:
// got, the conversion of what was written, and stored, what the
// annotation kept of the target's spec, are put together so that nothing
// the annotation kept is lost and what was written is what a read at
// that version gives again. Where the two cannot be, a write (a
// conversion to the hub, the storage version) is refused.

// maxRestoreEvals bounds the conversions restore evaluates to put a write
// and the annotation together (each one a CUE evaluation): past it, the
// write is taken as one restore cannot put together.
const maxRestoreEvals = 32

var errTooManyEvals = errors.New("more conversions than maxRestoreEvals")

// restore is got with stored restored over it, when that converts back to
// in (what was written at from). It tries the annotation over got (what
// nobody changed comes back as it was); then every field of stored that
// got holds otherwise taken from got instead (the writer's value), and
// of those only the ones the writer could see: each one whose value from
// stored still converts back to in (a field only the hub holds, which
// the writer could not change) is taken from stored again, many at once
// where they can be. A field of stored that got lacks is always kept.
// Lists are put together element by element, by index: a result with an
// element that holds both what the writer changed and values of stored
// it does not show, beside another element changed or appended (the
// values may be another element's: the writer inserted, removed or moved
// one, or the conversion orders the list otherwise), or that drops or
// changes an element of stored the writer could not see (a list the spoke
// shows filtered), is not taken, and those elements are returned as
// fault; so are, when nothing converts back to in, the fields of stored
// the write lacks that alone keep it from converting back. ok is false
// when no result is taken.
func (c *Converter) restore(got, stored, in map[string]any, from, to *template.Version) (_ map[string]any, ok bool, fault [][]any) {
	r := &restoration{c: c, got: got, stored: stored, in: in, from: from, to: to}
	old := overlay(got, stored) // what the writer read, as far as stored tells
	if r.backTo(old) {
		return old, true, nil
	}
	r.written = r.writtenFields()
	if !r.backTo(r.candidate(r.written)) {
		return nil, false, r.blocking()
	}
	// Take stored's values again, a chunk at a time, halving a chunk that
	// does not convert back to in.
	if !r.keep(append([][]any(nil), r.written...)) {
		return nil, false, nil
	}
	restored := r.candidate(r.written)
	fault = r.misplaced(old, restored)
	if fault != nil {
		return nil, false, fault
	}
	return restored, true, nil
}

// restoration is the work of one restore: the write (got), the
// annotation (stored), what was written at from (in), the conversions
// evaluated so far (evals, at most maxRestoreEvals), and the fields of
// stored still taken from got (written).
type restoration struct {
	c               *Converter
	got, stored, in map[string]any
	from, to        *template.Version
	evals           int
	written         [][]any
}

// backTo is whether spec, converted back to from, is in.
func (r *restoration) backTo(spec map[string]any) bool {
	r.evals++
	_, back, err := r.c.specPath(spec, r.to, r.from)
	return err == nil && reflect.DeepEqual(back, r.in)
}

// seen is spec converted back to from: what a writer of spec read there.
// It fails with errTooManyEvals past maxRestoreEvals.
func (r *restoration) seen(spec map[string]any) (map[string]any, error) {
	if r.evals >= maxRestoreEvals {
		return nil, errTooManyEvals
	}
	r.evals++
	_, v, err := r.c.specPath(spec, r.to, r.from)
	return v, err
}

// writtenFields are the fields of stored got holds otherwise.
func (r *restoration) writtenFields() [][]any {
	var written [][]any
	for _, p := range differing(nil, r.stored, r.got) {
		if _, has := lookup(r.got, p); has {
			written = append(written, p)
		}
	}
	return written
}

// candidate is stored, without the fields taken, merged over got.
func (r *restoration) candidate(taken [][]any) map[string]any {
	s := r.stored
	for _, p := range taken {
		s = without(s, p)
	}
	return merge(s, r.got)
}

// blocking are the fields of stored the write lacks that keep it from
// converting back, each alone: what it would drop.
func (r *restoration) blocking() [][]any {
	var fault [][]any
	for _, p := range differing(nil, r.stored, r.got) {
		if _, has := lookup(r.got, p); has || r.evals >= maxRestoreEvals {
			continue
		}
		if r.backTo(removed(r.candidate(r.written), p)) {
			fault = append(fault, p)
		}
	}
	return fault
}

// keep takes stored's values of the fields of chunk again where the
// result still converts back to in (dropping them from written), halving
// chunk when it does not. It is false when it ran past maxRestoreEvals.
func (r *restoration) keep(chunk [][]any) bool {
	if len(chunk) == 0 {
		return true
	}
	if r.evals >= maxRestoreEvals {
		return false
	}
	fewer := minus(r.written, chunk)
	if r.backTo(r.candidate(fewer)) {
		r.written = fewer
		return true
	}
	if len(chunk) == 1 {
		return true
	}
	h := len(chunk) / 2
	lo, hi := chunk[:h:h], chunk[h:]
	return r.keep(lo) && r.keep(hi)
}

// misplaced are the list elements of stored restored cannot be told to
// hold in their place (misplaced), an element dropped counting as unseen
// when old (what the writer read) without it converts to the same view.
func (r *restoration) misplaced(old, restored map[string]any) [][]any {
	var view map[string]any // what the writer read at from, when asked
	var viewErr error
	return misplaced(nil, r.stored, r.got, restored, func(list []any, i int) (bool, bool) {
		if view == nil && viewErr == nil {
			if view, viewErr = r.seen(old); viewErr == nil && view == nil {
				view = map[string]any{}
			}
		}
		if viewErr != nil {
			// What the writer read does not convert (an annotation not
			// written by a conversion): every element counts as seen.
			return false, viewErr != errTooManyEvals
		}
		v, err := r.seen(withoutElement(old, list, i))
		return err == nil && reflect.DeepEqual(v, view), err == nil
	})
}

// misplaced are the list elements of stored (at path) that restored,
// put together by index from stored and got (the write), holds otherwise
// and cannot be told to be the same element: restored's element holds
// both values of stored got holds otherwise and values of got stored
// holds otherwise (the writer changed the element and values it does not
// show were kept by index), and it is not the one element of its list
// changed in place (they may be another element's, when the writer
// inserted, removed or moved one); or stored's element is not in
// restored's list and unseen says the writer could not see it (unseen's
// second result false: it cannot be told, and the element is misplaced
// too).
func misplaced(path []any, stored, got, restored any, unseen func(list []any, i int) (bool, bool)) [][]any {
	var out [][]any
	switch s := stored.(type) {
	case map[string]any:
		r, ok := restored.(map[string]any)
		if !ok {
			return nil
		}
		g, _ := got.(map[string]any)
		for _, k := range sortedKeys(s) {
			if rv, has := r[k]; has {
				out = append(out, misplaced(append(append([]any(nil), path...), k), s[k], g[k], rv, unseen)...)
			}
		}
	case []any:
		r, ok := restored.([]any)
		if !ok {
			return nil
		}
		g, _ := got.([]any)
		// One element changed in place, the others as they were: it is
		// the same element, what the writer changed in it and the
		// values it does not show together. Elements changed beside
		// another one, or beside one appended, may be another's.
		changed := 0
		for i, se := range s {
			if i < len(r) && !reflect.DeepEqual(r[i], se) {
				changed++
			}
		}
		inPlace := changed == 1 && len(r) <= len(s)
		for i, se := range s {
			p := append(append([]any(nil), path...), i)
			if i >= len(r) || reflect.DeepEqual(r[i], se) {
				continue
			}
			if !holds(r, se) {
				if invisible, told := unseen(path, i); invisible || !told {
					out = append(out, p)
					continue
				}
			}
			var ge any
			if i < len(g) {
				ge = g[i]
			}
			if !inPlace && mixed(se, ge, r[i]) {
				out = append(out, p)
				continue
			}
			out = append(out, misplaced(p, se, ge, r[i], unseen)...)
		}
	}
	return out
}

// mixed is whether r, an element put together from s (stored) and g (the
// write), holds both a value of s that g holds otherwise or lacks and a
// value of g that s holds otherwise or lacks, recursively into structs
// (a list in it is a value of its own, which misplaced looks into).
func mixed(s, g, r any) bool {
	var fromStored, fromGot bool
	var walk func(q []any, r any)
	walk = func(q []any, r any) {
		if m, ok := r.(map[string]any); ok {
			for k, v := range m {
				walk(append(append([]any(nil), q...), k), v)
			}
			return
		}
		if _, ok := r.([]any); ok {
			return
		}
		sv, sHas := lookupAny(s, q)
		gv, gHas := lookupAny(g, q)
		isS := sHas && reflect.DeepEqual(sv, r)
		isG := gHas && reflect.DeepEqual(gv, r)
		fromStored = fromStored || isS && !isG
		fromGot = fromGot || isG && !isS
	}
	walk(nil, r)
	return fromStored && fromGot
}

// lookupAny is lookup in a value that may not be a struct.
func lookupAny(v any, path []any) (any, bool) {
	if len(path) == 0 {
		return v, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	return lookup(m, path)
}

// holds is whether list has an element e.
func holds(list []any, e any) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, e) {
			return true
		}
	}
	return false
}

// minus is paths without those of drop.
func minus(paths, drop [][]any) [][]any {
	dropped := make(map[string]bool, len(drop))
	for _, d := range drop {
		dropped[pathText(d)] = true
	}
	var out [][]any
	for _, p := range paths {
		if !dropped[pathText(p)] {
			out = append(out, p)
		}
	}
	return out
}

// removed is m without the value at path, a list's element removed from
// the list; m is not modified.
func removed(m map[string]any, path []any) map[string]any {
	if i, ok := path[len(path)-1].(int); ok {
		return withoutElement(m, path[:len(path)-1], i)
	}
	return without(m, path)
}

// withoutElement returns m with the list at path lacking its element i;
// m is not modified.
func withoutElement(m map[string]any, path []any, i int) map[string]any {
	var rm func(v any, path []any) any
	rm = func(v any, path []any) any {
		if len(path) == 0 {
			l, ok := v.([]any)
			if !ok || i >= len(l) {
				return v
			}
			return append(append([]any(nil), l[:i]...), l[i+1:]...)
		}
		switch v := v.(type) {
		case map[string]any:
			k, ok := path[0].(string)
			if !ok {
				return v
			}
			out := make(map[string]any, len(v))
			for kk, vv := range v {
				out[kk] = vv
			}
			if e, has := v[k]; has {
				out[k] = rm(e, path[1:])
			}
			return out
		case []any:
			j, ok := path[0].(int)
			if !ok || j >= len(v) {
				return v
			}
			out := append([]any(nil), v...)
			out[j] = rm(v[j], path[1:])
			return out
		}
		return v
	}
	return rm(m, path).(map[string]any)
}

// merge returns a with what it lacks taken from b, recursively into
// structs and lists: a list keeps the elements of b's past its own
// length, and its elements are merged with b's at the same index. What a
// holds wins.
func merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, bv := range b {
		av, has := out[k]
		if !has {
			out[k] = bv
			continue
		}
		out[k] = mergeValue(av, bv)
	}
	return out
}

func mergeValue(a, b any) any {
	switch a := a.(type) {
	case nil: // a list's element taken out (without)
		return b
	case map[string]any:
		if bm, ok := b.(map[string]any); ok {
			return merge(a, bm)
		}
	case []any:
		bl, ok := b.([]any)
		if !ok {
			return a
		}
		out := make([]any, 0, max(len(a), len(bl)))
		for i, e := range a {
			if i < len(bl) {
				e = mergeValue(e, bl[i])
			}
			out = append(out, e)
		}
		if len(bl) > len(a) {
			out = append(out, bl[len(a):]...)
		}
		return out
	}
	return a
}

// LossyWriteError refuses a write at a spoke that cannot be stored at the
// hub without dropping what only the hub holds (kept for the spoke's
// readers in the annotation cueop.dev/conversion.<hub>), or without
// storing something else than what the writer said: the two cannot be
// told apart, so nothing is stored. The writer gets it from the API
// server, naming the fields and the version to write at.
type LossyWriteError struct {
	From, Hub string
	// Fields are the spec paths of the hub's the write would change or
	// drop (spec.backups[1]).
	Fields []string
}

func (e *LossyWriteError) Error() string {
	return fmt.Sprintf("a write at %s cannot be stored at %s without dropping or changing %s, which %s holds beyond what %s shows (kept by the annotation %s%s): write it at %s",
		e.From, e.Hub, strings.Join(e.Fields, ", "), e.Hub, e.From, wellknown.AnnotationConversionPrefix, e.Hub, e.Hub)
}

// refuseLossyWrite refuses a write at from that restore could not put
// together with the hub's annotation (stored). It names the fields at
// fault restore found (the list elements it cannot tell to be the same,
// the fields the write lacks that keep it from converting back), else the
// fields of stored that got lacks, else every field of stored that got
// holds otherwise.
func (c *Converter) refuseLossyWrite(got, stored map[string]any, fault [][]any, from, hub *template.Version) error {
	var fields, dropped, changed []string
	for _, p := range fault {
		fields = append(fields, pathText(p))
	}
	if len(fields) == 0 {
		for _, p := range differing(nil, stored, got) {
			if _, has := lookup(got, p); has {
				changed = append(changed, pathText(p))
			} else {
				dropped = append(dropped, pathText(p))
			}
		}
		fields = dropped
		if len(fields) == 0 {
			fields = changed
		}
	}
	if len(fields) > 10 {
		fields = append(fields[:10], fmt.Sprintf("and %d more", len(fields)-10))
	}
	if len(fields) == 0 {
		fields = []string{"spec"}
	}
	return &LossyWriteError{From: from.Name, Hub: hub.Name, Fields: fields}
}

// differing are the paths (field names and list indices) of the values of
// want that got does not hold alike, recursively into structs and lists,
// in order.
func differing(path []any, want, got map[string]any) [][]any {
	var out [][]any
	for _, k := range sortedKeys(want) {
		p := append(append([]any(nil), path...), k)
		g, has := got[k]
		if !has {
			out = append(out, p)
			continue
		}
		out = append(out, differingValue(p, want[k], g)...)
	}
	return out
}

func differingValue(p []any, w, g any) [][]any {
	if reflect.DeepEqual(w, g) {
		return nil
	}
	switch w := w.(type) {
	case map[string]any:
		if gm, ok := g.(map[string]any); ok {
			return differing(p, w, gm)
		}
	case []any:
		gl, ok := g.([]any)
		if !ok {
			break
		}
		var out [][]any
		for i, e := range w {
			q := append(append([]any(nil), p...), i)
			if i >= len(gl) {
				out = append(out, q)
				continue
			}
			out = append(out, differingValue(q, e, gl[i])...)
		}
		return out
	}
	return [][]any{p}
}

// lookup is the value at path in m.
func lookup(m map[string]any, path []any) (any, bool) {
	var v any = m
	for _, s := range path {
		switch s := s.(type) {
		case string:
			mm, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = mm[s]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				return nil, false
			}
			v = l[s]
		}
	}
	return v, true
}

// without returns m without the value at path (a list's element set to
// nothing: the merge then takes the other side's); m is not modified.
func without(m map[string]any, path []any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	k := path[0].(string)
	if len(path) == 1 {
		delete(out, k)
		return out
	}
	if v, ok := withoutValue(out[k], path[1:]); ok {
		out[k] = v
	}
	return out
}

func withoutValue(v any, path []any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := path[0].(string); ok {
			return without(v, path), true
		}
	case []any:
		i, ok := path[0].(int)
		if !ok || i >= len(v) {
			return nil, false
		}
		out := append([]any(nil), v...)
		if len(path) == 1 {
			out[i] = nil
			return out, true
		}
		e, ok := withoutValue(out[i], path[1:])
		if ok {
			out[i] = e
		}
		return out, ok
	}
	return nil, false
}

// pathText is path as a spec field path: spec.backups[1].retention.
func pathText(path []any) string {
	var b strings.Builder
	b.WriteString("spec")
	for _, s := range path {
		switch s := s.(type) {
		case string:
			b.WriteString("." + s)
		case int:
			b.WriteString("[" + strconv.Itoa(s) + "]")
		}
	}
	return b.String()
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package convert

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/cueop/cueop/engine/template"
)

// The annotation rule when someone wrote at the version converted from:
// got, the conversion of what was written, and stored, what the
// annotation kept of the target's spec, are put together so that nothing
// the annotation kept is lost and what was written is what a read at
// that version gives again. Where the two cannot be, a write (a
// conversion to the hub, the storage version) is refused.

// maxRestoreFields bounds the fields of the annotation tried one by one.
const maxRestoreFields = 64

// restore is got with stored restored over it, when that converts back to
// in (what was written at from). It tries the annotation over got (what
// nobody changed comes back as it was); then every field of stored that
// got holds otherwise taken from got instead (the writer's value), and
// of those only the ones the writer could see: each one whose value from
// stored still converts back to in (a field only the hub holds, which
// the writer could not change) is taken from stored again. A field of
// stored that got lacks is always kept. ok is false when none converts
// back to in.
func (c *Converter) restore(got, stored, in map[string]any, from, to *template.Version) (map[string]any, bool) {
	backTo := func(spec map[string]any) bool {
		_, back, err := c.specPath(spec, to, from)
		return err == nil && reflect.DeepEqual(back, in)
	}
	if restored := overlay(got, stored); backTo(restored) {
		return restored, true
	}
	var written [][]any // fields of stored got holds otherwise
	for _, p := range differing(nil, stored, got) {
		if _, has := lookup(got, p); has {
			written = append(written, p)
		}
	}
	if len(written) > maxRestoreFields {
		return nil, false
	}
	candidate := func(taken [][]any) map[string]any {
		s := stored
		for _, p := range taken {
			s = without(s, p)
		}
		return merge(s, got)
	}
	if !backTo(candidate(written)) {
		return nil, false
	}
	for i := 0; i < len(written); {
		fewer := append(append([][]any(nil), written[:i]...), written[i+1:]...)
		if backTo(candidate(fewer)) {
			written = fewer
			continue
		}
		i++
	}
	return candidate(written), true
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
		e.From, e.Hub, strings.Join(e.Fields, ", "), e.Hub, e.From, AnnotationPrefix, e.Hub, e.Hub)
}

// refuseLossyWrite refuses a write at from that restore could not put
// together with the hub's annotation (stored). It names the fields of
// stored that got lacks (the write would drop them), else every field of
// stored that got holds otherwise.
func (c *Converter) refuseLossyWrite(got, stored, in map[string]any, from, hub *template.Version) error {
	var dropped, changed []string
	for _, p := range differing(nil, stored, got) {
		if _, has := lookup(got, p); has {
			changed = append(changed, pathText(p))
		} else {
			dropped = append(dropped, pathText(p))
		}
	}
	fields := dropped
	if len(fields) == 0 {
		fields = changed
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

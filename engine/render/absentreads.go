package render

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/template"
)

// AbsentRead is a read of a template's outputs (template.Outputs) of a field
// that no object of the child's kind has, by the built-in kinds' schemas:
// it never finds a value, so what it computes keeps its default.
type AbsentRead struct {
	template.ObservedRead
	Kind schema.GroupVersionKind
}

// String is "app.cue:9:25: " and the read's Sentence.
func (a AbsentRead) String() string { return template.ShortPos(a.Pos) + ": " + a.Sentence() }

// Sentence is "status.readyReplicas reads
// observed.deployment.status.readyReplica, which Deployment apps/v1 does
// not have", with "(through _x)" after a read reached through _x.
func (a AbsentRead) Sentence() string {
	via := ""
	if a.Via != "" {
		via = " (through " + a.Via + ")"
	}
	return fmt.Sprintf("%s reads %s%s, which %s %s does not have", a.In, a.Read(), via, a.Kind.Kind, a.Kind.GroupVersion())
}

// AbsentReads are the reads of reads whose child, of the kind kinds names
// by id, has no such field. A read of a child whose kind is not known, or
// has no built-in schema, is not one.
func AbsentReads(reads []template.ObservedRead, kinds map[string]schema.GroupVersionKind) []AbsentRead {
	var out []AbsentRead
	for _, r := range reads {
		gvk, ok := kinds[r.ID]
		if ok && len(r.Path) > 0 && !HasField(gvk, r.Path) {
			out = append(out, AbsentRead{ObservedRead: r, Kind: gvk})
		}
	}
	return out
}

// LoadWarnings are the absent reads of k's outputs, once per position, for
// the children whose kind the template gives without a CR: what the
// operator warns of when it loads a revision.
func LoadWarnings(k *template.Kind) []string {
	if k.Outputs == nil {
		return nil
	}
	return warnings(AbsentReads(k.Outputs.Reads, k.Outputs.Children), nil)
}

// ReadWarnings are, for `cueop vet`, the absent reads of the status,
// conditions and ready of k (GateWarnings covers readyWhen), once per
// position, for the children of the render of in and those whose kind the
// template gives without a CR. A render that fails has none.
func ReadWarnings(in Inputs, opts Options) []string {
	if in.Kind.Outputs == nil {
		return nil
	}
	res, err := RenderInputs(in, opts)
	if err != nil {
		return nil
	}
	return ReadWarningsOf(in.Kind, res.Children)
}

// ReadWarningsOf is ReadWarnings of children, those of a render of k
// already made (by an Evaluator elsewhere).
func ReadWarningsOf(k *template.Kind, children []Child) []string {
	if k.Outputs == nil {
		return nil
	}
	kinds := map[string]schema.GroupVersionKind{}
	for id, gvk := range k.Outputs.Children {
		kinds[id] = gvk
	}
	for _, c := range children {
		kinds[c.ID] = c.Object.GroupVersionKind()
	}
	return warnings(AbsentReads(k.Outputs.Reads, kinds), func(r template.ObservedRead) bool { return r.Root() != template.FieldReadyWhen })
}

// ReadyAbsent are the absent reads that Ready depends on, for the children
// rendered, once per position: those of the template's ready, or, where the
// render took Ready by default (byDefault: the template gave none for this
// parent), of the readyWhen of the children rendered (the default ready
// needs every child ready).
func ReadyAbsent(k *template.Kind, children []Child, byDefault bool) []AbsentRead {
	if k.Outputs == nil || len(k.Outputs.Reads) == 0 {
		return nil
	}
	kinds := map[string]schema.GroupVersionKind{}
	for _, c := range children {
		kinds[c.ID] = c.Object.GroupVersionKind()
	}
	root := template.FieldReadyWhen
	if k.Outputs.Ready && !byDefault {
		root = template.FieldReady
	}
	var reads []template.ObservedRead
	seen := map[token.Pos]bool{}
	for _, r := range k.Outputs.Reads {
		if r.Root() != root || seen[r.Pos] {
			continue
		}
		if _, id, split := strings.Cut(r.In, "."); root == template.FieldReadyWhen && split {
			if _, rendered := kinds[id]; !rendered {
				continue // the gate of a child not rendered
			}
		}
		seen[r.Pos] = true
		reads = append(reads, r)
	}
	return AbsentReads(reads, kinds)
}

// AbsentMayBlock reports whether the absent reads may be what keeps Ready
// false: every child each read names is observed, and every child rendered
// is otherwise ready (observed, and ready by its readyWhen, or by kstatus
// where it gives none or its readyWhen is one with an absent read). Before
// then the children are what Ready waits for.
func AbsentMayBlock(absent []AbsentRead, children []Child, observed map[string]*unstructured.Unstructured) bool {
	gated := map[string]bool{}
	for _, a := range absent {
		if observed[a.ID] == nil {
			return false
		}
		if _, id, split := strings.Cut(a.In, "."); a.Root() == template.FieldReadyWhen && split {
			gated[id] = true
		}
	}
	others := make([]Child, len(children))
	for i, c := range children {
		if gated[c.ID] {
			c.ReadyWhen = nil
		}
		others[i] = c
	}
	return defaultReady(others, observed)
}

// warnings formats the reads that keep says to keep, one per position, in
// order: a field's own read rather than one through it.
func warnings(reads []AbsentRead, keep func(template.ObservedRead) bool) []string {
	var order []string
	best := map[string]AbsentRead{}
	for _, r := range reads {
		if keep != nil && !keep(r.ObservedRead) {
			continue
		}
		pos := template.ShortPos(r.Pos)
		b, seen := best[pos]
		if !seen {
			order = append(order, pos)
		}
		if !seen || b.Via != "" && r.Via == "" {
			best[pos] = r
		}
	}
	out := make([]string, len(order))
	for i, pos := range order {
		out[i] = best[pos].String()
	}
	return out
}

// hasFieldCache holds HasField's answers by kind and path.
var hasFieldCache sync.Map

// HasField reports whether objects of kind gvk may have the field at path,
// by the built-in schemas; true for a kind with none.
func HasField(gvk schema.GroupVersionKind, path []string) bool {
	key := gvk.String() + "\x00" + strings.Join(path, "\x00")
	if v, ok := hasFieldCache.Load(key); ok {
		return v.(bool)
	}
	obj, ok := probeValue(path).(map[string]any)
	probe := &unstructured.Unstructured{Object: obj}
	probe.SetGroupVersionKind(gvk)
	has := true
	if ok && kschema.Known(probe) {
		_, err := kschema.Typed(probe)
		has = err == nil || errors.Is(err, kschema.ErrUnknownKind) || !strings.Contains(err.Error(), "not declared in schema")
	}
	hasFieldCache.Store(key, has)
	return has
}

// probeValue is the value that has the field at path, null, and nothing
// else: a list of one element at each template.Elem.
func probeValue(path []string) any {
	switch {
	case len(path) == 0:
		return nil
	case path[0] == template.Elem:
		return []any{probeValue(path[1:])}
	}
	return map[string]any{path[0]: probeValue(path[1:])}
}

// What the engine asks of a Result beyond its objects: each child's wave
// and readiness (waves, readyWhen, and the cycles between them), its
// policy (recreate, cascade, prune, onDelete, adopt) and whether its kind
// holds data; the template's own conditions; the immutable spec values to
// record in status; and the reads of a field no object of a child's kind
// has (absent reads), with the warnings `cueop vet` and the operator give
// of them and of wave gates that never open.
//
// It must not act on a child: it says what the reconciler may do (in
// which wave, whether to prune, release, recreate or adopt) and the
// reconciler does it.

package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// applyWaves reads the template's waves and readyWhen, checks that each
// names a rendered child, and gives each child its wave and readiness. A
// kind without waves is left as it is.
func applyWaves(k *template.Kind, v cue.Value, children []Child, observed map[string]*unstructured.Unstructured) error {
	if !k.Waves && !k.ReadyWhen {
		return nil
	}
	byID := make(map[string]*Child, len(children))
	for i := range children {
		byID[children[i].ID] = &children[i]
	}
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	if wv := v.LookupPath(template.PathWaves); wv.Exists() {
		bad.Messages = append(bad.Messages, setWaves(wv, byID)...)
	}
	if rv := v.LookupPath(template.PathReadyWhen); rv.Exists() {
		bad.Messages = append(bad.Messages, setReadyWhen(rv, byID, observed)...)
		bad.Messages = append(bad.Messages, waveCycles(rv, byID)...)
	}
	if len(bad.Messages) > 0 {
		return bad
	}
	for i := range children {
		annotateWave(&children[i])
	}
	return nil
}

func setWaves(wv cue.Value, byID map[string]*Child) []string {
	if err := wv.Validate(cue.Concrete(true)); err != nil {
		return evalError(err).Messages
	}
	return eachRendered(wv, byID, template.FieldWaves, "write the wave under the same condition as its child", func(id string, v cue.Value, c *Child) []string {
		n, err := v.Int64()
		if err != nil {
			return []string{entryError(template.FieldWaves, id, v, "%v", err)}
		}
		c.Wave = int(n)
		return nil
	})
}

// setReadyWhen evaluates each readiness expression. A child not observed
// yet is not ready, and so is one whose expression is incomplete (a status
// field not written yet).
func setReadyWhen(rv cue.Value, byID map[string]*Child, observed map[string]*unstructured.Unstructured) []string {
	return eachRendered(rv, byID, template.FieldReadyWhen, "write it under the same condition as its child", func(id string, v cue.Value, c *Child) []string {
		ready := false
		c.ReadyWhen = &ready
		if observed[id] == nil {
			return nil
		}
		b, err := v.Bool()
		if err != nil && v.Validate(cue.Concrete(true)) != nil && v.Validate() == nil {
			return nil // incomplete: not ready yet
		}
		if err != nil {
			return evalError(err).Messages
		}
		ready = b
		return nil
	})
}

// eachRendered calls set, in the order of their ids, with each entry of
// the template's field (v, a struct by child id) and the rendered child it
// names, and returns the messages set returns; an entry that names no
// rendered child is an error, that says how to fix it.
func eachRendered(v cue.Value, byID map[string]*Child, field, fix string, set func(id string, v cue.Value, c *Child) []string) []string {
	ids, vals, err := sortedIDs(v)
	if err != nil {
		return []string{err.Error()}
	}
	var msgs []string
	for _, id := range ids {
		c := byID[id]
		if c == nil {
			msgs = append(msgs, entryError(field, id, vals[id], "no child %q is rendered: %s", id, fix))
			continue
		}
		msgs = append(msgs, set(id, vals[id], c)...)
	}
	return msgs
}

// annotateWave records a child's wave on it when it is not 0, and removes
// an annotation of that name the template wrote.
func annotateWave(c *Child) {
	ann := c.Object.GetAnnotations()
	if _, has := ann[wellknown.AnnotationWave]; !has && c.Wave == 0 {
		return
	}
	if ann == nil {
		ann = map[string]string{}
	}
	delete(ann, wellknown.AnnotationWave)
	if c.Wave != 0 {
		ann[wellknown.AnnotationWave] = strconv.Itoa(c.Wave)
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object.Object, "metadata", "annotations")
		return
	}
	c.Object.SetAnnotations(ann)
}

// WaveOf is the wave recorded on a live child (0 when none).
func WaveOf(o *unstructured.Unstructured) int {
	n, err := strconv.Atoi(o.GetAnnotations()[wellknown.AnnotationWave])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// WaveGaps says, for vet, which waves between 0 and the highest one
// rendered have no child: a wave number the author likely mistyped.
func WaveGaps(children []Child) error {
	used := map[int]bool{}
	highest := 0
	for _, c := range children {
		used[c.Wave] = true
		highest = max(highest, c.Wave)
	}
	for w := 0; w < highest; w++ {
		if !used[w] {
			return fmt.Errorf("waves: no child is in wave %d, below wave %d: number the waves from 0 without gaps", w, highest)
		}
	}
	return nil
}

// entryError is the message of an error of the entry id of the template's
// field (waves, readyWhen, policies, references): at the position where
// the template writes its value v, when it has one.
func entryError(field, id string, v cue.Value, format string, args ...any) string {
	msg := fmt.Sprintf("%s.%s: %s", field, id, fmt.Sprintf(format, args...))
	if p := authorPos(v); p.IsValid() {
		return template.ShortPos(p) + ": " + msg
	}
	return msg
}

// waveCycles refuses a readiness expression that reads, directly, the
// observed state of a child of a later wave: that child is applied only
// once this one is ready, so neither ever is. (Reads through other fields
// are not followed.)
func waveCycles(rv cue.Value, byID map[string]*Child) []string {
	ids, vals, err := sortedIDs(rv)
	if err != nil {
		return nil
	}
	var msgs []string
	for _, id := range ids {
		c := byID[id]
		if c == nil {
			continue
		}
		for _, dep := range observedReads(vals[id]) {
			d := byID[dep]
			if d == nil || d.Wave <= c.Wave {
				continue
			}
			msgs = append(msgs, entryError(template.FieldReadyWhen, id, vals[id],
				"reads observed.%s, a child of wave %d, which is applied only once %s (wave %d) is ready: a cycle", dep, d.Wave, id, c.Wave))
		}
	}
	return msgs
}

// observedReads are the child ids v's source reads as observed.<id> or
// observed["<id>"].
func observedReads(v cue.Value) []string {
	var out []string
	for _, src := range sources(v) {
		ast.Walk(src, func(n ast.Node) bool {
			if id := observedID(n); id != "" {
				out = append(out, id)
			}
			return true
		}, nil)
	}
	return out
}

func observedID(n ast.Node) string {
	switch e := n.(type) {
	case *ast.SelectorExpr:
		if isObserved(e.X) {
			name, _, _ := ast.LabelName(e.Sel)
			return name
		}
	case *ast.IndexExpr:
		if lit, ok := e.Index.(*ast.BasicLit); ok && lit.Kind == token.STRING && isObserved(e.X) {
			s, err := strconv.Unquote(lit.Value)
			if err == nil {
				return s
			}
		}
	}
	return ""
}

func isObserved(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == template.FieldObserved
}

// sources are the template's source expressions of v, through the
// conjunction a contract makes of it.
func sources(v cue.Value) []ast.Node {
	if op, args := v.Expr(); op == cue.AndOp {
		var out []ast.Node
		for _, a := range args {
			out = append(out, sources(a)...)
		}
		return out
	}
	if src := v.Source(); src != nil {
		if f, ok := src.(*ast.Field); ok {
			return []ast.Node{f.Value}
		}
		return []ast.Node{src}
	}
	return nil
}

// Policy is what the engine may do to one child beyond applying it, as the
// template's `policies` says, defaults filled.
type Policy struct {
	// Recreate allows deleting and recreating the child when the API server
	// refuses a change as immutable. Without it such a change stalls the CR.
	Recreate bool `json:"recreate,omitempty"`
	// Cascade is how the child's dependents fare when it is deleted to be
	// recreated: CascadeOrphan (they stay, and the new object adopts those
	// its selector matches) or CascadeBackground (they are deleted with it).
	Cascade string `json:"cascade,omitempty"`
	// Prune is PruneAlways (a child the template stops rendering is
	// deleted) or PruneNever (it is released: left in place, no longer
	// owned by cueop).
	Prune string `json:"prune,omitempty"`
	// OnDelete is OnDeleteDelete (the child goes with its CR) or
	// OnDeleteRetain (it is released when its CR is deleted).
	OnDelete string `json:"onDelete,omitempty"`
	// Adopt is which existing object of the child's name that the CR does
	// not control it may take over (AdoptNever and the others).
	Adopt string `json:"adopt,omitempty"`
}

// Policy values.
const (
	CascadeOrphan     = "orphan"
	CascadeBackground = "background"
	PruneAlways       = "always"
	PruneNever        = "never"
	OnDeleteDelete    = "delete"
	OnDeleteRetain    = "retain"
)

// The engine's defaults: Pods exist to be replaced and are recreated on an
// immutable change unless the template says otherwise (deleted in the
// background: a Pod has no dependents, and an orphaning delete would wait
// for the garbage collector); a PersistentVolumeClaim holds data and is
// never recreated, whatever the template says. Every other kind stalls its
// CR unless opted in, and is then recreated with its dependents orphaned.
// A data kind (Options.DataKinds) is released, not deleted, on prune and
// with its CR unless the template says prune: "always" or onDelete:
// "delete".
var (
	recreatedByDefault = map[schema.GroupKind]bool{{Kind: "Pod"}: true}
	neverRecreated     = map[schema.GroupKind]bool{{Kind: "PersistentVolumeClaim"}: true}
)

// DefaultPolicy is the policy of a child of kind gk that the template gives
// none, where data lists the data kinds (nil: DefaultDataKinds).
func DefaultPolicy(gk schema.GroupKind, data KindSet) Policy {
	p := Policy{Recreate: recreatedByDefault[gk], Cascade: CascadeOrphan, Prune: PruneAlways, OnDelete: OnDeleteDelete, Adopt: AdoptReleased}
	if p.Recreate {
		p.Cascade = CascadeBackground
	}
	if dataKinds(data)[gk] {
		p.Prune, p.OnDelete = PruneNever, OnDeleteRetain
	}
	return p
}

// Recreatable is false for the kinds the engine never recreates, whatever
// the template says.
func Recreatable(gk schema.GroupKind) bool { return !neverRecreated[gk] }

// applyPolicies reads the template's policies, checks that each names a
// rendered child and suits it, and gives each child its policy and the
// annotations that carry it.
func applyPolicies(v cue.Value, children []Child, data KindSet) error {
	pv := v.LookupPath(template.PathPolicies)
	if !pv.Exists() {
		for i := range children {
			children[i].Policy = DefaultPolicy(children[i].Object.GroupVersionKind().GroupKind(), data)
			annotatePolicy(&children[i], data)
		}
		return nil
	}
	if err := pv.Validate(cue.Concrete(true)); err != nil {
		return evalError(err)
	}
	ids, vals, err := sortedIDs(pv)
	if err != nil {
		return err
	}
	byID := make(map[string]*Child, len(children))
	for i := range children {
		c := &children[i]
		c.Policy = DefaultPolicy(c.Object.GroupVersionKind().GroupKind(), data)
		byID[c.ID] = c
	}
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	for _, id := range ids {
		if msg := setPolicy(id, vals[id], byID[id]); msg != "" {
			bad.Messages = append(bad.Messages, msg)
		}
	}
	if len(bad.Messages) > 0 {
		return bad
	}
	for i := range children {
		annotatePolicy(&children[i], data)
	}
	return nil
}

// setPolicy decodes the policy of child c over its defaults, or says why it
// is refused.
func setPolicy(id string, v cue.Value, c *Child) string {
	if c == nil {
		return entryError("policies", id, v, "no child %q is rendered: write the policy under the same condition as its child", id)
	}
	if err := v.Decode(&c.Policy); err != nil {
		return entryError("policies", id, v, "%v", err)
	}
	gk := c.Object.GroupVersionKind().GroupKind()
	if c.Policy.Recreate && neverRecreated[gk] {
		return entryError("policies", id, v, "recreate: a %s is never recreated: its data would be lost", gk.Kind)
	}
	if cv := v.LookupPath(cue.ParsePath("cascade")); cv.Exists() && !c.Policy.Recreate {
		return entryError("policies", id, cv, "cascade applies only to a child with recreate: true")
	}
	return ""
}

// annotatePolicy records on c the parts of its policy that act on live
// objects, and removes annotations of the same names the template wrote. A
// child of a kind that holds no data, with the default policy and none of
// these annotations, the common case, is left as it is.
func annotatePolicy(c *Child, data KindSet) {
	md, _ := c.Object.Object["metadata"].(map[string]any)
	raw, _ := md["annotations"].(map[string]any)
	_, hasPrune := raw[wellknown.AnnotationPrune]
	_, hasOnDelete := raw[wellknown.AnnotationOnDelete]
	isData := dataKinds(data)[c.Object.GroupVersionKind().GroupKind()]
	if !isData && !hasPrune && !hasOnDelete && c.Policy.Prune == PruneAlways && c.Policy.OnDelete == OnDeleteDelete {
		return
	}
	ann := c.Object.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	delete(ann, wellknown.AnnotationPrune)
	delete(ann, wellknown.AnnotationOnDelete)
	if isData || c.Policy.Prune != PruneAlways {
		ann[wellknown.AnnotationPrune] = c.Policy.Prune
	}
	if isData || c.Policy.OnDelete != OnDeleteDelete {
		ann[wellknown.AnnotationOnDelete] = c.Policy.OnDelete
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object.Object, "metadata", "annotations")
		return
	}
	c.Object.SetAnnotations(ann)
}

// Values of a child's adopt policy (policies: [id]: adopt): which existing
// object of the child's name, that the CR does not control, the controller
// may take over (apply over it, which sets the CR's controller reference).
// An object another controller owns is never taken over, whatever the
// policy: the CR stalls with ChildConflict (reconcile/converge.go).
const (
	// AdoptNever takes over nothing.
	AdoptNever = "never"
	// AdoptReleased, the default, takes over an object with no controller
	// that cueop released from a CR of the same kind, namespace and name
	// (its cueop.dev/released-from annotation names that CR, and its
	// cueop.dev/release-proof proves that cueop wrote it): a child
	// retained, or left by prune: never, and rendered again by a CR of
	// that name.
	AdoptReleased = "released"
	// AdoptUncontrolled takes over any object with no controller (one
	// created by hand, or by a tool that sets no owner).
	AdoptUncontrolled = "uncontrolled"
)

// DefaultDataKinds are the kinds whose objects hold data that deleting them
// destroys. As a StatefulSet's claims are retained unless its
// persistentVolumeClaimRetentionPolicy says Delete, a child of a data kind
// is released (left in place, no longer owned) when the template stops
// rendering it and when its CR is deleted, unless the template says prune:
// "always" or onDelete: "delete" for it. An administrator lists more (a
// database CRD's kind) with --data-kinds.
const DefaultDataKinds = "PersistentVolumeClaim"

var defaultData = MustKindSet(DefaultDataKinds)

func dataKinds(set KindSet) KindSet {
	if set == nil {
		return defaultData
	}
	return set
}

// IsDataKind says whether objects of live's kind hold data.
func (o Options) IsDataKind(live *unstructured.Unstructured) bool {
	return dataKinds(o.DataKinds)[live.GroupVersionKind().GroupKind()]
}

// LivePolicy is the prune and onDelete policy of live, a child that exists,
// which the template may no longer render: the policy recorded on it
// (wellknown.AnnotationPrune, wellknown.AnnotationOnDelete), else its kind's default. A child
// of a data kind whose annotations never reached it (an apply that failed,
// a child held back by its wave, a CR that skipped the revision that set
// them) is released, never deleted.
func (o Options) LivePolicy(live *unstructured.Unstructured) Policy {
	p := Policy{Prune: PruneAlways, OnDelete: OnDeleteDelete}
	if o.IsDataKind(live) {
		p.Prune, p.OnDelete = PruneNever, OnDeleteRetain
	}
	ann := live.GetAnnotations()
	if v := ann[wellknown.AnnotationPrune]; v == PruneAlways || v == PruneNever {
		p.Prune = v
	}
	if v := ann[wellknown.AnnotationOnDelete]; v == OnDeleteDelete || v == OnDeleteRetain {
		p.OnDelete = v
	}
	return p
}

// Condition is one of the template's own conditions (`conditions`), for
// the controller to merge into status.conditions with its transition time
// and observed generation.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"` // "True", "False" or "Unknown"
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// exportConditions evaluates the template's conditions, sorted by type. A
// type cueop writes itself (Ready, Reconciling, Stalled), a type that is
// not a qualified name or a value that is not concrete is a TemplateError
// at the condition's position.
func exportConditions(k *template.Kind, v cue.Value) ([]Condition, error) {
	if !k.Conditions {
		return nil, nil
	}
	cv := v.LookupPath(template.PathConditions)
	if !cv.Exists() {
		return nil, nil
	}
	if err := cv.Validate(cue.Concrete(true)); err != nil {
		return nil, evalError(err)
	}
	types, vals, err := sortedIDs(cv)
	if err != nil {
		return nil, err
	}
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	out := make([]Condition, 0, len(types))
	for _, t := range types {
		c, msg := condition(t, vals[t])
		if msg != "" {
			bad.Messages = append(bad.Messages, entryError(template.FieldConditions, t, vals[t], "%s", msg))
			continue
		}
		out = append(out, c)
	}
	if len(bad.Messages) > 0 {
		return nil, bad
	}
	return out, nil
}

// condition decodes one condition, or says what is wrong with it.
func condition(t string, v cue.Value) (Condition, string) {
	if template.IsEngineCondition(t) {
		return Condition{}, t + " is written by cueop (types are matched ignoring case); give the template's condition another type"
	}
	if errs := validation.IsQualifiedName(t); len(errs) > 0 {
		return Condition{}, fmt.Sprintf("type %q is not a qualified name: %s", t, strings.Join(errs, "; "))
	}
	var raw struct {
		Status  any    `json:"status"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if err := v.Decode(&raw); err != nil {
		return Condition{}, err.Error()
	}
	c := Condition{Type: t, Reason: raw.Reason, Message: raw.Message}
	switch s := raw.Status.(type) {
	case bool:
		c.Status = "False"
		if s {
			c.Status = "True"
		}
	case string:
		c.Status = s
	}
	return c, ""
}

// StatusImmutable is where the controller records the immutable fields'
// values.
const StatusImmutable = template.StatusImmutable

// immutableValues checks the parent's immutable spec fields against the
// values recorded in its status, and returns the values to record. A field
// whose value changed, or that was removed, since it was recorded is
// refused (InvalidSpec): the CRD refuses such a change at admission, but not
// for a CR created, or changed, while its CRD had no rule yet. A field set
// for the first time is recorded. v is the template filled with parent.
func immutableValues(k *template.Kind, parent *unstructured.Unstructured, v cue.Value) (map[string]any, error) {
	if len(k.Immutable) == 0 {
		return nil, nil
	}
	recorded, _, _ := unstructured.NestedMap(parent.Object, "status", StatusImmutable)
	spec := v.LookupPath(template.PathParentSpec)
	out := map[string]any{}
	var bad []string
	for _, f := range k.Immutable {
		key := f.Key()
		old, had := recorded[key]
		fv := spec.LookupPath(cue.MakePath(selectors(f.Path)...))
		if !fv.Exists() {
			if had {
				bad = append(bad, immutableMessage(f, old, nil))
			}
			continue
		}
		now, err := jsonValue(fv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if had && !sameJSON(old, now) {
			bad = append(bad, immutableMessage(f, old, now))
			continue
		}
		out[key] = now
	}
	if len(bad) > 0 {
		return nil, &Error{Reason: wellknown.ReasonInvalidSpec, Messages: bad}
	}
	return out, nil
}

// jsonValue is v as a JSON value of the kinds unstructured objects hold
// (numbers as json.Number).
func jsonValue(v cue.Value) (any, error) {
	if d, ok := v.Default(); ok {
		v = d
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	return out, d.Decode(&out)
}

func selectors(path []string) []cue.Selector {
	out := make([]cue.Selector, len(path))
	for i, p := range path {
		out[i] = cue.Str(p)
	}
	return out
}

func immutableMessage(f template.ImmutableField, old, now any) string {
	was, _ := json.Marshal(old)
	change := "removed"
	if now != nil {
		b, _ := json.Marshal(now)
		change = "changed to " + string(b)
	}
	return fmt.Sprintf("%s: is immutable: it was %s when first rendered, %s (template %s)",
		f.Key(), was, change, template.ShortPos(f.Pos))
}

// sameJSON compares two values as JSON, so that int64 and float64 from the
// API server and CUE's decoded numbers compare by value.
func sameJSON(a, b any) bool {
	var x, y any
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ab, &x) != nil || json.Unmarshal(bb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

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

// GateWarnings says, for `cueop vet`, where a wave gate can never open in
// the render of in: a readiness expression (readyWhen) that reads, through
// other fields (waveCycles refuses a direct read), a child of a later wave,
// which is applied only once this child is ready; or that reads a field no
// object of the child's kind has (by the built-in kinds' schemas), so that
// it never becomes true. Each warning starts with the CUE position of the
// read. A render that fails has no warnings: vet reports its error.
func GateWarnings(in Inputs, opts Options) []string {
	if !in.Kind.ReadyWhen {
		return nil
	}
	res, err := RenderInputs(in, opts)
	if err != nil {
		return nil
	}
	byID := map[string]*Child{}
	for i := range res.Children {
		byID[res.Children[i].ID] = &res.Children[i]
	}
	rv := fill(in.Kind, in.Parent, in).LookupPath(template.PathReadyWhen)
	ids, vals, err := sortedIDs(rv)
	if err != nil {
		return nil
	}
	var out []string
	for _, id := range ids {
		if c := byID[id]; c != nil {
			for _, r := range template.ObservedReads(sources(vals[id])) {
				out = append(out, gateWarning(id, c, byID, r)...)
			}
		}
	}
	return out
}

// gateWarning is what is wrong with one read of readyWhen.<id>, if anything.
func gateWarning(id string, c *Child, byID map[string]*Child, r template.ObservedRead) []string {
	d := byID[r.ID]
	if d == nil {
		return nil
	}
	at := template.ShortPos(r.Pos) + ": readyWhen." + id + ": reads " + r.Read()
	var out []string
	if d.Wave > c.Wave && r.Via != "" {
		out = append(out, fmt.Sprintf("%s (through %s), a child of wave %d, which is applied only once %s (wave %d) is ready: the gate never opens",
			at, r.Via, d.Wave, id, c.Wave))
	}
	if len(r.Path) > 0 && !hasField(d.Object, r.Path) {
		out = append(out, fmt.Sprintf("%s: no %s has that field, so %s is never ready: the gate never opens", at, d.Object.GetKind(), id))
	}
	return out
}

// hasField reports whether objects of obj's kind may have the field at
// path, by the built-in schemas; true for a kind with none.
func hasField(obj *unstructured.Unstructured, path []string) bool {
	return HasField(obj.GroupVersionKind(), path)
}

package template

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// StatusInputsDigest is the status field in which the controller records,
// with the status of a converged CR, the digest of what that status was
// computed from (engine/reconcile/resync.go).
const StatusInputsDigest = "inputsDigest"

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	kindName     = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// newKind checks v, built from inst, against the template contract and
// builds its Kind.
func newKind(v cue.Value, inst *build.Instance) (*Kind, error) {
	res, spec, status, err := checkShape(v)
	if err != nil {
		return nil, err
	}
	prepared := v
	// A template that declares parent: spec: #Spec, as authors are told to,
	// has its spec constrained already: filling #Spec again would make every
	// render evaluate it, and its disjunctions, twice.
	if !constrainedBy(v, v.LookupPath(PathParentSpec), PathSpec) {
		prepared = v.FillPath(PathParentSpec, spec)
		if err := prepared.Err(); err != nil {
			return nil, fmt.Errorf("%s conflicts with %s: %w", PathParentSpec, PathSpec, Positioned(err))
		}
	}
	prepared, err = withPolicies(prepared)
	if err != nil {
		return nil, err
	}
	prepared, refs, err := withReferences(prepared)
	if err != nil {
		return nil, err
	}
	// References declared in a top-level if or for exist only once a CR
	// is filled in: the kind has references, decided for each CR.
	conditional, unknownRefs := conditionalReferences(inst)
	if !refs && conditional {
		if prepared, err = withConditionalReferences(prepared); err != nil {
			return nil, err
		}
		refs = true
	}
	prepared, waves, readyWhen, err := withWaves(prepared)
	if err != nil {
		return nil, err
	}
	prepared, conditions, err := withConditions(prepared) // conditions.go
	if err != nil {
		return nil, err
	}
	versions, err := loadVersions(v, res, spec, status)
	if err != nil {
		return nil, err
	}
	statusChecked := status.Exists() && constrainedBy(v, v.LookupPath(PathStatus), PathStatusDef)
	return &Kind{Resource: res, Spec: spec, Status: status, StatusChecked: statusChecked, Value: prepared,
		Immutable: ImmutableFields(spec), References: refs, Waves: waves, ReadyWhen: readyWhen,
		Conditions: conditions, Versions: versions, ReferencesUnknown: unknownRefs}, nil
}

// checkShape checks the fields every kind declares (resource, spec,
// children, ready; #Status when it has one) and returns its resource, its
// spec schema and its status schema.
func checkShape(v cue.Value) (Resource, cue.Value, cue.Value, error) {
	var none cue.Value
	res, err := decodeResource(v.LookupPath(PathResource))
	if err != nil {
		return res, none, none, err
	}
	spec := v.LookupPath(PathSpec)
	if !spec.Exists() {
		return res, none, none, fmt.Errorf("%s: %s is missing: every kind declares the schema of its spec", posOf(v), PathSpec)
	}
	if k := spec.IncompleteKind(); k != cue.StructKind {
		return res, none, none, fmt.Errorf("%s: %s must be a struct, not %v", spec.Pos(), PathSpec, k)
	}
	status := v.LookupPath(PathStatusDef)
	if status.Exists() && status.IncompleteKind() != cue.StructKind {
		return res, none, none, fmt.Errorf("%s: %s must be a struct, not %v", status.Pos(), PathStatusDef, status.IncompleteKind())
	}
	children := v.LookupPath(PathChildren)
	if !children.Exists() {
		return res, none, none, fmt.Errorf("%s: %s is missing: every kind declares the objects it owns", posOf(v), PathChildren)
	}
	if k := children.IncompleteKind(); k != cue.StructKind {
		return res, none, none, fmt.Errorf("%s: %s must be a struct of objects keyed by id, not %v", children.Pos(), PathChildren, k)
	}
	if err := checkReady(v.LookupPath(PathReady)); err != nil {
		return res, none, none, err
	}
	return res, spec, status, nil
}

// checkReady refuses a ready that can never be a bool. On the abstract
// package anything that needs a concrete spec value is incomplete
// (`parent.spec.replicas >= 1` with a required replicas): that is decided
// by each render, so only a real error or a known kind other than bool is
// refused here, with CUE's own reason.
func checkReady(r cue.Value) error {
	if !r.Exists() {
		return nil
	}
	k := r.IncompleteKind()
	if k&cue.BoolKind != 0 {
		return nil
	}
	if k == cue.BottomKind {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("%s must be a bool: %w", PathReady, Positioned(err))
		}
		return nil
	}
	return fmt.Errorf("%s: %s must be a bool, not %v", r.Pos(), PathReady, k)
}

// constrainedBy reports whether x is written as a reference to the
// package's definition def, alone or as an operand of &, in a single
// declaration: unifying x with def again would change nothing. Anything
// else (several declarations, embeddings, references to a definition of
// the same name elsewhere) is reported false, so that the caller unifies.
func constrainedBy(pkg, x cue.Value, def cue.Path) bool {
	want := pkg.LookupPath(def).Pos()
	if !want.IsValid() {
		return false
	}
	refers := func(y cue.Value) bool {
		root, p := y.ReferencePath()
		return p.String() == def.String() && root.LookupPath(def).Pos() == want
	}
	src := x.Source()
	if f, ok := src.(*ast.Field); ok {
		src = f.Value
	}
	switch src := src.(type) {
	case *ast.Ident:
		return refers(x)
	case *ast.BinaryExpr:
		if src.Op != token.AND {
			return false
		}
		op, args := x.Expr()
		if op != cue.AndOp {
			return false
		}
		for _, a := range args {
			if refers(a) {
				return true
			}
		}
	}
	return false
}

func posOf(v cue.Value) string {
	if p := v.Pos(); p.IsValid() {
		return ShortPos(p)
	}
	return "template"
}

func decodeResource(v cue.Value) (Resource, error) {
	var res Resource
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return res, fmt.Errorf("%s must be concrete: %w", PathResource, Positioned(err))
	}
	if err := v.Decode(&res); err != nil {
		return res, fmt.Errorf("%s: %s: %w", v.Pos(), PathResource, Positioned(err))
	}
	if err := res.validate(); err != nil {
		return res, fmt.Errorf("%s: %s: %w", v.Pos(), PathResource, err)
	}
	res.defaults()
	return res, nil
}

func (r Resource) validate() error {
	var errs []error
	if !dnsSubdomain.MatchString(r.Group) || !strings.Contains(r.Group, ".") {
		errs = append(errs, fmt.Errorf("group %q must be a DNS subdomain with at least one dot", r.Group))
	}
	if !dnsLabel.MatchString(r.Version) {
		errs = append(errs, fmt.Errorf("version %q must be a DNS label such as v1", r.Version))
	}
	if !kindName.MatchString(r.Kind) {
		errs = append(errs, fmt.Errorf("kind %q must be CamelCase such as RedisCluster", r.Kind))
	}
	for _, n := range append([]string{r.Plural, r.Singular}, r.ShortNames...) {
		if n != "" && !dnsLabel.MatchString(n) {
			errs = append(errs, fmt.Errorf("name %q must be a lower-case DNS label", n))
		}
	}
	if s := r.Scale; s != nil && (s.SpecReplicasPath == "" || s.StatusReplicasPath == "") {
		errs = append(errs, errors.New("scale needs specReplicasPath and statusReplicasPath"))
	}
	return errors.Join(errs...)
}

func (r *Resource) defaults() {
	if r.Singular == "" {
		r.Singular = strings.ToLower(r.Kind)
	}
	if r.Plural == "" {
		r.Plural = Pluralize(r.Singular)
	}
}

// Pluralize returns the English plural of a lower-case singular noun.
func Pluralize(s string) string {
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

// Positioned rewrites a CUE error so that each error it holds reads
// "file:line:column: path: message", one per line.
func Positioned(err error) error {
	var lines []string
	for _, e := range cueerrors.Errors(err) {
		lines = append(lines, FormatError(e))
	}
	if len(lines) == 0 {
		return err
	}
	return errors.New(strings.Join(lines, "\n"))
}

// FormatError formats one CUE error with its positions first.
func FormatError(e cueerrors.Error) string {
	format, args := e.Msg()
	msg := withCause(e, fmt.Sprintf(format, args...))
	if p := e.Path(); len(p) > 0 {
		msg = strings.Join(p, ".") + ": " + msg
	}
	pos := Positions(e)
	if len(pos) == 0 {
		return msg
	}
	return pos[0] + ": " + msg + positionsSuffix(pos[1:])
}

// Positions are the template positions of e, file names relative to the
// working directory where they are below it.
func Positions(e cueerrors.Error) []string {
	var pos []string
	for _, p := range cueerrors.Positions(e) {
		if p.IsValid() && p.Filename() != "" {
			pos = append(pos, ShortPos(p))
		}
	}
	return pos
}

// ShortPos formats p as file:line:column with a short file name: relative
// to the working directory, or module@version:path in a module fetched from
// a registry (DisplayName).
func ShortPos(p token.Pos) string {
	name := p.Filename()
	if d := DisplayName(name); d != name {
		return fmt.Sprintf("%s:%d:%d", d, p.Line(), p.Column())
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, name); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
	}
	return fmt.Sprintf("%s:%d:%d", name, p.Line(), p.Column())
}

func positionsSuffix(pos []string) string {
	if len(pos) == 0 {
		return ""
	}
	return " (also " + strings.Join(pos, ", ") + ")"
}

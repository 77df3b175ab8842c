package crdgen

import (
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// constraints collects the value validations of v by walking its expression
// tree (cue.Value.Expr): conjunctions merge, disjunctions become enums or
// anyOf, bounds, regular expressions and a few builtin validators map to
// their OpenAPI keywords. Anything else is refused with an error at l.
func (w *walker) constraints(v cue.Value, l loc) (*facts, error) {
	if err := l.checkDepth(v); err != nil {
		return nil, err
	}
	if isScalarLiteral(v) {
		return literal(v, l)
	}
	op, args := v.Expr()
	switch op {
	case cue.AndOp:
		return w.conjunction(args, l)
	case cue.OrOp:
		return w.disjunction(args, l)
	case cue.NoOp:
		if len(args) == 1 && args[0] != v {
			// What is left of a disjunction once CUE drops the default
			// that another alternative subsumes: `*3 | int` is `int`.
			return w.constraints(args[0], l.expr())
		}
		return w.leaf(v, l)
	case cue.SelectorOp:
		return w.reference(v, l)
	case cue.CallOp:
		return w.call(v, args, l)
	}
	return unary(v, op, args, l)
}

// unary maps the unary constraints: bounds, regular expressions, (in)equality.
func unary(v cue.Value, op cue.Op, args []cue.Value, l loc) (*facts, error) {
	if len(args) != 1 {
		return nil, unsupportedOp(v, op, l)
	}
	switch op {
	case cue.GreaterThanOp, cue.GreaterThanEqualOp, cue.LessThanOp, cue.LessThanEqualOp:
		return boundFacts(op, args[0], l)
	case cue.RegexMatchOp, cue.NotRegexMatchOp:
		return regexFacts(op, args[0], l)
	case cue.EqualOp:
		return literal(args[0], l)
	case cue.NotEqualOp:
		if !args[0].IsConcrete() && kindOf(args[0])&scalarKinds != 0 {
			return &facts{}, nil // a bound by another field: a CEL rule (specRules)
		}
		f, err := literal(args[0], l)
		if err != nil {
			return nil, err
		}
		return &facts{nots: []apiextensionsv1.JSONSchemaProps{{Enum: f.enum}}}, nil
	}
	return nil, unsupportedOp(v, op, l)
}

func unsupportedOp(v cue.Value, op cue.Op, l loc) error {
	return l.errorf(v, "%s: the operator %v cannot be expressed in an OpenAPI schema", formatValue(v), op)
}

func (w *walker) conjunction(args []cue.Value, l loc) (*facts, error) {
	all := &facts{}
	for _, a := range args {
		f, err := w.constraints(a, l.expr())
		if err != nil {
			return nil, err
		}
		all.and(f)
	}
	return all, nil
}

// isScalarLiteral reports whether v is a concrete number, string, bytes or
// bool.
func isScalarLiteral(v cue.Value) bool {
	return v.IsConcrete() && v.Kind()&scalarKinds != 0
}

// literal returns the facts of a concrete scalar: an enum of one value.
func literal(v cue.Value, l loc) (*facts, error) {
	if !isScalarLiteral(v) {
		return nil, l.errorf(v, "%v is not a concrete number, string or bool", v)
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, l.wrap(v, err, "literal %v", v)
	}
	f := &facts{}
	f.addEnum(apiextensionsv1.JSON{Raw: b})
	return f, nil
}

// boundFacts turns a bound into minimum or maximum. A bound by another field
// (`<=replicas`) is a cross-field constraint no OpenAPI schema can hold: it
// is left out of the schema; specRules makes it a CEL rule.
func boundFacts(op cue.Op, arg cue.Value, l loc) (*facts, error) {
	if !arg.IsConcrete() && kindOf(arg)&cue.NumberKind != 0 {
		return &facts{}, nil
	}
	if !arg.IsConcrete() || arg.Kind()&cue.NumberKind == 0 {
		return nil, l.errorf(arg, "bound %v%v: only bounds by a concrete number can be expressed in an OpenAPI schema", op, arg)
	}
	n, err := arg.Float64()
	if err != nil {
		return nil, l.wrap(arg, err, "bound %v%v", op, arg)
	}
	b := &bound{n: n, exclusive: op == cue.GreaterThanOp || op == cue.LessThanOp}
	if op == cue.GreaterThanOp || op == cue.GreaterThanEqualOp {
		return &facts{min: b}, nil
	}
	return &facts{max: b}, nil
}

func regexFacts(op cue.Op, arg cue.Value, l loc) (*facts, error) {
	re, err := arg.String()
	if err != nil {
		return nil, l.wrap(arg, err, "regular expression %v%v must be a concrete string", op, arg)
	}
	if _, err := regexp.Compile(re); err != nil {
		return nil, l.wrap(arg, err, "regular expression %q", re)
	}
	if op == cue.NotRegexMatchOp {
		return &facts{nots: []apiextensionsv1.JSONSchemaProps{{Pattern: re}}}, nil
	}
	return &facts{patterns: []string{re}}, nil
}

// leaf handles a value whose expression does not break down any further:
// a basic type (int, string), a struct or list literal, a builtin validator
// used without arguments (time.Time), or, rarely (a value reached through a
// let clause), an evaluated constraint that Expr keeps opaque; that one is
// rebuilt from its syntax and walked again.
func (w *walker) leaf(v cue.Value, l loc) (*facts, error) {
	kind := v.IncompleteKind()
	switch {
	case kind != cue.TopKind && kind&(cue.StructKind|cue.ListKind) != 0:
		return &facts{}, nil // object and array walk the structure
	case w.acceptsAll(v, kind):
		return &facts{}, nil
	}
	if name, ok := builtinName(v); ok {
		return validator(v, name, nil, l)
	}
	if expr, ok := v.Syntax(cue.Final()).(ast.Expr); ok && !l.rebuilt {
		rebuilt := w.ctx.BuildExpr(expr)
		if rebuilt.Err() == nil {
			l.rebuilt = true
			return w.constraints(rebuilt, l.expr())
		}
	}
	return nil, l.errorf(v, "constraint %s cannot be broken down into OpenAPI validations", formatValue(v))
}

// builtinName returns the name of a builtin validator used without
// arguments, which CUE prints as a call: time.Time().
func builtinName(v cue.Value) (string, bool) {
	name, ok := strings.CutSuffix(fmt.Sprint(v), "()")
	return name, ok && qualifiedIdent.MatchString(name)
}

var qualifiedIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// reference follows a reference to the value it names.
func (w *walker) reference(v cue.Value, l loc) (*facts, error) {
	target, ok := resolve(v)
	if !ok {
		return w.leaf(v, l)
	}
	return w.constraints(target, l.expr())
}

// call maps a call of a builtin validator: strings.MinRunes(3).
func (w *walker) call(v cue.Value, args []cue.Value, l loc) (*facts, error) {
	if len(args) == 0 {
		return nil, l.errorf(v, "call without a function")
	}
	return validator(v, strings.TrimSuffix(fmt.Sprint(args[0]), "()"), args[1:], l)
}

// validator maps the builtin validators that have an OpenAPI keyword.
func validator(v cue.Value, name string, args []cue.Value, l loc) (*facts, error) {
	switch name {
	case "time.Time":
		if len(args) == 0 {
			return &facts{format: "date-time"}, nil
		}
	case "strings.MinRunes", "strings.MaxRunes", "list.MinItems", "list.MaxItems":
		if len(args) == 1 {
			return countFacts(name, args[0], l)
		}
	case "list.UniqueItems":
		if len(args) == 0 {
			return &facts{}, nil // a CEL rule (specRules)
		}
	}
	return nil, l.errorf(v, "validator %s cannot be expressed in an OpenAPI schema "+
		"(supported: strings.MinRunes, strings.MaxRunes, list.MinItems, list.MaxItems, time.Time; "+
		"list.UniqueItems as a CEL rule)", name)
}

func countFacts(name string, arg cue.Value, l loc) (*facts, error) {
	if op, _ := arg.Expr(); op == cue.SelectorOp && !arg.IsConcrete() {
		// A count by another field (strings.MaxRunes(maxLen)): a CEL rule
		// (specRules). Its default is no bound.
		return &facts{}, nil
	}
	n, err := arg.Int64()
	if err != nil || n < 0 {
		return nil, l.errorf(arg, "%s(%v): the argument must be a concrete non-negative integer", name, arg)
	}
	switch name {
	case "strings.MinRunes":
		return &facts{minLen: &n}, nil
	case "strings.MaxRunes":
		return &facts{maxLen: &n}, nil
	case "list.MinItems":
		return &facts{minItems: &n}, nil
	}
	return &facts{maxItems: &n}, nil
}

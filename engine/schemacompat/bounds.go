package schemacompat

import (
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// bounds reports changed bounds: a bound that accepts less than before is
// breaking (narrowed), one that accepts more is safe (widened).
func (d *differ) bounds(p Path, o, n *apiextensionsv1.JSONSchemaProps) {
	d.number(p, "minimum", bound{o.Minimum, o.ExclusiveMinimum, 1}, bound{n.Minimum, n.ExclusiveMinimum, 1})
	d.number(p, "maximum", bound{o.Maximum, o.ExclusiveMaximum, -1}, bound{n.Maximum, n.ExclusiveMaximum, -1})
	for _, c := range []struct {
		what      string
		old, next *int64
		sign      int
	}{
		{"minLength", o.MinLength, n.MinLength, 1}, {"maxLength", o.MaxLength, n.MaxLength, -1},
		{"minItems", o.MinItems, n.MinItems, 1}, {"maxItems", o.MaxItems, n.MaxItems, -1},
		{"minProperties", o.MinProperties, n.MinProperties, 1}, {"maxProperties", o.MaxProperties, n.MaxProperties, -1},
	} {
		d.count(p, c.what, c.old, c.next, c.sign)
	}
}

// bound is a minimum (sign 1) or maximum (sign -1).
type bound struct {
	n         *float64
	exclusive bool
	sign      int
}

// stricter tells whether b accepts less than a.
func (b bound) stricter(a bound) bool {
	switch {
	case b.n == nil:
		return false
	case a.n == nil:
		return true
	case *b.n == *a.n:
		return b.exclusive && !a.exclusive
	}
	return float64(b.sign)*(*b.n-*a.n) > 0
}

func (b bound) String() string {
	if b.n == nil {
		return "none"
	}
	op := map[int]string{1: ">=", -1: "<="}[b.sign]
	if b.exclusive {
		op = op[:1]
	}
	return op + strconv.FormatFloat(*b.n, 'g', -1, 64)
}

func (d *differ) number(p Path, what string, o, n bound) {
	if n.stricter(o) || o.stricter(n) {
		d.add(Change{Path: p, What: what, Old: o.String(), New: n.String(), Breaking: n.stricter(o)})
	}
}

// count compares a bound on a length or count: a minimum (sign 1) or a
// maximum (sign -1).
func (d *differ) count(p Path, what string, o, n *int64, sign int) {
	f := func(v *int64) bound {
		if v == nil {
			return bound{sign: sign}
		}
		x := float64(*v)
		return bound{n: &x, sign: sign}
	}
	d.number(p, what, f(o), f(n))
}

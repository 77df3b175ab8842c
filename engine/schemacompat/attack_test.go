package schemacompat_test

import (
	"testing"

	"github.com/cueop/cueop/engine/schemacompat"
)

// TestCompareRefusesWhatStoredCRsMayAlreadyHold covers edits that look
// safe on the schema alone but that CRs stored under the old one may fail.
func TestCompareRefusesWhatStoredCRsMayAlreadyHold(t *testing.T) {
	for _, tc := range []struct{ name, old, next string }{
		// A preserved object keeps any field: a stored CR may hold b as
		// a string already.
		{"new typed field where unknown fields were kept",
			`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}}}`,
			`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}, b: {type: integer}}}`},
		// oldSelf inside a string literal does not make a transition rule.
		{"oldSelf only in a string literal",
			`{type: object, properties: {lo: {type: integer}, hi: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "self.lo <= self.hi || 'oldSelf' == ''"}], properties: {lo: {type: integer}, hi: {type: integer}}}`},
		// `a || b ? c : d` is `(a || b) ? c : d`: the guard does not guard c.
		{"a guard that a conditional swallows",
			`{type: object, properties: {lo: {type: integer}, hi: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "!has(self.cnt) || self.cnt > 0 ? self.lo <= self.hi : true"}], properties: {lo: {type: integer}, hi: {type: integer}, cnt: {type: integer}}}`},
		// The API server fills a default on read: stored CRs have the
		// new field, and the guard guards nothing.
		{"a guard on a new field with a default",
			`{type: object, properties: {replicas: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "!has(self.minReady) || self.minReady <= self.replicas"}], properties: {replicas: {type: integer}, minReady: {type: integer, default: 10}}}`},
		// A transition rule is judged at every update of a stored CR too:
		// one that constrains self beyond oldSelf refuses the CRs that
		// break the constraint, as the same rule without oldSelf would.
		{"a transition rule that constrains self",
			`{type: object, properties: {lo: {type: integer}, hi: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "self == oldSelf && self.lo <= self.hi"}], properties: {lo: {type: integer}, hi: {type: integer}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := schemacompat.Compare("v1", schema(t, root(tc.old)), schema(t, root(tc.next)))
			if len(schemacompat.Breaking(cs)) == 0 {
				t.Errorf("no breaking change in %v", summary(cs))
			}
		})
	}
}

// TestCompareTakesTransitionRulesThatHoldUnchanged: a transition rule that
// holds for an unchanged value is safe, as the ones @cueop(immutable)
// generates.
func TestCompareTakesTransitionRulesThatHoldUnchanged(t *testing.T) {
	for _, rule := range []string{
		"self == oldSelf",
		"self.size >= oldSelf.size",
		"has(oldSelf.class) == has(self.class) && (!has(self.class) || self.class == oldSelf.class)",
		"self.lo <= self.hi || self == oldSelf",
	} {
		t.Run(rule, func(t *testing.T) {
			old := `{type: object, properties: {class: {type: string}, size: {type: integer}, lo: {type: integer}, hi: {type: integer}}}`
			next := `{type: object, x-kubernetes-validations: [{rule: "` + rule + `"}], properties: {class: {type: string}, size: {type: integer}, lo: {type: integer}, hi: {type: integer}}}`
			cs := schemacompat.Compare("v1", schema(t, root(old)), schema(t, root(next)))
			if b := schemacompat.Breaking(cs); len(b) != 0 {
				t.Errorf("breaking: %v", summary(b))
			}
		})
	}
}

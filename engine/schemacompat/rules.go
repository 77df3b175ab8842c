package schemacompat

import (
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// rules compares the CEL rules (x-kubernetes-validations) of an object,
// by their rule text, the old ones read with the fields renamed at this
// level under their new names. A rule removed is safe, a message changed
// is safe; a new rule (a changed rule is a new one) is breaking unless no
// stored CR can fail it (safeRule).
func (d *differ) rules(p Path, o, n *apiextensionsv1.JSONSchemaProps, renamed map[string]string) {
	old := map[string]apiextensionsv1.ValidationRule{}
	for _, r := range o.XValidations {
		r.Rule, r.Message = rename(r.Rule, renamed), renameWords(r.Message, renamed)
		old[r.Rule] = r
	}
	next := map[string]bool{}
	for _, r := range n.XValidations {
		next[r.Rule] = true
		prev, ok := old[r.Rule]
		switch {
		case !ok:
			d.add(Change{Path: p, What: "x-kubernetes-validations", New: r.Rule, Breaking: !safeRule(r.Rule, o, n)})
		case prev.Message != r.Message || prev.MessageExpression != r.MessageExpression:
			d.add(Change{Path: p, What: "x-kubernetes-validations message", Old: prev.Message, New: r.Message})
		}
	}
	for _, r := range o.XValidations {
		if rule := rename(r.Rule, renamed); !next[rule] {
			d.add(Change{Path: p, What: "x-kubernetes-validations", Old: rule})
		}
	}
}

// rename rewrites self.<old> as self.<new> in rule for each renamed field.
func rename(rule string, renamed map[string]string) string {
	for from, to := range renamed {
		re := regexp.MustCompile(`\b(self|oldSelf)\.` + regexp.QuoteMeta(from) + `\b`)
		rule = re.ReplaceAllString(rule, "${1}."+to)
	}
	return rule
}

// renameWords rewrites each renamed field's name as a word of message.
func renameWords(message string, renamed map[string]string) string {
	for from, to := range renamed {
		message = regexp.MustCompile(`\b`+regexp.QuoteMeta(from)+`\b`).ReplaceAllString(message, to)
	}
	return message
}

// guard is a rule that holds whenever field f is absent: `!has(self.f) || ...`.
var guard = regexp.MustCompile(`^!has\(self\.([A-Za-z_][A-Za-z0-9_]*)\)\s*\|\|`)

// literal is a CEL string literal; oldSelf the variable of a transition
// rule (oldSelf inside a literal is text, not the variable).
var (
	literal = regexp.MustCompile(`'''[\s\S]*?'''|"""[\s\S]*?"""|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"`)
	oldSelf = regexp.MustCompile(`\boldSelf\b`)
)

// reflexive is a comparison that holds between a value and itself.
var reflexive = regexp.MustCompile(`^([\w.\[\]'()]+)\s*(==|>=|<=)\s*([\w.\[\]'()]+)$`)

// holdsUnchanged tells whether a transition rule (its string literals
// emptied) holds for a CR whose value did not change: with oldSelf read as
// self, it is made of comparisons of a value with itself (`self ==
// oldSelf`, `self.size >= oldSelf.size`, `has(oldSelf.f) == has(self.f)`),
// joined by && and ||, where each || has such a side or a negated
// has(). A transition rule is judged at every update of a stored CR, so
// one that also constrains self alone (`self == oldSelf && self.lo <=
// self.hi`) may refuse it.
func holdsUnchanged(code string) bool {
	return holds(oldSelf.ReplaceAllString(code, "self"))
}

func holds(e string) bool {
	e = strings.TrimSpace(e)
	for len(e) > 1 && e[0] == '(' && closing(e, 0) == len(e)-1 {
		e = strings.TrimSpace(e[1 : len(e)-1])
	}
	if parts := splitTop(e, "||"); len(parts) > 1 {
		return slices.ContainsFunc(parts, holds)
	}
	if parts := splitTop(e, "&&"); len(parts) > 1 {
		return !slices.ContainsFunc(parts, func(p string) bool { return !holds(p) })
	}
	m := reflexive.FindStringSubmatch(e)
	return m != nil && m[1] == m[3]
}

// closing is the index of the parenthesis that closes the one at open in
// e; -1 when none.
func closing(e string, open int) int {
	depth := 0
	for i := open; i < len(e); i++ {
		switch e[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits e at op outside parentheses.
func splitTop(e, op string) []string {
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(e); i++ {
		switch {
		case e[i] == '(':
			depth++
		case e[i] == ')':
			depth--
		case depth == 0 && strings.HasPrefix(e[i:], op):
			parts, from = append(parts, e[from:i]), i+len(op)
			i += len(op) - 1
		}
	}
	return append(parts, e[from:])
}

// safeRule tells whether no stored CR can fail rule: it is a transition
// rule that holds for an unchanged value (holdsUnchanged), or it holds whenever
// a field that the old schema o does not have is absent, and no stored CR
// has such a field (the API server pruned it, and fills no default for it).
func safeRule(rule string, o, n *apiextensionsv1.JSONSchemaProps) bool {
	code := literal.ReplaceAllString(rule, "''")
	if oldSelf.MatchString(code) {
		return holdsUnchanged(code)
	}
	m := guard.FindStringSubmatch(strings.TrimSpace(code))
	// A conditional binds looser than ||: `!has(self.f) || a ? b : c`
	// is `(!has(self.f) || a) ? b : c`, which the guard does not guard.
	if m == nil || strings.Contains(code, "?") || preserves(o) {
		return false
	}
	_, had := o.Properties[m[1]]
	f, has := n.Properties[m[1]]
	// A default is filled on read: stored CRs have the field.
	return !had && has && f.Default == nil
}

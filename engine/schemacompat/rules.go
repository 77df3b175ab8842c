package schemacompat

import (
	"regexp"
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

// safeRule tells whether no stored CR can fail rule: it is a transition
// rule (it reads oldSelf, so it judges updates only), or it holds whenever
// a field that the old schema o does not have is absent, and no stored CR
// has such a field (the API server pruned it, and fills no default for it).
func safeRule(rule string, o, n *apiextensionsv1.JSONSchemaProps) bool {
	code := literal.ReplaceAllString(rule, "''")
	if oldSelf.MatchString(code) {
		return true
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

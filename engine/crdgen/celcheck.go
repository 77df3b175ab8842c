package crdgen

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

// checkRules compiles the CEL rules of crd and estimates their cost with
// the API server's own CRD validation, which refuses a CRD whose rule does
// not compile, costs more than the per-rule limit, or adds up to more than
// the limit of the whole schema. Each rule it refuses is removed from crd
// and its constraint marked render-only with the API server's reason; the
// rest is validated again, until no rule is refused.
func checkRules(crd *apiextensionsv1.CustomResourceDefinition, rules []Constraint) []Constraint {
	if !slices.ContainsFunc(rules, Constraint.Admission) {
		return rules
	}
	for range len(rules) {
		refused := refusedRules(crd)
		if len(refused) == 0 {
			break
		}
		spec := &crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
		s := (*spec)["spec"]
		for _, r := range refused {
			nodeAt(&s, r.node, func(n *apiextensionsv1.JSONSchemaProps) {
				if r.index >= len(n.XValidations) {
					return
				}
				rule := n.XValidations[r.index].Rule
				n.XValidations[r.index].Rule = "" // removed below
				for i := range rules {
					if rules[i].Rule == rule && slices.Equal(rules[i].node, r.node) {
						rules[i].Rule, rules[i].Message = "", ""
						rules[i].Reason = "the API server refuses the rule: " + r.detail
					}
				}
			})
		}
		for _, r := range refused {
			nodeAt(&s, r.node, func(n *apiextensionsv1.JSONSchemaProps) {
				n.XValidations = slices.DeleteFunc(n.XValidations, func(v apiextensionsv1.ValidationRule) bool { return v.Rule == "" })
			})
		}
		(*spec)["spec"] = s
	}
	return rules
}

// refusedRule is a rule the CRD validation refuses: the index of the rule
// in the x-kubernetes-validations of the node at node below .spec.
type refusedRule struct {
	node   []string
	index  int
	detail string
}

var (
	rulePath = regexp.MustCompile(`openAPIV3Schema\.properties\[spec\]((?:\.properties\[[^\]]*\]|\.items|\.additionalProperties)*)\.x-kubernetes-validations\[(\d+)\]`)
	segment  = regexp.MustCompile(`\.properties\[([^\]]*)\]|\.items|\.additionalProperties`)
)

func refusedRules(crd *apiextensionsv1.CustomResourceDefinition) []refusedRule {
	internal, err := toInternal(crd)
	if err != nil {
		return nil
	}
	var out []refusedRule
	seen := map[string]bool{}
	for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), internal) {
		m := rulePath.FindStringSubmatch(e.Field)
		if m == nil || seen[m[0]] {
			continue
		}
		seen[m[0]] = true
		i, _ := strconv.Atoi(m[2])
		r := refusedRule{index: i, detail: e.Detail}
		for _, s := range segment.FindAllStringSubmatch(m[1], -1) {
			switch {
			case strings.HasPrefix(s[0], ".properties"):
				r.node = append(r.node, s[1])
			case s[0] == ".items":
				r.node = append(r.node, itemsSeg)
			default:
				r.node = append(r.node, mapSeg)
			}
		}
		out = append(out, r)
	}
	return out
}

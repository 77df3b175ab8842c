package main

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/crdgen"
)

// vetBase is the golden case the bound trials start from.
type vetBase struct {
	parent     *unstructured.Unstructured
	referenced []*unstructured.Unstructured
}

// vetBounds renders base with each bound of the CRD's spec schema at its
// limit (a number at its maximum, a string of its longest length, a list
// or map of the most items, each item at its own limits), alone, then all
// together; when only several together break, it narrows them down to the
// fewest that still break. What the API server accepts must render within
// the render budget: the operator would refuse the CR, after evaluating
// it. The trials run in a child process (vettrial.go), so that a render
// that exhausts memory kills the trial, not vet. Specs the template
// refuses otherwise (cross-field constraints, patterns) prove nothing and
// pass.
func vetBounds(setup trialSetup, crd *apiextensionsv1.CustomResourceDefinition, base vetBase) error {
	bounds := crdgen.Bounds(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"])
	if len(bounds) == 0 {
		return nil
	}
	r := newTrialRunner(setup)
	defer r.stop()
	try := func(set []crdgen.Bound) trialResult { return r.run(boundTrial(base, set)) }
	var errs []string
	for _, b := range bounds {
		if res := try([]crdgen.Bound{b}); breaks(res) {
			errs = append(errs, boundError([]crdgen.Bound{b}, res))
		}
	}
	if len(errs) > 0 || len(bounds) == 1 {
		return joinBoundErrors(errs)
	}
	res := try(bounds)
	if !breaks(res) {
		return nil
	}
	set := bounds
	for i := 0; i < len(set) && len(set) > 2; {
		fewer := append(append([]crdgen.Bound{}, set[:i]...), set[i+1:]...)
		if r := try(fewer); breaks(r) {
			set, res = fewer, r
		} else {
			i++
		}
	}
	return joinBoundErrors([]string{boundError(set, res)})
}

func breaks(res trialResult) bool { return res.Outcome != "ok" && res.Outcome != "refused" }

// boundTrial is base's spec with each of set at its limit.
func boundTrial(base vetBase, set []crdgen.Bound) trial {
	p := base.parent.DeepCopy()
	for _, b := range set {
		_ = unstructured.SetNestedField(p.Object, b.Value, strings.Split(b.Path, ".")...)
	}
	tr := trial{Parent: p.Object}
	for _, o := range base.referenced {
		tr.Referenced = append(tr.Referenced, o.Object)
	}
	return tr
}

func boundError(set []crdgen.Bound, res trialResult) string {
	names := make([]string, len(set))
	for i, b := range set {
		names[i] = b.String()
	}
	what := names[0]
	if len(set) > 1 {
		what = strings.Join(names, " and ") + " together"
	}
	var why string
	switch res.Outcome {
	case "budget":
		why = "renders beyond the render budget"
	case "died":
		why = "kills the render"
	default:
		why = "does not render in time"
	}
	return fmt.Sprintf("#Spec accepts %s, which %s (%s): lower those bounds", what, why, res.Error)
}

func joinBoundErrors(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "\n"))
}

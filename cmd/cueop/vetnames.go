package main

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// maxCRName is the longest name the API server gives a custom resource
// (a DNS-1123 subdomain).
const maxCRName = 253

// nameCase is a golden case that renders: its path, its parent and the
// objects it may reference.
type nameCase struct {
	path       string
	parent     *unstructured.Unstructured
	referenced []*unstructured.Unstructured
}

// vetNameLength renders the parent of each case renamed to the longest
// name a CR may have. When a child is then refused (a name or label value
// derived from the CR's name grows beyond what the API server takes), it
// returns a warning with the longest CR name that renders in every case
// (the least over the cases: a child only one case renders, a backup
// CronJob, may set it) and the refusal of a name one character longer in
// the case that sets it: the child whose name sets the limit (a Job's 63,
// not a claim's 253); else "".
func vetNameLength(k *template.Kind, cases []nameCase, opts render.Options) string {
	limit, refusal, where := maxCRName, "", ""
	for _, c := range cases {
		if lo, first := nameLimit(k, c.parent, opts); lo < limit {
			limit, refusal, where = lo, first, c.path
		}
	}
	if refusal == "" {
		return ""
	}
	return fmt.Sprintf("kind %s: CR names of up to %d characters render, though the API server allows %d: with %d, %s (golden case %s)",
		k.Name, limit, maxCRName, limit+1, refusal, where)
}

// nameLimit is the longest name of parent that renders (maxCRName when
// that renders) and the first line of the refusal of a name one
// character longer, the name written <CR name>.
func nameLimit(k *template.Kind, parent *unstructured.Unstructured, opts render.Options) (int, string) {
	refused := func(n int) error {
		p := parent.DeepCopy()
		p.SetName(strings.Repeat("a", n))
		_, err := render.Render(k, p, nil, opts)
		var rerr *render.Error
		if errors.As(err, &rerr) && rerr.Reason == wellknown.ReasonChildRefused {
			return err
		}
		return nil
	}
	if refused(maxCRName) == nil {
		return maxCRName, ""
	}
	lo, hi := 0, maxCRName // refused(hi) != nil; lo renders or is 0
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; refused(mid) != nil {
			hi = mid
		} else {
			lo = mid
		}
	}
	first, _, _ := strings.Cut(refused(hi).Error(), "\n")
	return lo, strings.ReplaceAll(first, strings.Repeat("a", hi), "<CR name>")
}

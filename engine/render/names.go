package render

import (
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nameRule is how the API server validates the names of one kind.
type nameRule struct {
	desc  string
	check apimachineryvalidation.ValidateNameFunc
}

var (
	dnsSubdomain = nameRule{"a DNS-1123 subdomain", apimachineryvalidation.NameIsDNSSubdomain}
	dnsLabel     = nameRule{"a DNS-1123 label", apimachineryvalidation.NameIsDNSLabel}
	dns1035Label = nameRule{"a DNS-1035 label", apimachineryvalidation.NameIsDNS1035Label}
)

// nameRules are the built-in kinds whose names the API server holds to
// more than a DNS-1123 subdomain (the rule of every other kind, custom
// kinds included), as Kubernetes' own validation does (pkg/apis/*/validation).
var nameRules = map[schema.GroupKind]nameRule{
	{Kind: "Service"}:                    dns1035Label,
	{Group: "apps", Kind: "StatefulSet"}: dnsLabel,
	// A Job's name becomes the value of its pods' job-name label.
	{Group: "batch", Kind: "Job"}: {"a DNS-1123 subdomain and a label value (at most 63 characters)", func(name string, prefix bool) []string {
		return append(apimachineryvalidation.NameIsDNSSubdomain(name, prefix), validation.IsValidLabelValue(name)...)
	}},
	// The CronJob controller appends an 11-character suffix to name Jobs.
	{Group: "batch", Kind: "CronJob"}: {"a DNS-1123 subdomain of at most 52 characters", func(name string, prefix bool) []string {
		errs := apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
		if len(name) > 52 {
			errs = append(errs, "must be no more than 52 characters")
		}
		return errs
	}},
}

// selectorPaths are label maps that are not under a `labels` or
// `matchLabels` key, by kind.
var selectorPaths = map[schema.GroupKind][]string{
	{Kind: "Service"}:               {"spec", "selector"},
	{Kind: "ReplicationController"}: {"spec", "selector"},
}

// checkNames refuses a child whose name, labels or annotations the API
// server would refuse: the name by its kind's rule (nameRules), every label
// map (metadata.labels and the labels of embedded objects such as pod
// templates, matchLabels, a Service's selector) by the label rules, the
// annotations by their size and keys.
func checkNames(id string, v cue.Value, obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	rule, ok := nameRules[gk]
	if !ok {
		rule = dnsSubdomain
	}
	if errs := rule.check(obj.GetName(), false); len(errs) > 0 {
		return fieldError(id, v, cue.ParsePath("metadata.name"), "metadata.name %q is not %s, as a %s's name must be: %s",
			obj.GetName(), rule.desc, gk.Kind, strings.Join(errs, "; "))
	}
	var errs field.ErrorList
	walkLabels(obj.Object, nil, func(p []string, labels map[string]string) {
		errs = append(errs, metav1validation.ValidateLabels(labels, fieldPath(p))...)
	})
	if sel := selectorPaths[gk]; sel != nil {
		if m, found, _ := unstructured.NestedStringMap(obj.Object, sel...); found {
			errs = append(errs, metav1validation.ValidateLabels(m, fieldPath(sel))...)
		}
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(a, field.NewPath("metadata", "annotations"))...)
	}
	if len(errs) == 0 {
		return ""
	}
	return fieldError(id, v, cuePath(errs[0].Field), "%s", errs.ToAggregate().Error())
}

// walkLabels calls f with every label map of x: the `labels` of any
// `metadata` and any `matchLabels`, with their paths, in the order of a
// walk through sorted keys and list indexes. It walks x unsorted with one
// path stack, copies the path of each label map found and sorts only
// those: a child is mostly maps without labels, walked for every render.
func walkLabels(x any, p []string, f func([]string, map[string]string)) {
	w := labelWalk{path: make([]pathElem, 0, 16)}
	for _, e := range p {
		w.path = append(w.path, pathElem{key: e, index: -1})
	}
	w.walk(x)
	sort.SliceStable(w.found, func(i, j int) bool { return lessPath(w.found[i].path, w.found[j].path) })
	for _, l := range w.found {
		f(l.strings(), stringMap(l.labels))
	}
}

// pathElem is a map key, or a list index when index >= 0.
type pathElem struct {
	key   string
	index int
}

type foundLabels struct {
	path   []pathElem
	labels map[string]any
}

// strings is the path as checkNames reports it, an index as "[i]".
func (l foundLabels) strings() []string {
	out := make([]string, len(l.path))
	for i, e := range l.path {
		if e.index >= 0 {
			out[i] = fmt.Sprintf("[%d]", e.index)
		} else {
			out[i] = e.key
		}
	}
	return out
}

type labelWalk struct {
	path  []pathElem
	found []foundLabels
}

func (w *labelWalk) walk(x any) {
	switch t := x.(type) {
	case map[string]any:
		parentIsMetadata := len(w.path) > 0 && w.path[len(w.path)-1].index < 0 && w.path[len(w.path)-1].key == "metadata"
		for k, v := range t {
			w.path = append(w.path, pathElem{key: k, index: -1})
			if m, ok := v.(map[string]any); ok && (k == "matchLabels" || (k == "labels" && parentIsMetadata)) {
				w.found = append(w.found, foundLabels{path: append([]pathElem(nil), w.path...), labels: m})
			} else {
				w.walk(v)
			}
			w.path = w.path[:len(w.path)-1]
		}
	case []any:
		for i, e := range t {
			w.path = append(w.path, pathElem{index: i})
			w.walk(e)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

// lessPath orders paths as a walk through sorted keys and list indexes
// meets them: siblings are all keys or all indexes.
func lessPath(a, b []pathElem) bool {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		switch {
		case x.index >= 0 && y.index >= 0:
			if x.index != y.index {
				return x.index < y.index
			}
		case x.key != y.key:
			return x.key < y.key
		}
	}
	return len(a) < len(b)
}

// stringMap keeps the string values of m; a value of another type is the
// schema check's to refuse.
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func fieldPath(p []string) *field.Path {
	var fp *field.Path
	for _, e := range p {
		switch {
		case fp == nil:
			fp = field.NewPath(e)
		case strings.HasPrefix(e, "["):
			var i int
			fmt.Sscanf(e, "[%d]", &i)
			fp = fp.Index(i)
		default:
			fp = fp.Child(e)
		}
	}
	return fp
}

// cuePath turns a field path (spec.template.metadata.labels[app]) into a
// CUE path, as far as it goes.
func cuePath(s string) cue.Path {
	var sels []cue.Selector
	for _, part := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			sels = append(sels, cue.Str(name))
		}
		if rest != "" {
			var i int
			if _, err := fmt.Sscanf(rest, "%d]", &i); err == nil {
				sels = append(sels, cue.Index(i))
			} else {
				sels = append(sels, cue.Str(strings.TrimSuffix(rest, "]")))
			}
		}
	}
	return cue.MakePath(sels...)
}

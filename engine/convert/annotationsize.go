package convert

import (
	"fmt"
	"sort"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// AnnotationTooLargeError is a conversion whose annotation of the fields
// the target version cannot hold would take metadata.annotations past the
// API server's limit (256 KiB, keys and values together): the object does
// not convert to that version. It names the fields, so that the CR's
// owner can shrink them or keep to the source version.
type AnnotationTooLargeError struct {
	From, To string
	// Fields are the spec's fields carried (spec.big), sorted.
	Fields []string
	// Size is what metadata.annotations would hold, in bytes.
	Size int
}

func (e *AnnotationTooLargeError) Error() string {
	return fmt.Sprintf("conversion %s to %s: the fields %s that %s cannot hold would take metadata.annotations (annotation %s%s) to %d KiB, over the API server's limit of %d KiB: make them smaller, or read and write this object at %s",
		e.From, e.To, strings.Join(e.Fields, ", "), e.To, wellknown.AnnotationConversionPrefix, e.From, (e.Size+1023)>>10, apivalidation.TotalAnnotationSizeLimitB>>10, e.From)
}

// checkAnnotationSize refuses out, converted from one version to another
// with carried in its annotation, when its annotations exceed the API
// server's total.
func checkAnnotationSize(out *unstructured.Unstructured, carried map[string]any, from, to *template.Version) error {
	size := 0
	for k, v := range out.GetAnnotations() {
		size += len(k) + len(v)
	}
	if size <= apivalidation.TotalAnnotationSizeLimitB {
		return nil
	}
	return &AnnotationTooLargeError{From: from.Name, To: to.Name, Fields: fieldPaths("spec", carried), Size: size}
}

// fieldPaths are the dotted paths of the leaves of m, sorted.
func fieldPaths(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		p := prefix + "." + k
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, fieldPaths(p, sub)...)
		} else {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

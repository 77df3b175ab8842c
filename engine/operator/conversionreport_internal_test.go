package operator

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestConversionReportNamesItsConversion: a Memo stored at v1 whose text
// v2 cannot hold and v3 can is converted to both at every write: the
// condition set by the refusal to v2 is not removed by the conversion to
// v3, nor rewritten by a refusal to v4, so that the condition's own write
// does not set off the next; the conversion to v2 removes it.
func TestConversionReportNamesItsConversion(t *testing.T) {
	refusal := func(to string) error {
		return fmt.Errorf("Memo ns/big: %w", &convert.AnnotationTooLargeError{From: "v1", To: to, Fields: []string{"spec.text"}, Size: 300 << 10})
	}
	memo := func(cond error) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "annot.example.com/v1", "kind": "Memo",
			"metadata": map[string]any{"name": "big", "namespace": "ns"}}}
		if cond != nil {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": wellknown.ConditionConvertible,
				"status": "False", "reason": wellknown.ReasonAnnotationTooLarge, "message": cond.Error()}}}
		}
		return u
	}
	for _, c := range []struct {
		what    string
		obj     *unstructured.Unstructured
		to      string
		err     error
		reports bool
	}{
		{"refused to v2, no condition", memo(nil), "v2", refusal("v2"), true},
		{"refused to v2, condition of it", memo(refusal("v2")), "v2", refusal("v2"), false},
		{"converted to v3, condition of v2", memo(refusal("v2")), "v3", nil, false},
		{"refused to v4, condition of v2", memo(refusal("v2")), "v4", refusal("v4"), false},
		{"converted to v2, condition of v2", memo(refusal("v2")), "v2", nil, true},
		{"converted to v2, no condition", memo(nil), "v2", nil, false},
	} {
		r := &conversionReports{queue: make(chan conversionReport, 1)}
		r.report(c.obj, c.to, c.err)
		if got := len(r.queue) == 1; got != c.reports {
			t.Errorf("%s: reported %v, want %v", c.what, got, c.reports)
		}
	}

	// The API server converts objects of its own writes too, without the
	// CR's status: a refusal written is not written again from them.
	r := &conversionReports{queue: make(chan conversionReport, 1)}
	obj := memo(nil)
	obj.SetUID("u1")
	r.wrote("u1", refusal("v2").Error())
	if r.report(obj, "v2", refusal("v2")); len(r.queue) != 0 {
		t.Errorf("refusal written already, object without the condition: reported again")
	}
	r.wrote("u1", "")
	if r.report(obj, "v2", refusal("v2")); len(r.queue) != 1 {
		t.Errorf("refusal after the condition was removed: not reported")
	}
}

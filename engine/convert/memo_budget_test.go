package convert_test

import (
	"errors"
	"testing"

	"github.com/cueop/cueop/engine/budget"
)

const heavy = `package app
import "list"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: int}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {n: int, s?: int}
	toHub: {in: spec: _, out: spec: n: in.spec.n}
	fromHub: {in: spec: _, out: spec: {n: in.spec.n, s: list.Sum([for i in list.Range(0, in.spec.n, 1) {i * 2}])}}
}
`

// TestMemoKeepsNoConversionOverBudget: a conversion refused for its budget is
// not kept: retried, the same converter refuses it again, as a fresh one does
// (the budget's verdict comes after the evaluation returned).
func TestMemoKeepsNoConversionOverBudget(t *testing.T) {
	base, err := load(t, heavy)
	if err != nil || base == nil {
		t.Fatal(base, err)
	}
	c := base.WithBudget(budget.Budget{Memory: 4 << 20, Time: -1})
	obj := appObj("v1", map[string]any{"n": int64(20000)}, true)
	_, err1 := c.Convert(obj, "v2")
	var ex *budget.Exceeded
	if !errors.As(err1, &ex) {
		t.Fatalf("first conversion: %v, want Exceeded", err1)
	}
	budget.WaitAbandoned(t.Context(), "convert/app", 0) // its result, had it one, is in
	out, err2 := c.Convert(obj, "v2")
	_, err3 := func() (any, error) {
		f, _ := load(t, heavy)
		return f.WithBudget(budget.Budget{Memory: 4 << 20, Time: -1}).Convert(obj, "v2")
	}()
	// Its evaluations over budget end before the next test evaluates.
	defer budget.WaitAbandoned(t.Context(), "convert/app", 0)
	if err2 == nil || err3 == nil {
		t.Errorf("retry after a budget refusal: %v, err %v; fresh converter: err %v; want both refused", out, err2, err3)
	}
}

package convert_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
)

// kindOf is a kind whose hub v2 and spoke v1 both hold field, declared
// by schema, toHub passing it, fromHub as given.
func kindOf(t *testing.T, pkg, field, schema, spokeSchema, fromHub string) *convert.Converter {
	t.Helper()
	c, err := load(t, fmt.Sprintf(`package %s
import "list"
_list: list.MaxItems
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Spec: %s: %s
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: %s: %s
	toHub: {in: spec: _, out: spec: %s: in.spec.%s}
	fromHub: {in: spec: _, out: spec: %s}
}
`, pkg, field, schema, field, spokeSchema, field, field, fromHub))
	if err != nil {
		t.Fatal(err)
	}
	// The default memory budget; time enough for a loaded machine and
	// the race detector.
	return c.WithBudget(budget.Budget{Time: time.Minute})
}

func ints(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = int64(i + 1)
	}
	return l
}

// TestRoundTripOfLargeValuesWithinBudget: the round trip of a spec whose
// conversion loses or changes every element of a large list (2000
// elements, 30 lists of 30, a chain of lists 60 deep), or every key of a
// map of 10,000, is judged within the default budget of one conversion
// (128 MiB) with a clear refusal naming the field; a list of 200
// elements each of which loses a field the spoke does not declare is
// taken, as the annotation keeps it. Before, the judge converted the
// whole spec once or twice for each differing element: the round trip of
// 2000 elements ran out of its budget (and crashed the worker's).
func TestRoundTripOfLargeValuesWithinBudget(t *testing.T) {
	lol := make([]any, 30)
	for i := range lol {
		lol[i] = ints(30)
	}
	var chain any = ints(2)
	for range 59 {
		chain = []any{chain}
	}
	deep := strings.Repeat("[...", 61) + "int" + strings.Repeat("]", 61)
	keys := map[string]any{}
	for i := range 10000 {
		keys[fmt.Sprintf("k%05d", i)] = "v"
	}
	backups := make([]any, 200)
	for i := range backups {
		backups[i] = map[string]any{"schedule": fmt.Sprint(i), "class": "cold"}
	}
	for _, tc := range []struct {
		name string
		c    *convert.Converter
		spec map[string]any
		want []string // "" for none
	}{{
		name: "2000 elements lost",
		c:    kindOf(t, "lost", "items", "*[] | [...int]", "*[] | [...int]", `{if len(in.spec.items) > 100000 {items: in.spec.items}}`),
		spec: map[string]any{"items": ints(2000)},
		want: []string{"conversion versions.v1.fromHub (v2 to v1) loses field spec.items.0 in the round trip v2 to v1 and back (and 1999 more elements alike)"},
	}, {
		name: "2000 elements changed",
		c:    kindOf(t, "changed", "items", "*[] | [...int]", "*[] | [...int]", `{items: [for x in in.spec.items {0}]}`),
		spec: map[string]any{"items": ints(2000)},
		want: []string{"conversion versions.v1.fromHub (v2 to v1) changes field spec.items.0 in the round trip v2 to v1 and back (and 1999 more elements alike)"},
	}, {
		name: "30 lists of 30 changed",
		c:    kindOf(t, "lol", "items", "*[] | [...[...int]]", "*[] | [...[...int]]", `{items: [for l in in.spec.items {[for x in l {0}]}]}`),
		spec: map[string]any{"items": lol},
		want: []string{"changes field spec.items.0.0 in the round trip v2 to v1 and back (and 899 more elements alike)"},
	}, {
		name: "lists 60 deep",
		c:    kindOf(t, "deep", "items", "*[] | "+deep, "*[] | "+deep, `{items: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], _n: len(in.spec.items)}`),
		spec: map[string]any{"items": []any{chain}},
		want: []string{"loses field spec.items" + strings.Repeat(".0", 60) + ".1 in the round trip"},
	}, {
		name: "10,000 keys lost",
		c:    kindOf(t, "keys", "labels", "[string]: string", "[string]: string", `{if len(in.spec.labels) > 100000 {labels: in.spec.labels}}`),
		spec: map[string]any{"labels": keys},
		want: []string{"loses field spec.labels.k00000 in the round trip", "loses field spec.labels.k00019 in the round trip",
			"round trip v2 to v1 and back: 9980 more differences, from spec.labels.k00020, not judged past 20 refusals"},
	}, {
		name: "200 elements each losing what the spoke lacks",
		c: kindOf(t, "classes", "backups", "*[] | [...{schedule: string, class: *\"standard\" | string}] & list.MaxItems(200)", "*[] | [...{schedule: string}]",
			`{backups: [for b in in.spec.backups {schedule: b.schedule}]}`),
		spec: map[string]any{"backups": backups},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.CheckRoundTrip(tc.spec, "v2", "v1")
			var ex *budget.Exceeded
			if errors.As(err, &ex) {
				t.Fatalf("round trip out of its budget: %v", err)
			}
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("round trip refused: %v", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("round trip = %v, want %q", err, w)
				}
			}
			if err != nil && strings.Count(err.Error(), "\n") > 20 {
				t.Errorf("round trip refused with %d lines, want at most 21", strings.Count(err.Error(), "\n")+1)
			}
		})
	}
}

package render

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// walkLabelsSorted is the walk walkLabels replaces: every map's keys
// sorted, a path copied for every key.
func walkLabelsSorted(x any, p []string, f func([]string, map[string]string)) {
	switch t := x.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := append(append([]string(nil), p...), k)
			isLabels := k == "matchLabels" || (k == "labels" && len(p) > 0 && p[len(p)-1] == "metadata")
			if m, ok := t[k].(map[string]any); ok && isLabels {
				f(sub, stringMap(m))
				continue
			}
			walkLabelsSorted(t[k], sub, f)
		}
	case []any:
		for i, e := range t {
			walkLabelsSorted(e, append(append([]string(nil), p...), fmt.Sprintf("[%d]", i)), f)
		}
	}
}

type labelsAt struct {
	path   []string
	labels map[string]string
}

func collect(walk func(any, []string, func([]string, map[string]string)), x any) []labelsAt {
	var out []labelsAt
	walk(x, nil, func(p []string, l map[string]string) { out = append(out, labelsAt{p, l}) })
	return out
}

// TestWalkLabelsOrder: the unsorted walk finds the label maps of the sorted
// walk, with the same paths, in the same order (which decides the first
// error checkNames reports): list indexes in number order past 9, keys that
// look like indexes, labels not under metadata skipped, matchLabels
// anywhere, non-string values dropped.
func TestWalkLabelsOrder(t *testing.T) {
	list := []any{}
	for i := range 12 {
		list = append(list, map[string]any{"metadata": map[string]any{"labels": map[string]any{"i": fmt.Sprint(i)}}})
	}
	obj := map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"app": "a", "n": int64(3)}},
		"labels":   map[string]any{"top": "not a label map"},
		"spec": map[string]any{
			"selector":             map[string]any{"matchLabels": map[string]any{"app": "a"}},
			"template":             map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "a"}}},
			"volumeClaimTemplates": list,
			"odd":                  map[string]any{"[10]": map[string]any{"matchLabels": map[string]any{"k": "10"}}, "[9]": map[string]any{"matchLabels": map[string]any{"k": "9"}}},
			"metadata":             map[string]any{"labels": "not a map"},
		},
		"zz": []any{[]any{map[string]any{"matchLabels": map[string]any{}}}, "s", nil},
	}
	want, got := collect(walkLabelsSorted, obj), collect(walkLabels, obj)
	if len(want) != 18 {
		t.Fatalf("the reference walk found %d label maps, want 18: %v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walkLabels found\n%v\nwant\n%v", got, want)
	}
	prefixed := func(walk func(any, []string, func([]string, map[string]string))) []labelsAt {
		var out []labelsAt
		walk(obj["spec"], []string{"metadata"}, func(p []string, l map[string]string) { out = append(out, labelsAt{p, l}) })
		return out
	}
	if got, want := prefixed(walkLabels), prefixed(walkLabelsSorted); !reflect.DeepEqual(got, want) {
		t.Errorf("under a prefix, walkLabels found\n%v\nwant\n%v", got, want)
	}
}

// BenchmarkWalkLabels walks a StatefulSet-sized child.
func BenchmarkWalkLabels(b *testing.B) {
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "x", "namespace": "ns", "labels": map[string]any{"app": "a", "cueop.dev/child": "x"}},
		"spec": map[string]any{
			"replicas": int64(3), "serviceName": "x",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "a"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "a"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "redis", "image": "redis:7", "args": []any{"--port", "6379"},
					"ports":          []any{map[string]any{"containerPort": int64(6379), "name": "redis"}},
					"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": int64(6379)}, "periodSeconds": int64(5)},
					"resources":      map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
				}}},
			},
		},
	}
	for _, c := range []struct {
		name string
		walk func(any, []string, func([]string, map[string]string))
	}{{"unsorted", walkLabels}, {"sorted", walkLabelsSorted}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.walk(obj, nil, func([]string, map[string]string) {})
			}
		})
	}
}

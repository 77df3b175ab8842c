package golden_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// apiServerData is a ConfigMap's data at the API server's limits: 10,000
// keys holding 1 MiB (keys and values) together, the most a ConfigMap may
// hold.
func apiServerData() map[string]any {
	const keys, total = 10000, 1 << 20
	data := map[string]any{}
	for i := range keys {
		k := fmt.Sprintf("SETTING_%05d", i)
		data[k] = strings.Repeat("v", total/keys-len(k)-1)
	}
	return data
}

// TestWebAppAtAPIServerLimitsFitsDefaultBudget: the shipped WebApp whose
// settings ConfigMap is as large as the API server allows (1 MiB, 10,000
// keys) renders within the default render budget (the CPU time scaled under
// the race detector), allocating at most half of it; with its own
// spec.files as large too, within the budget the sizing advice of docs/operating.md
// gives. (At the former default of 64 MiB, the render's 42 MiB left too
// little for what the operator allocates beside it: refused at 65.9 MiB.)
func TestWebAppAtAPIServerLimitsFitsDefaultBudget(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	k := set.Lookup("apps.example.com", "WebApp")
	settings := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "shop-settings", "namespace": "shop"},
		"data":     apiServerData(),
	}}
	for _, tc := range []struct {
		name   string
		files  map[string]any
		budget budget.Budget
	}{
		{"settings", nil, budget.Budget{}},
		// Both at the limits take about 117 MiB and 0.8 s: the sizing
		// example of docs/operating.md.
		{"settings and files", apiServerData(), budget.Budget{Time: 2 * time.Second, Memory: 256 << 20}},
	} {
		parent, err := golden.ParseParent([]byte(`apiVersion: apps.example.com/v1
kind: WebApp
metadata: {name: shop, namespace: shop, uid: u1, generation: 1}
spec: {settingsFrom: {name: shop-settings}}
`), k)
		if err != nil {
			t.Fatal(err)
		}
		if tc.files != nil {
			must(t, unstructured.SetNestedMap(parent.Object, tc.files, "spec", "files"))
		}
		b := tc.budget.WithDefaults()
		b.Time *= raceFactor
		before, cpu := allocated(), processCPU()
		res, err := golden.RenderCase(k, parent, nil, []*unstructured.Unstructured{settings}, render.Options{Budget: b})
		if err != nil {
			t.Fatalf("%s at the API server's limits, under the default budget (%s): %v", tc.name, b, err)
		}
		used := int64(allocated() - before)
		t.Logf("%s: %d children, %s allocated, %s of CPU (budget %s)", tc.name, len(res.Children),
			budget.MiB(used), (processCPU() - cpu).Round(time.Millisecond), b)
		// A render worker charges the budget with the evaluation alone;
		// what this process allocates meanwhile (other tests) is counted
		// here too, so fitting the budget here is a bound from above.
		if used > b.Memory {
			t.Errorf("%s: the render allocates %s, more than the budget %s", tc.name, budget.MiB(used), b)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func allocated() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

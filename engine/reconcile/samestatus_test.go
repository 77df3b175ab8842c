package reconcile

import (
	"encoding/json"
	"math/big"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// storedStatus is st as the API server stores it and the cache reads it back:
// decoded as the server decodes an apply (numbers to int64 or float64),
// encoded by encoding/json, decoded as unstructured.
func storedStatus(t *testing.T, st map[string]any) map[string]any {
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var server map[string]any
	if err := utiljson.Unmarshal(b, &server); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(server); err != nil {
		t.Fatal(err)
	}
	var read map[string]any
	if err := utiljson.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	return read
}

// TestSameStatusAfterItsOwnWrite: a status, once written and read back, is
// the same status. In process a kind's immutable values are json.Number as
// CUE writes them (a float field at 2 is "2.0", 1.50 is "1.50", 1e3 is
// "1e3"), and a status integer beyond int64 is a *big.Int: json.Marshal
// writes them as they are, the API server stores 2, 1.5, 1000, 1e+23. Were
// they compared as bytes alone, every reconcile would write the status
// again.
func TestSameStatusAfterItsOwnWrite(t *testing.T) {
	big1, _ := new(big.Int).SetString("100000000000000000000000", 10)
	for name, st := range map[string]map[string]any{
		"float immutable": {"immutable": map[string]any{"spec.ratio": json.Number("2.0")}, "observedGeneration": int64(1), "revision": "r"},
		"decimal":         {"immutable": map[string]any{"spec.ratio": json.Number("1.50")}, "revision": "r"},
		"exponent":        {"immutable": map[string]any{"spec.n": json.Number("1e3")}, "revision": "r"},
		"big int":         {"big": big1, "revision": "r"},
	} {
		old := storedStatus(t, st)
		if !sameStatus(old, st, nil) {
			a, _ := json.Marshal(st)
			b, _ := json.Marshal(old)
			t.Errorf("%s: written %s, read back %s: not the same status, written again on every reconcile", name, a, b)
		}
	}
}

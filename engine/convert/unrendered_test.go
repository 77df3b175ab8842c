package convert_test

import (
	"reflect"
	"testing"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/internal/testkit"
)

// TestUnrenderedNamesSpokeOnlyFields: a hub object that carries a v2 spec
// with a field the hub lacks names it; one without the annotation, or
// whose v2 spec the hub holds whole, names none.
func TestUnrenderedNamesSpokeOnlyFields(t *testing.T) {
	c := mustLoad(t, lossy)
	hub := mustConvert(t, c, object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1, "c": 3}}`), "v1")
	got, err := c.Unrendered(hub)
	if err != nil || !reflect.DeepEqual(got, []convert.UnrenderedField{{Path: "spec.c", Version: "v2"}}) {
		t.Errorf("Unrendered = %v, %v; want [spec.c (v2)]", got, err)
	}
	plain := mustConvert(t, c, object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "y"}, "spec": {"a": 1}}`), "v1")
	if got, err := c.Unrendered(plain); err != nil || len(got) != 0 {
		t.Errorf("Unrendered of a v2 spec the hub holds = %v, %v; want none", got, err)
	}
}

// TestUnrenderedTellsChangedFromLost: a v2 field the hub lacks is lost; a
// value the hub normalises is changed, not lost.
func TestUnrenderedTellsChangedFromLost(t *testing.T) {
	c := mustLoad(t, testkit.NormalisingKind)
	hub := mustConvert(t, c, object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1, "tier": "Gold", "c": 3}}`), "v1")
	got, err := c.Unrendered(hub)
	want := []convert.UnrenderedField{{Path: "spec.c", Version: "v2"}, {Path: "spec.tier", Version: "v2", Changed: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Unrendered = %+v, %v; want %+v", got, err, want)
	}
}

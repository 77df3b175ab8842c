package convert_test

import (
	"reflect"
	"testing"
)

// TestUnrenderedNamesSpokeOnlyFields: a hub object that carries a v2 spec
// with a field the hub lacks names it; one without the annotation, or
// whose v2 spec the hub holds whole, names none.
func TestUnrenderedNamesSpokeOnlyFields(t *testing.T) {
	c, err := load(t, lossy)
	if err != nil {
		t.Fatal(err)
	}
	hub := mustConvert(t, c, object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1, "c": 3}}`), "v1")
	got, err := c.Unrendered(hub)
	if err != nil || !reflect.DeepEqual(got, []string{"spec.c (v2)"}) {
		t.Errorf("Unrendered = %v, %v; want [spec.c (v2)]", got, err)
	}
	plain := mustConvert(t, c, object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "y"}, "spec": {"a": 1}}`), "v1")
	if got, err := c.Unrendered(plain); err != nil || len(got) != 0 {
		t.Errorf("Unrendered of a v2 spec the hub holds = %v, %v; want none", got, err)
	}
}

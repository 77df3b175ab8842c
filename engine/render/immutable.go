package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// StatusImmutable is where the controller records the immutable fields'
// values.
const StatusImmutable = template.StatusImmutable

// immutableValues checks the parent's immutable spec fields against the
// values recorded in its status, and returns the values to record. A field
// whose value changed, or that was removed, since it was recorded is
// refused (InvalidSpec): the CRD refuses such a change at admission, but not
// for a CR created, or changed, while its CRD had no rule yet. A field set
// for the first time is recorded. v is the template filled with parent.
func immutableValues(k *template.Kind, parent *unstructured.Unstructured, v cue.Value) (map[string]any, error) {
	if len(k.Immutable) == 0 {
		return nil, nil
	}
	recorded, _, _ := unstructured.NestedMap(parent.Object, "status", StatusImmutable)
	spec := v.LookupPath(template.PathParentSpec)
	out := map[string]any{}
	var bad []string
	for _, f := range k.Immutable {
		key := f.Key()
		old, had := recorded[key]
		fv := spec.LookupPath(cue.MakePath(selectors(f.Path)...))
		if !fv.Exists() {
			if had {
				bad = append(bad, immutableMessage(f, old, nil))
			}
			continue
		}
		now, err := jsonValue(fv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if had && !sameJSON(old, now) {
			bad = append(bad, immutableMessage(f, old, now))
			continue
		}
		out[key] = now
	}
	if len(bad) > 0 {
		return nil, &Error{Reason: wellknown.ReasonInvalidSpec, Messages: bad}
	}
	return out, nil
}

// jsonValue is v as a JSON value of the kinds unstructured objects hold
// (numbers as json.Number).
func jsonValue(v cue.Value) (any, error) {
	if d, ok := v.Default(); ok {
		v = d
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	return out, d.Decode(&out)
}

func selectors(path []string) []cue.Selector {
	out := make([]cue.Selector, len(path))
	for i, p := range path {
		out[i] = cue.Str(p)
	}
	return out
}

func immutableMessage(f template.ImmutableField, old, now any) string {
	was, _ := json.Marshal(old)
	change := "removed"
	if now != nil {
		b, _ := json.Marshal(now)
		change = "changed to " + string(b)
	}
	return fmt.Sprintf("%s: is immutable: it was %s when first rendered, %s (template %s)",
		f.Key(), was, change, template.ShortPos(f.Pos))
}

// sameJSON compares two values as JSON, so that int64 and float64 from the
// API server and CUE's decoded numbers compare by value.
func sameJSON(a, b any) bool {
	var x, y any
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ab, &x) != nil || json.Unmarshal(bb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

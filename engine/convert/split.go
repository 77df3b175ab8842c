package convert

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A conversion evaluated in another process (a worker, engine/worker)
// and its memo kept here: Memoized answers what needs no CUE evaluation,
// Evaluate (in the worker) converts and says what the memo keeps of the
// conversion, Remember keeps it.

// errNotMemoized stops a memoOnly conversion where it would evaluate CUE.
var errNotMemoized = errors.New("not in the memo: to be evaluated")

// Memo is what a converter's memo keeps of one conversion evaluated by
// another converter of the same kind revision, leniency and budget
// (Evaluate), as data.
type Memo struct {
	Key     string         `json:"key"`
	Spec    map[string]any `json:"spec"`
	Size    int            `json:"size"`
	Carried map[string]any `json:"carried,omitempty"` // the fields the annotation carries
}

// Memoized converts obj to toVersion as Convert does when that evaluates
// no CUE: obj is at toVersion already, or its spec's conversion is in the
// memo and no conversion of the path declares out.status for the status
// obj has. ok is false otherwise (nothing was evaluated). An error is
// one Convert returns too (a version not served, a malformed annotation).
func (c *Converter) Memoized(obj *unstructured.Unstructured, toVersion string) (out *unstructured.Unstructured, ok bool, err error) {
	from, err := c.versionOf(obj)
	if err != nil {
		return nil, true, err
	}
	to := c.kind.Version(toVersion)
	if to == nil {
		return nil, true, fmt.Errorf("%s: version %q is not served (served: %s)", c.subject(obj), toVersion, strings.Join(c.Versions(), ", "))
	}
	d := *c
	d.memoOnly = true
	out, _, err = d.convert(obj, from, to)
	if errors.Is(err, errNotMemoized) {
		return nil, false, nil
	}
	return out, true, err
}

// Evaluate is Convert, and returns also what a converter's memo keeps of
// the conversion (nil when it keeps nothing), for another converter of
// the same kind revision (Remember). c's own memo is neither read nor
// written.
func (c *Converter) Evaluate(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, *Memo, error) {
	d := *c
	d.memo = &specMemo{}
	out, err := d.Convert(obj, toVersion)
	if err != nil {
		return nil, nil, err
	}
	for key, e := range d.memo.cur { // one conversion: one entry at most
		return out, &Memo{Key: key, Spec: e.spec, Size: e.size, Carried: e.carried}, nil
	}
	return out, nil, nil
}

// Remember keeps m, what Evaluate returned for a conversion by a converter
// of the same kind revision, leniency and budget, in c's memo.
func (c *Converter) Remember(m *Memo) {
	if m == nil || c.memo == nil || m.Size > memoEntryMax {
		return
	}
	spec := m.Spec
	if spec == nil {
		spec = map[string]any{}
	}
	c.memo.put(m.Key, memoEntry{spec: spec, size: m.Size, carried: m.Carried})
}

package render

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// undefinedField matches CUE's "undefined field: x" (x quoted when it is
// not an identifier).
var undefinedField = regexp.MustCompile(`undefined field: ("(?:[^"\\]|\\.)*"|[^\s()]+)`)

// observedHint explains an "undefined field: x" where x is a child the
// render produces but that is not observed: the template reads observed.x
// without a guard. observed.x is absent until the child exists, and in a
// render without observed children (`cueop render`, the first render of a
// golden case), so such a template fails every render (it never creates
// the child). Only called on a render error; the children's ids come from
// the template filled again (within the render's budget).
func observedHint(k *template.Kind, parent *unstructured.Unstructured, in Inputs, err error) error {
	observed := in.Observed
	var rerr *Error
	if !errors.As(err, &rerr) {
		return err
	}
	var ids map[string]bool
	for i, msg := range rerr.Messages {
		m := undefinedField.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		id := m[1]
		if u, err := strconv.Unquote(id); err == nil {
			id = u
		}
		if observed[id] != nil {
			continue
		}
		if ids == nil {
			ids = childIDs(fill(k, parent, in))
		}
		if !ids[id] {
			continue
		}
		ref := "observed." + m[1]
		if m[1] != id {
			ref = "observed[" + m[1] + "]"
		}
		rerr.Messages[i] = msg + fmt.Sprintf(" (observed children may be absent: %s is there only once the child %s exists, "+
			"not in the render that creates it; guard the read, as in `if %s != _|_ {...}` or `*%s.status.x | 0`)", ref, id, ref, ref)
	}
	return err
}

// childIDs are the ids of the children v has, concrete or not.
func childIDs(v cue.Value) map[string]bool {
	ids := map[string]bool{}
	it, err := v.LookupPath(template.PathChildren).Fields()
	if err != nil {
		return ids
	}
	for it.Next() {
		ids[it.Selector().Unquoted()] = true
	}
	return ids
}

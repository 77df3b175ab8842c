package admission

import (
	"fmt"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// References checks, without any CR, every reference of k whose apiVersion
// and kind the template writes as literals against the readable kinds
// (nil: render.DefaultReadableKinds): a kind the operator would refuse is
// refused even when no CR renders it. References computed from the spec
// are checked by the renders.
func References(k *template.Kind, readable render.KindSet) []Finding {
	if !k.References {
		return nil
	}
	if readable == nil {
		readable = render.MustKindSet(render.DefaultReadableKinds)
	}
	iter, err := k.Value.LookupPath(template.PathReferences).Fields()
	if err != nil {
		return nil // a references struct computed from the spec
	}
	var out []Finding
	for iter.Next() {
		if f, bad := reference(iter.Selector().Unquoted(), iter.Value(), readable); bad {
			f.Message = fmt.Sprintf("kind %s: %s", k.Name, f.Message)
			out = append(out, f)
		}
	}
	return out
}

func reference(id string, v cue.Value, readable render.KindSet) (Finding, bool) {
	kind, err := v.LookupPath(cue.ParsePath("kind")).String()
	if err != nil {
		return Finding{}, false // computed from the spec
	}
	apiVersion, err := v.LookupPath(cue.ParsePath("apiVersion")).String()
	if err != nil {
		return Finding{}, false
	}
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	if readable[gk] {
		return Finding{}, false
	}
	pos := "template"
	f := Finding{Check: CheckReferences}
	if p := v.LookupPath(cue.ParsePath("kind")).Pos(); p.IsValid() {
		pos = template.ShortPos(p)
		f.Pos = pos
	}
	f.Message = fmt.Sprintf("%s: references.%s: kind %s is not in the readable kinds (%s): the operator would refuse it; allow it with --readable-kinds",
		pos, id, gk, readable)
	return f, true
}

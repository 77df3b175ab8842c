package convert

import (
	"errors"
	"fmt"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/engine/template"
)

// errInput marks a spec its own version's #Spec refuses.
var errInput = errors.New("refused by its version's #Spec")

var pathInStatus, pathOutStatus = cue.ParsePath("in.status"), cue.ParsePath("out.status")

// step is one conversion of a path: to or from the hub.
type step struct {
	conv   cue.Value // ToHub or FromHub of a spoke
	target *template.Version
}

// steps are the conversions from one version to another, through the hub.
func (c *Converter) steps(from, to *template.Version) []step {
	var s []step
	if !from.Hub {
		s = append(s, step{from.ToHub, c.kind.Hub()})
	}
	if !to.Hub {
		s = append(s, step{to.FromHub, to})
	}
	return s
}

// specPath converts spec from one version to another. in is spec as
// from's #Spec makes it (defaults filled), out the converted spec as to's
// #Spec makes it.
func (c *Converter) specPath(spec map[string]any, from, to *template.Version) (in, out map[string]any, err error) {
	out = spec
	for i, s := range c.steps(from, to) {
		var got map[string]any
		got, out, err = apply(s, out)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			in = got
		}
	}
	return in, out, nil
}

// apply evaluates one conversion of spec: the input checked against the
// conversion's in.spec, the output unified with the target's #Spec.
func apply(s step, spec map[string]any) (in, out map[string]any, err error) {
	if spec == nil {
		spec = map[string]any{}
	}
	x := s.conv.FillPath(template.PathInSpec, s.conv.Context().Encode(spec))
	if in, err = export(x.LookupPath(template.PathInSpec)); err != nil {
		return nil, nil, fmt.Errorf("spec: %w: %w", errInput, err)
	}
	o := x.LookupPath(template.PathOutSpec).Unify(s.target.Spec)
	if out, err = export(o); err != nil {
		return nil, nil, fmt.Errorf("spec at %s: %w", s.target.Name, err)
	}
	return in, out, nil
}

// normalize returns spec unified with v's #Spec: defaults filled, bounds
// checked.
func (c *Converter) normalize(spec map[string]any, v *template.Version) (map[string]any, error) {
	return export(v.Spec.Unify(v.Spec.Context().Encode(spec)))
}

// export converts a concrete struct into an unstructured map (int64 and
// float64 numbers) or returns its errors, positioned.
func export(v cue.Value) (map[string]any, error) {
	b, err := v.MarshalJSON()
	if err != nil {
		// Validate names every error with its position.
		if verr := v.Validate(cue.Concrete(true)); verr != nil {
			err = verr
		}
		return nil, template.Positioned(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// convertStatus converts obj's status into out by the conversions of the
// path that declare out.status; the others pass it unchanged. cueop's own
// status fields pass unchanged.
func (c *Converter) convertStatus(out, obj *unstructured.Unstructured, from, to *template.Version) error {
	status, ok, _ := unstructured.NestedMap(obj.Object, "status")
	if !ok {
		return nil
	}
	for _, s := range c.steps(from, to) {
		if !s.conv.LookupPath(pathOutStatus).Exists() {
			continue
		}
		x := s.conv.FillPath(pathInStatus, s.conv.Context().Encode(status))
		got, err := export(x.LookupPath(pathOutStatus))
		if err != nil {
			return fmt.Errorf("status at %s: %w", s.target.Name, err)
		}
		for _, f := range OwnStatus {
			if v, has := status[f]; has {
				got[f] = v
			}
		}
		status = got
	}
	out.Object["status"] = status
	return nil
}

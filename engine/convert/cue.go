package convert

import (
	"errors"
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/engine/template"
)

// errInput marks a spec its own version's #Spec refuses.
var errInput = errors.New("refused by its version's #Spec")

// SpecError is a spec its own version's #Spec refuses (a CR at v2 with a
// field out of v2's bounds), worded as a render's spec errors are: by the
// spec's field paths (spec.size), with the positions in the version's
// #Spec.
type SpecError struct {
	Version string
	msg     string
}

func (e *SpecError) Error() string { return e.msg }

// Is makes a SpecError an errInput.
func (e *SpecError) Is(target error) bool { return target == errInput }

// specError words err, an error of the conversion conv's input, by the
// spec's own paths instead of the conversion's (versions.v2.toHub.in.spec.size).
func specError(conv cue.Value, version string, err error) error {
	msg := strings.ReplaceAll(err.Error(), conv.Path().String()+".in.spec", "spec")
	return &SpecError{Version: version, msg: msg}
}

// step is one conversion of a path: to or from the hub.
type step struct {
	conv   cue.Value // ToHub or FromHub of a spoke
	decl   cue.Value // the same as declared, in.spec not constrained
	target *template.Version
}

// steps are the conversions from one version to another, through the hub.
func (c *Converter) steps(from, to *template.Version) []step {
	var s []step
	if !from.Hub {
		s = append(s, step{from.ToHub, from.ToHubDecl, c.kind.Hub()})
	}
	if !to.Hub {
		s = append(s, step{to.FromHub, to.FromHubDecl, to})
	}
	return s
}

// specPath converts spec from one version to another. in is spec as
// from's #Spec makes it (defaults filled), out the converted spec as to's
// #Spec makes it.
func (c *Converter) specPath(spec map[string]any, from, to *template.Version) (in, out map[string]any, err error) {
	if c.memoOnly {
		return nil, nil, errNotMemoized
	}
	out = spec
	for i, s := range c.steps(from, to) {
		var got map[string]any
		got, out, err = apply(s, out, c.within(from, i))
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
// conversion's in.spec, the output unified with the target's #Spec. A
// lenient conversion (the webhook's: lenient is not nil) of a spec its own
// #Spec refuses (a CR stored before a rule existed) converts it as
// declared, unchecked, so that the CR stays readable at every version
// (render reports it), as long as lenient passes it: within the bounds of
// its version's schema.
func apply(s step, spec map[string]any, lenient func(map[string]any) error) (in, out map[string]any, err error) {
	if spec == nil {
		spec = map[string]any{}
	}
	spec = template.WholeFloats(s.conv.LookupPath(template.PathInSpec), spec).(map[string]any)
	enc := s.conv.Context().Encode(spec)
	x := s.conv.FillPath(template.PathInSpec, enc)
	in, err = export(x.LookupPath(template.PathInSpec))
	invalid := err != nil
	if invalid && lenient == nil {
		return nil, nil, specError(s.conv, s.conv.Path().Selectors()[1].String(), err)
	}
	if invalid {
		if err := lenient(spec); err != nil {
			return nil, nil, err
		}
		x, in = s.decl.FillPath(template.PathInSpec, enc), spec
	}
	o := x.LookupPath(template.PathOutSpec)
	if out, err = export(o.Unify(s.target.Spec)); err != nil && invalid {
		out, err = export(o)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("spec at %s: %w", s.target.Name, err)
	}
	return in, out, nil
}

// normalize returns spec unified with v's #Spec: defaults filled, bounds
// checked.
func (c *Converter) normalize(spec map[string]any, v *template.Version) (map[string]any, error) {
	if spec != nil {
		spec = template.WholeFloats(v.Spec, spec).(map[string]any)
	}
	return export(v.Spec.Unify(v.Spec.Context().Encode(spec)))
}

// admits is whether v's #Spec admits spec, which may lack fields it
// requires (the fields of a spec an annotation carries).
func admits(spec map[string]any, v *template.Version) error {
	spec = template.WholeFloats(v.Spec, spec).(map[string]any)
	if err := v.Spec.Unify(v.Spec.Context().Encode(spec)).Validate(); err != nil {
		return template.Positioned(err)
	}
	return nil
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
		if !s.conv.LookupPath(template.PathOutStatus).Exists() {
			continue
		}
		if c.memoOnly {
			return errNotMemoized
		}
		x := s.conv.FillPath(template.PathInStatus, s.conv.Context().Encode(status))
		got, err := export(x.LookupPath(template.PathOutStatus))
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

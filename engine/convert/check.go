package convert

import (
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/crdgen"
)

// Spec is a spec at a version of the kind, to convert to the other side
// of the hub and back (CheckSpecs).
type Spec struct {
	Version string
	Spec    map[string]any
	// Source names the object the spec is of in a refusal (a stored CR:
	// Kind ns/name); "" for a golden case's or a generated one.
	Source string
}

// CheckSpecs converts each spec to every version on the other side of the
// hub (every spoke from the hub, the hub from a spoke) and back
// (CheckRoundTrip). It returns the refusals, each once, as
// "kind <package>: <refusal>", a refusal first found on a spec with a
// Source followed by " (spec of <Source>)". A spec its own version's
// #Spec refuses, or at a version the kind does not serve, proves nothing
// and is skipped. It is the check `cueop vet` and the operator's reload
// run alike: what one refuses, the other does, with the same message.
func (c *Converter) CheckSpecs(specs []Spec) error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range specs {
		if c.kind.Version(s.Version) == nil {
			continue
		}
		for _, via := range c.otherSide(s.Version) {
			err := c.CheckRoundTrip(s.Spec, s.Version, via)
			if err == nil || errors.Is(err, ErrInvalidInput) || seen[err.Error()] {
				continue
			}
			seen[err.Error()] = true
			if s.Source != "" {
				err = fmt.Errorf("%w (spec of %s)", err, s.Source)
			}
			errs = append(errs, fmt.Errorf("kind %s: %w", c.kind.Name, err))
		}
	}
	return errors.Join(errs...)
}

// otherSide are the versions a spec at version converts to: every spoke
// from the hub, the hub from a spoke.
func (c *Converter) otherSide(version string) []string {
	var out []string
	for _, v := range c.kind.Versions {
		if v.Name != version && (v.Hub || c.kind.Version(version).Hub) {
			out = append(out, v.Name)
		}
	}
	return out
}

// GeneratedSpecs are the specs crdgen.Samples makes of every version of
// the kind's CRD: the smallest, every bound at its limit, every field set.
func GeneratedSpecs(crd *apiextensionsv1.CustomResourceDefinition) []Spec {
	var out []Spec
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		for _, s := range crdgen.Samples(v.Schema.OpenAPIV3Schema.Properties["spec"]) {
			if m, ok := s.(map[string]any); ok {
				out = append(out, Spec{Version: v.Name, Spec: m})
			}
		}
	}
	return out
}

package convert

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// specBounds are the bounds of each version's #Spec, as its CRD schema
// (engine/crdgen) states them: the types, the numeric limits, the longest
// strings, the most items and the most fields. A lenient conversion
// converts a spec its #Spec refuses only within them, so that what a
// conversion is given is never larger than the schema allows, whatever a
// review holds. The validators are made on first use and shared by the
// converters derived from one New.
type specBounds struct {
	mu sync.Mutex
	by map[string]*versionBounds // by version name
}

type versionBounds struct {
	validator validation.SchemaValidator
	err       error
	// structural is the version's whole schema, which the API server
	// prunes a spec by (nil when it could not be made).
	structural *structuralschema.Structural
}

// check refuses a spec of version v that is out of v's bounds, by the
// spec's field paths (spec.count: ... should be less than or equal to 10).
func (b *specBounds) check(spec map[string]any, v *template.Version) error {
	vb := b.of(v)
	if vb.err != nil {
		return &SpecError{Version: v.Name, msg: fmt.Sprintf("spec at %s: its schema's bounds: %v", v.Name, vb.err)}
	}
	errs := validation.ValidateCustomResource(field.NewPath("spec"), map[string]any(spec), vb.validator)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	sort.Strings(msgs)
	return &SpecError{Version: v.Name, msg: fmt.Sprintf("spec at %s is out of its schema's bounds: %s", v.Name, strings.Join(msgs, "; "))}
}

func (b *specBounds) of(v *template.Version) *versionBounds {
	b.mu.Lock()
	defer b.mu.Unlock()
	if vb := b.by[v.Name]; vb != nil {
		return vb
	}
	if b.by == nil {
		b.by = map[string]*versionBounds{}
	}
	vb := &versionBounds{}
	vb.validator, vb.structural, vb.err = boundsValidator(v)
	b.by[v.Name] = vb
	return vb
}

func boundsValidator(v *template.Version) (validation.SchemaValidator, *structuralschema.Structural, error) {
	s, err := crdgen.Schema(v.Spec)
	if err != nil {
		return nil, nil, err
	}
	var structural *structuralschema.Structural
	whole := &apiextensions.JSONSchemaProps{}
	if apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, whole, nil) == nil {
		structural, _ = structuralschema.NewStructural(whole)
	}
	bounds := boundsOnly(*s)
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&bounds, internal, nil); err != nil {
		return nil, structural, err
	}
	validator, _, err := validation.NewSchemaValidator(internal)
	return validator, structural, err
}

// undeclared is spec (a copy) without the fields v's schema does not
// declare, which the API server would prune, and their paths (spec.x),
// sorted; spec itself when it has none, or when v's schema could not be
// made.
func (b *specBounds) undeclared(spec map[string]any, v *template.Version) (map[string]any, []string) {
	s := b.of(v).structural
	if s == nil || spec == nil {
		return spec, nil
	}
	pruned := runtime.DeepCopyJSON(spec)
	paths := pruning.PruneWithOptions(pruned, s, false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true, ParentPath: []string{"spec"}})
	if len(paths) == 0 {
		return spec, nil
	}
	return pruned, paths
}

// storedSpecAt is the spec of version to stored in obj's annotation, or
// nil, as a lenient converter takes it: the annotation is anyone's who may
// write the object, and a field to's schema does not declare is refused
// toward the hub (a write: the writer is told) and left out otherwise (a
// read: one object's annotation fails no list). A strict converter
// refuses such a field where it checks the result against to's #Spec.
func (c *Converter) storedSpecAt(obj *unstructured.Unstructured, to *template.Version) (map[string]any, error) {
	stored, err := storedSpec(obj, to.Name)
	if err != nil || stored == nil || !c.lenient {
		return stored, err
	}
	pruned, paths := c.bounds.undeclared(stored, to)
	if len(paths) == 0 {
		return stored, nil
	}
	if to.Hub {
		return nil, fmt.Errorf("annotation %s%s: %s: not declared in %s's schema: refused", wellknown.AnnotationConversionPrefix, to.Name, strings.Join(paths, ", "), to.Name)
	}
	return pruned, nil
}

// boundsOnly is s with only its types and bounds: no rule (CEL, required
// fields, enums, patterns, formats), which a spec stored before the rule
// existed may break and still convert.
func boundsOnly(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	out := apiextensionsv1.JSONSchemaProps{
		Type: s.Type, Nullable: s.Nullable, XIntOrString: s.XIntOrString, XPreserveUnknownFields: s.XPreserveUnknownFields,
		Maximum: s.Maximum, ExclusiveMaximum: s.ExclusiveMaximum, Minimum: s.Minimum, ExclusiveMinimum: s.ExclusiveMinimum,
		MaxLength: s.MaxLength, MaxItems: s.MaxItems, MaxProperties: s.MaxProperties,
	}
	if s.Properties != nil {
		out.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for name, p := range s.Properties {
			out.Properties[name] = boundsOnly(p)
		}
	}
	if s.Items != nil {
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{}
		if s.Items.Schema != nil {
			item := boundsOnly(*s.Items.Schema)
			out.Items.Schema = &item
		}
		for _, item := range s.Items.JSONSchemas {
			out.Items.JSONSchemas = append(out.Items.JSONSchemas, boundsOnly(item))
		}
	}
	if a := s.AdditionalProperties; a != nil && a.Schema != nil {
		value := boundsOnly(*a.Schema)
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value}
	}
	// A disjunction's branches keep their bounds; a value within any
	// branch's is within bounds.
	for _, branch := range append(append([]apiextensionsv1.JSONSchemaProps{}, s.AnyOf...), s.OneOf...) {
		out.AnyOf = append(out.AnyOf, boundsOnly(branch))
	}
	return out
}

// within is what a lenient conversion asks of the input of step i of the
// path from version from: that it is within the bounds of the version it
// is at (from, then the hub). It is nil for a strict converter.
func (c *Converter) within(from *template.Version, i int) func(map[string]any) error {
	if !c.lenient {
		return nil
	}
	at := c.kind.Hub()
	if i == 0 && !from.Hub {
		at = from
	}
	return func(spec map[string]any) error { return c.bounds.check(spec, at) }
}

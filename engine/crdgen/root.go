package crdgen

import (
	"fmt"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
)

// rootSchema returns the schema of the whole custom resource: apiVersion,
// kind, metadata, spec from #Spec and status from #Status plus the fields
// the engine writes. The spec defaults to `{}` when #Spec has no required
// fields, so that the API server applies the spec's defaults to a resource
// that omits .spec; otherwise .spec is required.
func rootSchema(res template.Resource, spec, status cue.Value) (*apiextensionsv1.JSONSchemaProps, []Constraint, error) {
	specSchema, err := specSchema(spec)
	if err != nil {
		return nil, nil, err
	}
	rules, err := specRules(spec, specSchema)
	if err != nil {
		return nil, nil, err
	}
	statusSchema, err := statusSchema(status)
	if err != nil {
		return nil, nil, err
	}
	if err := immutableStatus(statusSchema, spec, status); err != nil {
		return nil, nil, err
	}
	root := &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: fmt.Sprintf("%s is a custom resource whose behaviour is defined by a cueop template.", res.Kind),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string", Description: apiVersionDoc},
			"kind":       {Type: "string", Description: kindDoc},
			"metadata":   {Type: "object"},
			"spec":       *specSchema,
			"status":     *statusSchema,
		},
	}
	if specSchema.Default == nil {
		root.Required = []string{"spec"}
	}
	return root, rules, nil
}

const (
	apiVersionDoc = "APIVersion defines the versioned schema of this representation of an object. " +
		"Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. " +
		"More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	kindDoc = "Kind is a string value representing the REST resource this object represents. " +
		"Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. " +
		"More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	statusDoc = "Status is computed by the template from the children that exist; " +
		"observedGeneration, conditions, revision and inputsDigest are written by the engine."
)

func specSchema(spec cue.Value) (*apiextensionsv1.JSONSchemaProps, error) {
	if !spec.Exists() {
		return nil, fmt.Errorf("#Spec: not defined: every kind declares the schema of its spec")
	}
	s, err := newWalker(spec).field(spec, regularField, rootLoc(spec, template.FieldSpecDef))
	if err != nil {
		return nil, err
	}
	if s.Type != "object" || s.AdditionalProperties != nil {
		return nil, rootLoc(spec, template.FieldSpecDef).errorf(spec, "must be a struct of named fields")
	}
	s.Description = definitionDoc(spec, template.FieldSpecDef)
	return s, nil
}

// statusSchema returns the schema of .status. It has no required fields:
// when rendering fails, the engine writes its conditions alone.
func statusSchema(status cue.Value) (*apiextensionsv1.JSONSchemaProps, error) {
	s := &apiextensionsv1.JSONSchemaProps{Type: "object"}
	if status.Exists() {
		var err error
		l := rootLoc(status, template.FieldStatusDef)
		if s, err = newWalker(status).field(status, elementField, l); err != nil {
			return nil, err
		}
		if s.Type != "object" || s.AdditionalProperties != nil {
			return nil, l.errorf(status, "must be a struct of named fields")
		}
		if err := checkReserved(s, status, l); err != nil {
			return nil, err
		}
		s.Required = nil
		s.Description = definitionDoc(status, template.FieldStatusDef)
	}
	if s.Description == "" {
		s.Description = statusDoc
	}
	if s.Properties == nil {
		s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	for name, p := range engineStatus() {
		s.Properties[name] = p
	}
	return s, nil
}

// checkReserved refuses #Status fields that the engine writes itself.
func checkReserved(s *apiextensionsv1.JSONSchemaProps, status cue.Value, l loc) error {
	for _, name := range []string{"conditions", "observedGeneration", "revision", template.StatusInputsDigest} {
		if _, ok := s.Properties[name]; ok {
			f := status.LookupPath(cue.MakePath(cue.Str(name).Optional()))
			return l.field(name, f).errorf(f, "is written by the engine; choose another name")
		}
	}
	return nil
}

// engineStatus returns the status fields the engine writes.
func engineStatus() map[string]apiextensionsv1.JSONSchemaProps {
	return map[string]apiextensionsv1.JSONSchemaProps{
		"observedGeneration": {
			Type: "integer", Format: "int64",
			Description: "observedGeneration is the .metadata.generation that the status was computed for.",
		},
		"revision": {
			Type:        "string",
			Description: "revision is the template revision the resource was last converged to.",
		},
		"conditions": conditionsSchema(),
		template.StatusInputsDigest: {
			Type: "string",
			Description: "inputsDigest is the digest of what the status was computed from (the render's inputs and the children as cueop left them): " +
				"a restarted cueop does not render again a resource whose digest is unchanged.",
		},
	}
}

// conditionsSchema is the schema of a list of metav1.Condition, as
// controller-gen writes it, keyed by type.
func conditionsSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type:         "array",
		Description:  "conditions are the standard conditions of the resource (Ready, Reconciling and Stalled) and those its template gives.",
		XListType:    ptr("map"),
		XListMapKeys: []string{"type"},
		Items:        &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr(conditionSchema())},
	}
}

func conditionSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "Condition contains details for one aspect of the current state of this API Resource.",
		Required:    []string{"lastTransitionTime", "message", "reason", "status", "type"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"lastTransitionTime": {Type: "string", Format: "date-time",
				Description: "lastTransitionTime is the last time the condition transitioned from one status to another."},
			"message": {Type: "string", MaxLength: ptr[int64](32768),
				Description: "message is a human readable message indicating details about the transition."},
			"observedGeneration": {Type: "integer", Format: "int64", Minimum: ptr[float64](0),
				Description: "observedGeneration is the .metadata.generation that the condition was set based upon."},
			"reason": {Type: "string", MinLength: ptr[int64](1), MaxLength: ptr[int64](1024),
				Pattern:     `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`,
				Description: "reason contains a programmatic identifier indicating the reason for the condition's last transition."},
			"status": {Type: "string", Enum: jsonStrings("True", "False", "Unknown"),
				Description: "status of the condition, one of True, False, Unknown."},
			"type": {Type: "string", MaxLength: ptr[int64](316),
				Pattern:     `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`,
				Description: "type of condition in CamelCase or in foo.example.com/CamelCase."},
		},
	}
}

func jsonStrings(values ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(values))
	for i, v := range values {
		out[i] = apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))}
	}
	return out
}

// immutableStatus adds status.immutable, where the engine records the
// values of the @cueop(immutable) fields of #Spec, to a kind that has some.
func immutableStatus(s *apiextensionsv1.JSONSchemaProps, spec, status cue.Value) error {
	if len(template.ImmutableFields(spec)) == 0 {
		return nil
	}
	name := template.StatusImmutable
	if _, ok := s.Properties[name]; ok {
		f := status.LookupPath(cue.MakePath(cue.Str(name).Optional()))
		return rootLoc(status, template.FieldStatusDef).field(name, f).errorf(f,
			"is written by the engine for the @cueop(immutable) fields of #Spec; choose another name")
	}
	s.Properties[name] = apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr(true),
		Description: "immutable holds the values of the spec's immutable fields when first rendered, by field path: " +
			"a render refuses a change of them that the CRD let through.",
	}
	return nil
}

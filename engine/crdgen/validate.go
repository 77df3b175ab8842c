package crdgen

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks crd as the API server does when the CRD is created: it
// sets the defaults of the v1 API, converts the CRD to the internal type,
// runs the API server's CRD validation (names, versions, subresources,
// printer columns, the schema and its defaults) and checks every version's
// schema for the structural schema invariants. It returns every problem at
// once.
func Validate(crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd == nil {
		return fmt.Errorf("validate crd: nil crd")
	}
	internal, err := toInternal(crd)
	if err != nil {
		return fmt.Errorf("crd %s: %w", crd.Name, err)
	}
	errs := validation.ValidateCustomResourceDefinition(context.Background(), internal)
	errs = append(errs, validateStructural(internal)...)
	if err := errs.ToAggregate(); err != nil {
		return fmt.Errorf("crd %s: invalid: %w", crd.Name, err)
	}
	return nil
}

// toInternal returns a defaulted internal copy of crd, its stored versions
// set as the API server's create strategy sets them.
func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	in := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(in)
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in, out, nil); err != nil {
		return nil, fmt.Errorf("convert to internal: %w", err)
	}
	out.Status = apiextensions.CustomResourceDefinitionStatus{}
	for _, v := range out.Spec.Versions {
		if v.Storage {
			out.Status.StoredVersions = []string{v.Name}
		}
	}
	return out, nil
}

func validateStructural(crd *apiextensions.CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	for i, v := range crd.Spec.Versions {
		path := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		props, err := versionSchema(crd, v)
		if err != nil {
			errs = append(errs, field.Required(path, err.Error()))
			continue
		}
		s, err := structuralschema.NewStructural(props)
		if err != nil {
			errs = append(errs, field.Invalid(path, "", err.Error()))
			continue
		}
		errs = append(errs, structuralschema.ValidateStructural(path, s)...)
	}
	return errs
}

// versionSchema returns the schema of version v. The conversion to the
// internal type moves a schema that every version shares to
// spec.validation.
func versionSchema(crd *apiextensions.CustomResourceDefinition, v apiextensions.CustomResourceDefinitionVersion) (*apiextensions.JSONSchemaProps, error) {
	switch {
	case v.Schema != nil && v.Schema.OpenAPIV3Schema != nil:
		return v.Schema.OpenAPIV3Schema, nil
	case crd.Spec.Validation != nil && crd.Spec.Validation.OpenAPIV3Schema != nil:
		return crd.Spec.Validation.OpenAPIV3Schema, nil
	}
	return nil, fmt.Errorf("version %s has no schema", v.Name)
}

// Structural returns the structural schema of the CRD's storage version,
// as the API server uses it to prune and default custom resources.
func Structural(crd *apiextensionsv1.CustomResourceDefinition) (*structuralschema.Structural, error) {
	internal, err := toInternal(crd)
	if err != nil {
		return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
	}
	for _, v := range internal.Spec.Versions {
		if !v.Storage {
			continue
		}
		props, err := versionSchema(internal, v)
		if err != nil {
			return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
		}
		s, err := structuralschema.NewStructural(props)
		if err != nil {
			return nil, fmt.Errorf("crd %s: structural schema: %w", crd.Name, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("crd %s: no storage version", crd.Name)
}

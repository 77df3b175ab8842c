package crdgen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Category is the category every cueop kind belongs to, so that `kubectl
// get cueop` lists the resources of every kind. A kind's own categories
// come after it.
const Category = "cueop"

// Generate returns the CustomResourceDefinition of a kind: FromResource of
// its resource, #Spec and #Status, annotated with the kind's revision. The
// result is not validated; Validate does that.
func Generate(k *template.Kind) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, _, err := Explain(k)
	return crd, err
}

// Explain is Generate that also returns the constraints of #Spec beyond
// the OpenAPI schema: those the CRD enforces with CEL rules and those left
// to render, with the reason.
func Explain(k *template.Kind) (*apiextensionsv1.CustomResourceDefinition, []Constraint, error) {
	if k == nil {
		return nil, nil, errors.New("generate crd: nil kind")
	}
	crd, rules, err := kindCRD(k)
	if err != nil {
		return nil, nil, fmt.Errorf("kind %s: %w", k.Name, err)
	}
	if k.Revision != "" {
		crd.Annotations = map[string]string{wellknown.AnnotationRevision: k.Revision}
	}
	describeKind(crd, k)
	return crd, rules, nil
}

// kindCRD is the CRD of k: one version, or every version of a kind with
// spokes (versions.go).
func kindCRD(k *template.Kind) (*apiextensionsv1.CustomResourceDefinition, []Constraint, error) {
	if len(k.Versions) > 1 {
		return multiVersionCRD(k)
	}
	return resourceCRD(k.Resource, k.Spec, k.Status)
}

// FromResource returns the CustomResourceDefinition of a resource whose
// .spec is described by spec (#Spec, required) and whose .status is
// described by status (#Status; it may not exist). The CRD is namespaced
// and has one served and stored version, the status subresource, the scale
// subresource when res.Scale is set, and printer columns.
func FromResource(res template.Resource, spec, status cue.Value) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, _, err := resourceCRD(res, spec, status)
	return crd, err
}

func resourceCRD(res template.Resource, spec, status cue.Value) (*apiextensionsv1.CustomResourceDefinition, []Constraint, error) {
	names := namesOf(res)
	name := template.CRDName(names.Plural, res.Group)
	version, rules, err := versionOf(res, spec, status)
	if err != nil {
		return nil, nil, fmt.Errorf("crd %s: %w", name, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{
			APIVersion: apiextensionsv1.SchemeGroupVersion.String(),
			Kind:       "CustomResourceDefinition",
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{wellknown.LabelManagedBy: wellknown.ManagedByValue},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    res.Group,
			Names:    names,
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{*version},
		},
	}
	return crd, checkRules(crd, rules), nil
}

func versionOf(res template.Resource, spec, status cue.Value) (*apiextensionsv1.CustomResourceDefinitionVersion, []Constraint, error) {
	if err := checkResource(res); err != nil {
		return nil, nil, err
	}
	root, rules, err := rootSchema(res, spec, status)
	if err != nil {
		return nil, nil, err
	}
	sub, err := subresources(res, root)
	if err != nil {
		return nil, nil, err
	}
	return &apiextensionsv1.CustomResourceDefinitionVersion{
		Name:                     res.Version,
		Served:                   true,
		Storage:                  true,
		Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
		Subresources:             sub,
		AdditionalPrinterColumns: printerColumns(res.PrinterColumns),
	}, rules, nil
}

func checkResource(res template.Resource) error {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"group", res.Group}, {"version", res.Version}, {"kind", res.Kind},
	} {
		if f.value == "" {
			missing = append(missing, "resource."+f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: must be set", strings.Join(missing, ", "))
	}
	return nil
}

// namesOf returns the CRD names. The plural defaults to the lower-case kind
// made plural by English rules, the singular to the lower-case kind; the
// categories are Category followed by the kind's own.
func namesOf(res template.Resource) apiextensionsv1.CustomResourceDefinitionNames {
	lower := strings.ToLower(res.Kind)
	names := apiextensionsv1.CustomResourceDefinitionNames{
		Plural:     res.Plural,
		Singular:   res.Singular,
		Kind:       res.Kind,
		ListKind:   res.Kind + "List",
		ShortNames: res.ShortNames,
		Categories: []string{Category},
	}
	if names.Plural == "" {
		names.Plural = Pluralize(lower)
	}
	if names.Singular == "" {
		names.Singular = lower
	}
	for _, c := range res.Categories {
		if !slices.Contains(names.Categories, c) {
			names.Categories = append(names.Categories, c)
		}
	}
	return names
}

// Pluralize returns the English plural of a lower-case noun by the simple
// rules that cover Kubernetes kinds: -s, -x, -z, -ch, -sh take -es; a
// consonant followed by -y becomes -ies; anything else takes -s.
func Pluralize(s string) string {
	switch {
	case s == "":
		return s
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

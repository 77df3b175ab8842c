package crdgen

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// ToUnstructured converts crd to the object cueop applies and writes: type
// meta set, no status and no empty creationTimestamp.
func ToUnstructured(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	c := crd.DeepCopy()
	c.APIVersion, c.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// YAML encodes crd as a YAML document.
func YAML(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	u, err := ToUnstructured(crd)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(u.Object)
}

package kschema

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// ErrUnknownKind is returned for a kind with no built-in schema.
var ErrUnknownKind = errors.New("no built-in schema")

var (
	once      sync.Once
	converter managedfields.TypeConverter
)

// Converter returns the type converter of the built-in kinds. Building it
// parses every schema once per process.
func Converter() managedfields.TypeConverter {
	once.Do(func() { converter = applyconfigurations.NewTypeConverter(scheme.Scheme) })
	return converter
}

// Typed converts obj to a typed value of its kind's schema. Unknown fields
// and wrong types are errors; a kind with no built-in schema wraps
// ErrUnknownKind.
func Typed(obj *unstructured.Unstructured) (*typed.TypedValue, error) {
	if !Known(obj) {
		return nil, fmt.Errorf("%s: %w", obj.GroupVersionKind(), ErrUnknownKind)
	}
	tv, err := Converter().ObjectToTyped(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return tv, nil
}

// Known reports whether obj's kind has a built-in schema.
func Known(obj *unstructured.Unstructured) bool {
	return KnownKind(obj.GroupVersionKind())
}

// KnownKind reports whether the kind gvk has a built-in schema.
func KnownKind(gvk schema.GroupVersionKind) bool {
	return scheme.Scheme.Recognizes(gvk)
}

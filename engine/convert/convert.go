package convert

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// Converter converts objects of one kind between its served versions. It
// is immutable and safe for concurrent use.
type Converter struct {
	kind *template.Kind
}

// New compiles the conversions of k. It returns nil, nil for a kind with
// one version.
func New(k *template.Kind) (*Converter, error) {
	if len(k.Versions) < 2 {
		return nil, nil
	}
	return &Converter{kind: k}, nil
}

// Convert returns obj converted to toVersion of the kind's group. obj is
// not modified.
func (c *Converter) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("%s: conversion to %s: not implemented yet", c.kind.Resource.Kind, toVersion)
}

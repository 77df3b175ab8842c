package convert

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// IncompletePrefix, followed by a version, marks an object converted from
// that version (the hub) without the fields the target cannot hold, as
// their annotation would not fit (AnnotationTooLargeError). Its value
// names the fields. A conversion of a marked object back to that version
// is refused: it would store the object without them.
const IncompletePrefix = "cueop.dev/conversion-incomplete."

// IncompleteError is a conversion away from the hub whose annotation would
// not fit: Converted is the object without the fields, marked
// (IncompletePrefix), which a reader may have; a writer at its version is
// refused. The webhook answers with Converted and reports the error on
// the CR, so that one CR does not fail the reads and watches of every
// other at that version.
type IncompleteError struct {
	*AnnotationTooLargeError
	// Subject names the object: Kind ns/name.
	Subject string
	Object  *unstructured.Unstructured
}

func (e *IncompleteError) Error() string {
	return e.Subject + ": " + e.AnnotationTooLargeError.Error()
}

// Converted is the object to answer with.
func (e *IncompleteError) Converted() *unstructured.Unstructured { return e.Object }

func (e *IncompleteError) Unwrap() error { return e.AnnotationTooLargeError }

// maxIncompleteNames bounds the fields the marker names.
const maxIncompleteNames = 10

// incomplete turns out, converted from the hub from with an annotation too
// large (tooLarge), into the marked object without it.
func incomplete(out *unstructured.Unstructured, subject string, from *template.Version, tooLarge *AnnotationTooLargeError) *IncompleteError {
	dropAnnotation(out, from.Name)
	names := tooLarge.Fields
	if len(names) > maxIncompleteNames {
		names = append(names[:maxIncompleteNames:maxIncompleteNames], fmt.Sprintf("and %d more", len(tooLarge.Fields)-maxIncompleteNames))
	}
	a := out.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[IncompletePrefix+from.Name] = strings.Join(names, ", ")
	out.SetAnnotations(a)
	return &IncompleteError{AnnotationTooLargeError: tooLarge, Subject: subject, Object: out}
}

// refuseIncomplete refuses to convert obj to version to when obj is
// marked as read without fields of to (IncompletePrefix): storing it would
// lose them.
func (c *Converter) refuseIncomplete(obj *unstructured.Unstructured, from, to *template.Version) error {
	fields, ok := obj.GetAnnotations()[IncompletePrefix+to.Name]
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: conversion %s to %s: the object was read at %s without %s, which %s cannot hold and which were too large to carry along (annotation %s%s): write it at %s",
		c.subject(obj), from.Name, to.Name, from.Name, fields, from.Name, IncompletePrefix, to.Name, to.Name)
}

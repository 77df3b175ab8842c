package convert

import (
	"fmt"
	"sort"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// IncompleteError is a conversion away from the hub whose annotation would
// not fit: Converted is the object without the fields, marked
// (wellknown.AnnotationIncompletePrefix), which a reader may have; a writer at its version is
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

// incomplete turns out, converted from the hub from with an annotation too
// large (tooLarge), into the marked object without it. When even the
// marker would not fit beside the object's other annotations, the largest
// of them are dropped from out until it does, and the marker counts them
// ("1 fields, 2 annotations"): a marked object is never written back (a
// write of it is refused), so the reader alone misses them, and one CR
// fails no other's reads.
func incomplete(out *unstructured.Unstructured, subject string, from *template.Version, tooLarge *AnnotationTooLargeError) *IncompleteError {
	dropAnnotation(out, from.Name)
	a := out.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	key, value := wellknown.AnnotationIncompletePrefix+from.Name, fmt.Sprintf("%d fields", len(tooLarge.Fields))
	size := 0
	for k, v := range a {
		size += len(k) + len(v)
	}
	if size+len(key)+len(value) > apivalidation.TotalAnnotationSizeLimitB {
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { // largest first, then by key
			si, sj := len(keys[i])+len(a[keys[i]]), len(keys[j])+len(a[keys[j]])
			return si > sj || si == sj && keys[i] < keys[j]
		})
		marker := func(dropped int) string {
			return fmt.Sprintf("%d fields, %d annotations", len(tooLarge.Fields), dropped)
		}
		fits := func(dropped int) bool {
			return size+len(key)+len(marker(dropped)) <= apivalidation.TotalAnnotationSizeLimitB
		}
		dropped := 0
		for _, k := range keys {
			if fits(dropped) {
				break
			}
			size -= len(k) + len(a[k])
			delete(a, k)
			dropped++
		}
		if !fits(dropped) {
			return nil // not reached: the marker alone fits
		}
		value = marker(dropped)
	}
	a[key] = value
	out.SetAnnotations(a)
	return &IncompleteError{AnnotationTooLargeError: tooLarge, Subject: subject, Object: out}
}

// dropMarkers removes every wellknown.AnnotationIncompletePrefix annotation of out: an object
// converted from the hub is never marked but by its own conversion (a
// marker a user set at the hub means nothing).
func dropMarkers(out *unstructured.Unstructured) {
	a := out.GetAnnotations()
	n := len(a)
	for k := range a {
		if strings.HasPrefix(k, wellknown.AnnotationIncompletePrefix) {
			delete(a, k)
		}
	}
	if len(a) != n {
		if len(a) == 0 {
			a = nil
		}
		out.SetAnnotations(a)
	}
}

// refuseIncomplete refuses to convert obj to the hub when it is marked as
// read without fields (wellknown.AnnotationIncompletePrefix, any version): storing it would
// lose them.
func (c *Converter) refuseIncomplete(obj *unstructured.Unstructured, from, to *template.Version) error {
	if !to.Hub || from.Hub {
		return nil
	}
	for k := range obj.GetAnnotations() {
		if strings.HasPrefix(k, wellknown.AnnotationIncompletePrefix) {
			return fmt.Errorf("%s: conversion %s to %s: the object was read at %s without fields %s cannot hold, too large to carry along (annotation %s): write it at %s",
				c.subject(obj), from.Name, to.Name, from.Name, from.Name, k, strings.TrimPrefix(k, wellknown.AnnotationIncompletePrefix))
		}
	}
	return nil
}

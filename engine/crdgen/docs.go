package crdgen

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
)

// describeKind sets the description of the CRD's root schema from the
// package doc comment of k, written as Go writes one ("Package x is the X
// kind: ...") and read by `kubectl explain <kind>`. A package without one
// keeps the generic description.
func describeKind(crd *apiextensionsv1.CustomResourceDefinition, k *template.Kind) {
	doc := docString(k.Value)
	if doc == "" || len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
		return
	}
	name := k.Name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil {
			s.OpenAPIV3Schema.Description = withoutSubject(doc, "Package "+name)
		}
	}
}

// definitionDoc is the doc comment of a definition without its leading
// name: "#Spec is what a user asks for." is "What a user asks for.", as the
// description of `spec` in the CRD.
func definitionDoc(v cue.Value, name string) string {
	return withoutSubject(docString(v), name)
}

// withoutSubject drops subject (and a following "is" or "are") from the
// start of doc and capitalises what follows. A doc that does not start
// with subject is kept as it is.
func withoutSubject(doc, subject string) string {
	rest, ok := strings.CutPrefix(doc, subject+" ")
	if !ok {
		return doc
	}
	for _, verb := range []string{"is ", "are "} {
		if r, ok := strings.CutPrefix(rest, verb); ok {
			rest = r
			break
		}
	}
	rest = strings.TrimSpace(rest)
	r, size := utf8.DecodeRuneInString(rest)
	if rest == "" || r == utf8.RuneError {
		return doc
	}
	return string(unicode.ToUpper(r)) + rest[size:]
}

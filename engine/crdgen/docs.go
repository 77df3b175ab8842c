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

// reflow joins the hard-wrapped lines of a doc comment into one line per
// paragraph, so that `kubectl explain`, which wraps descriptions itself,
// does not break a sentence where the comment did. Blank lines still
// separate paragraphs; list items (`- x`, `* x`, `1. x`) start a line of
// their own and take their indented continuation lines; other indented
// lines (code) are kept as they are.
func reflow(doc string) string {
	paras := strings.Split(doc, "\n\n")
	for i, p := range paras {
		paras[i] = reflowParagraph(p)
	}
	return strings.Join(paras, "\n\n")
}

func reflowParagraph(p string) string {
	var out []string
	inItem, verbatim := false, false
	for _, line := range strings.Split(p, "\n") {
		indented := line != strings.TrimLeft(line, " \t")
		text := strings.TrimSpace(line)
		switch {
		case len(out) == 0 || listItem(text):
			out = append(out, strings.TrimRight(line, " \t"))
			inItem, verbatim = listItem(text), indented && !listItem(text)
		case indented && !inItem, verbatim:
			out = append(out, strings.TrimRight(line, " \t"))
			inItem, verbatim = false, indented
		default:
			out[len(out)-1] += " " + text
		}
	}
	return strings.Join(out, "\n")
}

// listItem says whether a trimmed line starts an item of a list.
func listItem(s string) bool {
	if strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "* ") || strings.HasPrefix(s, "+ ") {
		return true
	}
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	return digits > 0 && (strings.HasPrefix(s[digits:], ". ") || strings.HasPrefix(s[digits:], ") "))
}

package golden

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// SectionReferenced is the optional section of a case holding the objects
// its template may reference (a YAML stream), read as the operator reads
// them: in the CR's namespace only, by group, kind and name or selector.
const SectionReferenced = "referenced.yaml"

// resolveReferences evaluates k's references for parent and resolves them
// against the objects given. A reference by name that finds none fails as
// the operator's CR would wait: ReferenceNotFound.
func resolveReferences(k *template.Kind, parent *unstructured.Unstructured, objs []*unstructured.Unstructured, opts render.Options) (render.Inputs, error) {
	refs, err := render.References(k, parent, opts)
	in := render.Inputs{Kind: k, Parent: parent}
	if err != nil || len(refs) == 0 {
		return in, err
	}
	got, missing := render.Resolve(refs, parent.GetNamespace(), objs)
	if len(missing) > 0 {
		return render.Inputs{}, MissingReferences(parent.GetNamespace(), missing)
	}
	in.Referenced = got
	return in, nil
}

// MissingReferences is the error of a case whose references by name find
// nothing among the objects it gives: ReferenceNotFound, as the operator's
// CR would wait.
func MissingReferences(namespace string, missing []render.Reference) *render.Error {
	out := &render.Error{Reason: wellknown.ReasonReferenceNotFound}
	for _, m := range missing {
		out.Messages = append(out.Messages, fmt.Sprintf("%s not found in namespace %s: give it in %s (cueop test) or --referenced (cueop render)", m, namespace, SectionReferenced))
	}
	return out
}

package render

import (
	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Fields a child may not set. Ownership is the engine's: it sets the one
// controller owner reference, and a template that brings its own owners or
// finalizers could hand a child to another controller, keep it from being
// garbage collected, or block its deletion. The others are the API server's
// to write: sent with an apply they are ignored at best and refused at
// worst, and a template that copies them from `observed` means something
// it cannot have.
var forbiddenMetadata = []string{
	"ownerReferences", "finalizers", "uid", "resourceVersion", "generation",
	"managedFields", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
}

// checkForbidden refuses a child that sets a field of forbiddenMetadata or
// a status. `creationTimestamp: null` and `status: {}`, which
// `kubectl create --dry-run -o yaml` writes into every object, say nothing:
// they are dropped instead.
func checkForbidden(id string, v cue.Value, obj *unstructured.Unstructured) string {
	md, _ := obj.Object["metadata"].(map[string]any)
	if ts, ok := md["creationTimestamp"]; ok && ts == nil {
		delete(md, "creationTimestamp")
	}
	if st, ok := obj.Object["status"].(map[string]any); ok && len(st) == 0 {
		delete(obj.Object, "status")
	}
	for _, f := range forbiddenMetadata {
		if _, set := md[f]; set {
			return fieldError(id, v, cue.MakePath(cue.Str("metadata"), cue.Str(f)),
				"metadata.%s refused: %s", f, forbiddenWhy(f))
		}
	}
	if _, set := obj.Object["status"]; set {
		return fieldError(id, v, cue.MakePath(cue.Str("status")),
			"status refused: a child's status is written by its own controller, not by the template")
	}
	return ""
}

func forbiddenWhy(field string) string {
	switch field {
	case "ownerReferences":
		return "the engine sets the one controller owner reference of every child"
	case "finalizers":
		return "a finalizer no controller removes would block the child's deletion"
	}
	return "the API server sets it"
}

// fieldError is childError at the position of the child's field at p, or
// of the child when the field has none.
func fieldError(id string, v cue.Value, p cue.Path, format string, args ...any) string {
	if f := v.LookupPath(p); f.Exists() && f.Pos().IsValid() {
		return childError(id, f, format, args...)
	}
	return childError(id, v, format, args...)
}

// checkEngineSet refuses a child whose template-set fields the checks
// above and below refuse, in the order a reader fixes them.
func checkEngineSet(id string, v cue.Value, obj *unstructured.Unstructured) string {
	if msg := checkForbidden(id, v, obj); msg != "" {
		return msg
	}
	return checkNames(id, v, obj)
}

package render

import (
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Condition is one of the template's own conditions (`conditions`), for
// the controller to merge into status.conditions with its transition time
// and observed generation.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"` // "True", "False" or "Unknown"
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// exportConditions evaluates the template's conditions, sorted by type. A
// type cueop writes itself (Ready, Reconciling, Stalled), a type that is
// not a qualified name or a value that is not concrete is a TemplateError
// at the condition's position.
func exportConditions(k *template.Kind, v cue.Value) ([]Condition, error) {
	if !k.Conditions {
		return nil, nil
	}
	cv := v.LookupPath(template.PathConditions)
	if !cv.Exists() {
		return nil, nil
	}
	if err := cv.Validate(cue.Concrete(true)); err != nil {
		return nil, evalError(err)
	}
	types, vals, err := sortedIDs(cv)
	if err != nil {
		return nil, err
	}
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	out := make([]Condition, 0, len(types))
	for _, t := range types {
		c, msg := condition(t, vals[t])
		if msg != "" {
			bad.Messages = append(bad.Messages, entryError(template.FieldConditions, t, vals[t], "%s", msg))
			continue
		}
		out = append(out, c)
	}
	if len(bad.Messages) > 0 {
		return nil, bad
	}
	return out, nil
}

// condition decodes one condition, or says what is wrong with it.
func condition(t string, v cue.Value) (Condition, string) {
	if template.IsEngineCondition(t) {
		return Condition{}, t + " is written by cueop (types are matched ignoring case); give the template's condition another type"
	}
	if errs := validation.IsQualifiedName(t); len(errs) > 0 {
		return Condition{}, fmt.Sprintf("type %q is not a qualified name: %s", t, strings.Join(errs, "; "))
	}
	var raw struct {
		Status  any    `json:"status"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if err := v.Decode(&raw); err != nil {
		return Condition{}, err.Error()
	}
	c := Condition{Type: t, Reason: raw.Reason, Message: raw.Message}
	switch s := raw.Status.(type) {
	case bool:
		c.Status = "False"
		if s {
			c.Status = "True"
		}
	case string:
		c.Status = s
	}
	return c, ""
}

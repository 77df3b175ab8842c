package template

import (
	"fmt"
	"strings"

	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/wellknown"
)

// ConditionsContract is the file name positions in the conditions contract
// carry.
const ConditionsContract = "conditions contract"

// EngineConditions are the condition types cueop writes itself: a template
// may not give them.
var EngineConditions = []string{wellknown.ConditionReady, wellknown.ConditionReconciling, wellknown.ConditionStalled}

// IsEngineCondition tells whether t is one of EngineConditions, ignoring
// case: kubectl wait matches condition types ignoring case, and takes the
// first, so READY would shadow Ready.
func IsEngineCondition(t string) bool {
	for _, e := range EngineConditions {
		if strings.EqualFold(e, t) {
			return true
		}
	}
	return false
}

// conditionsSchema is the contract of `conditions`: a status (a bool, or
// "True", "False" or "Unknown"), a reason as metav1.Condition takes it and
// an optional message.
const conditionsSchema = `[string]: close({
	status!:  bool | "True" | "False" | "Unknown"
	reason!:  =~"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" & strings.MaxRunes(1024)
	message?: string & strings.MaxRunes(32768)
})`

// withConditions checks the template's conditions against their contract,
// refuses an engine condition type at its position, and returns v with the
// contract unified in and whether the kind gives conditions.
func withConditions(v cue.Value) (cue.Value, bool, error) {
	schema := "import \"strings\"\n" + conditionsSchema
	if f := v.LookupPath(PathConditions); f.Exists() && f.IncompleteKind() == cue.BottomKind && f.Validate() == nil {
		// Conditions under an `if` on the spec are incomplete until a
		// render fills the CR: each render checks them.
		s := v.Context().CompileString(schema, cue.Filename(ConditionsContract))
		return v.FillPath(PathConditions, s), true, nil
	}
	out, ok, err := withContract(v, PathConditions, schema, ConditionsContract, "conditions keyed by type")
	if err != nil || !ok {
		return out, ok, err
	}
	it, err := v.LookupPath(PathConditions).Fields()
	for err == nil && it.Next() {
		if t := it.Selector().Unquoted(); IsEngineCondition(t) {
			return v, true, fmt.Errorf("%s: %s.%s: %s is written by cueop (types are matched ignoring case); give the template's condition another type", posOf(it.Value()), PathConditions, t, t)
		}
	}
	return out, true, nil
}

package testkit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Condition is the condition of type typ in obj's status.conditions, or
// nil.
func Condition(obj *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// ConditionStatus is the status of the condition of type typ in obj's
// status.conditions, or "" when it has none.
func ConditionStatus(obj *unstructured.Unstructured, typ string) string {
	if c := Condition(obj, typ); c != nil {
		return fmt.Sprint(c["status"])
	}
	return ""
}

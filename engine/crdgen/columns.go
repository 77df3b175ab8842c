package crdgen

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
)

const (
	readyStatusPath = `.status.conditions[?(@.type=="Ready")].status`
	readyReasonPath = `.status.conditions[?(@.type=="Ready")].reason`
	agePath         = ".metadata.creationTimestamp"
)

// printerColumns returns the author's columns, or Ready and Reason (of the
// Ready condition) when there are none, and Age last unless the author
// already has it. A column without a type is a string column.
func printerColumns(cols []template.PrinterColumn) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(cols) == 0 {
		return []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: readyStatusPath,
				Description: "The status of the Ready condition."},
			{Name: "Reason", Type: "string", JSONPath: readyReasonPath, Priority: 1,
				Description: "The reason of the Ready condition."},
			ageColumn(),
		}
	}
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, 0, len(cols)+1)
	hasAge := false
	for _, c := range cols {
		if c.Type == "" {
			c.Type = "string"
		}
		hasAge = hasAge || strings.EqualFold(c.Name, "age") || c.JSONPath == agePath
		out = append(out, apiextensionsv1.CustomResourceColumnDefinition{
			Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description,
			Priority: c.Priority, JSONPath: c.JSONPath,
		})
	}
	if !hasAge {
		out = append(out, ageColumn())
	}
	return out
}

func ageColumn() apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: agePath}
}

package crdgen

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

const (
	readyStatusPath = `.status.conditions[?(@.type=="` + wellknown.ConditionReady + `")].status`
	readyReasonPath = `.status.conditions[?(@.type=="` + wellknown.ConditionReady + `")].reason`
	agePath         = ".metadata.creationTimestamp"
	revisionPath    = ".status.revision"
)

// printerColumns returns the author's columns, or Ready and Reason (of the
// Ready condition) when there are none, then Age unless the author already
// has it, and the template Revision a CR was last rendered with (shown with
// -o wide) unless the author has it. A column without a type is a string
// column.
func printerColumns(cols []template.PrinterColumn) []apiextensionsv1.CustomResourceColumnDefinition {
	out := authorColumns(cols)
	if len(cols) == 0 {
		out = []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: readyStatusPath,
				Description: "The status of the Ready condition."},
			{Name: "Reason", Type: "string", JSONPath: readyReasonPath, Priority: 1,
				Description: "The reason of the Ready condition."},
		}
	}
	if !hasColumn(out, "age", agePath) {
		out = append(out, ageColumn())
	}
	if !hasColumn(out, "revision", revisionPath) {
		out = append(out, apiextensionsv1.CustomResourceColumnDefinition{Name: "Revision", Type: "string",
			JSONPath: revisionPath, Priority: 1, Description: "The template revision the resource was last rendered with."})
	}
	return out
}

func hasColumn(cols []apiextensionsv1.CustomResourceColumnDefinition, name, path string) bool {
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) || c.JSONPath == path {
			return true
		}
	}
	return false
}

func authorColumns(cols []template.PrinterColumn) []apiextensionsv1.CustomResourceColumnDefinition {
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, 0, len(cols)+2)
	for _, c := range cols {
		if c.Type == "" {
			c.Type = "string"
		}
		out = append(out, apiextensionsv1.CustomResourceColumnDefinition{
			Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description,
			Priority: c.Priority, JSONPath: c.JSONPath,
		})
	}
	return out
}

func ageColumn() apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: agePath}
}

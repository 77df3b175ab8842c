package main

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// templateCRDPath is where `cueop manifests` writes the Template CRD
// (operator.TemplateCRD), which config/crd installs.
const templateCRDPath = "config/crd/templates.cueop.dev.yaml"

// templateRules let the operator write each kind's Template object and
// its status (engine/operator/templatestatus.go).
func templateRules() []rbacv1.PolicyRule {
	return rulesFor([]schema.GroupResource{{Group: "cueop.dev", Resource: "templates"}, {Group: "cueop.dev", Resource: "templates/status"}},
		"get", "list", "watch", "create", "patch")
}

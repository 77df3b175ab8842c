package main

// templateCRDPath is where `cueop manifests` writes the Template CRD
// (operator.TemplateCRD), which config/crd installs; the operator's rights
// on templates are in identity.Operator.
const templateCRDPath = "config/crd/templates.cueop.dev.yaml"

package crdgen

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
)

// The conversion webhook a CRD of a kind with spokes names: cueop's
// Service in config/. An operator that serves the webhook elsewhere (cueop
// dev, the tests) rewrites the client config when it installs the CRD.
const (
	WebhookNamespace = "cueop-system"
	WebhookService   = "cueop-webhook"
	WebhookPath      = "/convert"
	WebhookPort      = 443
)

// multiVersionCRD returns the CRD of a kind with spokes: every version
// generated alone, as the CRD of a kind with one version is (its schema,
// CEL rules, subresources and columns), then listed together, the hub
// stored, with the Webhook conversion. The constraints returned are the
// hub's.
func multiVersionCRD(k *template.Kind) (*apiextensionsv1.CustomResourceDefinition, []Constraint, error) {
	var crd *apiextensionsv1.CustomResourceDefinition
	var hubRules []Constraint
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range k.Versions {
		res := k.Resource
		res.Version, res.PrinterColumns, res.Scale = v.Name, v.PrinterColumns, v.Scale
		one, rules, err := resourceCRD(res, v.Spec, v.Status)
		if err != nil {
			return nil, nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		cv := one.Spec.Versions[0]
		cv.Storage = v.Hub
		cv.Deprecated = v.Deprecated
		if v.DeprecationWarning != "" {
			cv.DeprecationWarning = ptr(v.DeprecationWarning)
		}
		versions = append(versions, cv)
		if v.Hub {
			crd, hubRules = one, rules
		}
	}
	crd.Spec.Versions = versions
	crd.Spec.Conversion = WebhookConversion()
	return crd, hubRules, nil
}

// WebhookConversion is the conversion stanza of a CRD of a kind with
// spokes: cueop's webhook, ConversionReview v1.
func WebhookConversion() *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{
					Namespace: WebhookNamespace, Name: WebhookService,
					Path: ptr(WebhookPath), Port: ptr(int32(WebhookPort)),
				},
			},
		},
	}
}

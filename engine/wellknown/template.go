package wellknown

// The conditions of a Template object (cueop.dev/v1alpha1, one per kind,
// written by the operator: operator/templatestatus.go) and their reasons:
//
//   - Ready is True while a revision of the kind serves (a controller
//     reconciles its CRs), the last good one included;
//   - Degraded is True while the newest revision does not serve: its
//     template did not load (TemplateError), its module version was refused
//     at fetch (ModuleRefused), its schema change or its conversions were
//     refused (SchemaRefused, ConversionRefused), it failed its admission
//     (AdmissionRefused), its serve failed
//     (ServeFailed), the served CRD lacks fields of its schema
//     (CRDBehind), or it waits for its CRD (WaitingForCRD);
//   - a kind removed from the templates keeps its object, Ready False with
//     reason KindRemoved.
const (
	TemplateConditionReady    = "Ready"
	TemplateConditionDegraded = "Degraded"

	TemplateReasonServing       = "Serving"
	TemplateReasonTemplateError = "TemplateError"
	TemplateReasonSchemaRefused = "SchemaRefused"
	// TemplateReasonAdmissionRefused: the newest revision failed the
	// admission `cueop vet` runs (operator/admit.go).
	TemplateReasonAdmissionRefused  = "AdmissionRefused"
	TemplateReasonConversionRefused = "ConversionRefused"
	TemplateReasonServeFailed       = "ServeFailed"
	// TemplateReasonHeldByAnotherOperator: the kind's CRD names another
	// operator instance (operator/holder.go).
	TemplateReasonHeldByAnotherOperator = "HeldByAnotherOperator"
	TemplateReasonWaitingForCRD         = "WaitingForCRD"
	// TemplateReasonCRDBehind: cueop does not install CRDs and the served
	// CRD lacks fields of the newest revision's schema
	// (operator/crdlag.go).
	TemplateReasonCRDBehind   = "CRDBehind"
	TemplateReasonKindRemoved = "KindRemoved"
	// TemplateReasonModuleRefused is the Degraded reason of a kind whose
	// module reference moved to a version refused at fetch; the reason of
	// the Warning Event on the kind's CRD too.
	TemplateReasonModuleRefused = "ModuleRefused"
)

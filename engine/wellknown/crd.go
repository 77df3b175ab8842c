package wellknown

import apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// CRDConditionStorageMigrating is the CRD's condition type that tells a
// storage migration's state (package migrate), the one Kubernetes' own
// migrator sets; CRDReasonStorageMigrationRunning and
// CRDReasonStorageMigrationSucceeded are its reasons.
const (
	CRDConditionStorageMigrating       = apiextensionsv1.StorageMigrating
	CRDReasonStorageMigrationRunning   = "StorageMigrationRunning"
	CRDReasonStorageMigrationSucceeded = "StorageMigrationSucceeded"
)

// CRDConditionStatusWriteFailing is the condition of a kind's CRD that
// tells whether CRs of the kind have a status cueop cannot write: True
// from the first such CR (reason ReasonStatusWriteFailed, that CR and the
// API server's error in the message; no count of the CRs) until every one
// of them is written again (False, reason CRDReasonStatusWritten). Each
// such CR also has a StatusWriteFailed Warning Event, and
// cueop_status_write_failures_total{kind} counts the failed writes.
const (
	CRDConditionStatusWriteFailing apiextensionsv1.CustomResourceDefinitionConditionType = "StatusWriteFailing"
	CRDReasonStatusWritten                                                               = "StatusWritten"
)

// The reasons of the Events the operator records on a kind's CRD (besides
// TemplateReasonModuleRefused): its newest template did not load or
// compile (CRDReasonTemplateError), its schema change would break stored
// CRs (CRDReasonBreakingSchemaChange), or its rollout halted
// (CRDReasonRolloutHalted).
const (
	CRDReasonTemplateError        = "TemplateError"
	CRDReasonBreakingSchemaChange = "BreakingSchemaChange"
	CRDReasonRolloutHalted        = "RolloutHalted"
)

// The reasons of the Events a storage migration records on the CRD: it
// started, resumed from its checkpoint, moved on a page, succeeded
// (CRDReasonStorageMigrationSucceeded) or failed.
const (
	CRDReasonStorageMigrationStarted  = "StorageMigrationStarted"
	CRDReasonStorageMigrationResumed  = "StorageMigrationResumed"
	CRDReasonStorageMigrationProgress = "StorageMigrationProgress"
	CRDReasonStorageMigrationFailed   = "StorageMigrationFailed"
)

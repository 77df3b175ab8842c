package wellknown

// The CR's conditions: the kstatus condition types and the reasons cueop
// gives them, and the reasons of the Events it records on a CR. A render
// Error's reason (render.Error.Reason) is the reason of the Stalled
// condition.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"

	ReasonReady            = "Ready"
	ReasonChildrenNotReady = "ChildrenNotReady"
	ReasonConverged        = "Converged"
	ReasonProgressing      = "Progressing"
	ReasonRollout          = "Rollout"
	ReasonApplyRejected    = "ApplyRejected"
	ReasonObserveFailed    = "ObserveFailed"
)

// Reasons of a render Error, used as the reason of the Stalled condition.
const (
	ReasonInvalidSpec   = "InvalidSpec"
	ReasonTemplateError = "TemplateError"
	ReasonChildRefused  = "ChildRefused"
)

// ReasonRenderBudget is a render that ran out of its time or memory budget.
// Like every render Error it stalls the CR until its spec or the template
// changes.
const ReasonRenderBudget = "RenderBudget"

// Reasons of references: a reference to a kind outside the readable kinds
// (the CR stalls), and a reference by name to an object that does not
// exist: the CR is not rendered, and its children stay as they are, until
// the object appears (its watch event wakes the CR).
const (
	ReasonReferenceRefused  = "ReferenceRefused"
	ReasonReferenceNotFound = "ReferenceNotFound"
)

// ReasonRenderPending is the reason of a CR that this reconcile did not
// render at its current inputs: the render was refused (too many earlier
// renders of its kind still running) or could not run, or what it reads
// could not be read. Such a CR never reads Converged: it says why it waits,
// Reconciling=True with this reason (Ready=Unknown too when it has no Ready
// condition yet; else Ready is left as it was), and the reconcile is
// retried with backoff (at once on a change of spec, child or reference).
const ReasonRenderPending = "RenderPending"

// ReasonWaitingForWave is the Reconciling reason of a CR whose children of
// a higher wave wait for a child of a lower one.
const ReasonWaitingForWave = "WaitingForWave"

// ReasonReadsAbsentField is the reason of Ready=False when what Ready
// depends on (the template's ready, else its readyWhen) reads a field that
// the rendered child's kind does not have, and nothing else keeps the CR
// from Ready: the child read exists and every child is otherwise ready
// (render.AbsentMayBlock). The read never finds a value, so the CR may never
// be Ready whatever its children do.
const ReasonReadsAbsentField = "ReadsAbsentField"

// ReasonDeleting is the reason of a CR being deleted wave by wave.
const ReasonDeleting = "Deleting"

// ReasonImmutableChange stalls a CR whose child the API server refuses to
// change as immutable, when the child's policy does not allow recreating it.
const ReasonImmutableChange = "ImmutableChange"

// ReasonChildConflict stalls a CR a rendered child of which exists as an
// object the CR does not control and may not adopt.
const ReasonChildConflict = "ChildConflict"

// ReasonForbidden stalls a CR a request for whose children or references
// the API server refused as forbidden (RBAC).
const ReasonForbidden = "Forbidden"

// ReasonNamespaceNotBound stalls a CR of a kind the administrator binds in
// other namespaces only (reconcile.Host.Bound): it renders, applies
// and prunes nothing.
const ReasonNamespaceNotBound = "NamespaceNotBound"

// ReasonSpecNotRendered is the reason of the Warning Event on a CR whose
// spec, written at a spoke version, holds fields the hub cannot.
const ReasonSpecNotRendered = "SpecNotRendered"

// ReasonManagedFieldsRepaired is the reason of the Normal Event on a CR
// whose managedFields entries at versions the kind no longer serves were
// moved to the version cueop reads it at, for its status to be written.
const ReasonManagedFieldsRepaired = "ManagedFieldsRepaired"

// ReasonStatusWriteFailed is the reason of the Warning Event on a CR whose
// status the API server refused to write: the CR keeps reading its last
// written status (Ready at an older observedGeneration, as kstatus reads
// it: in progress). It is also the reason of the CRD's
// CRDConditionStatusWriteFailing while True.
const ReasonStatusWriteFailed = "StatusWriteFailed"

// The condition the conversion webhook sets False on a CR it cannot
// convert for a reason of the CR itself: its annotation of the fields the
// other version cannot hold would not fit in metadata.annotations
// (convert.AnnotationTooLargeError). It is written by its own field
// manager, beside the reconciler's conditions, with a Warning Event of the
// same reason, and removed once the CR converts again.
const (
	ConditionConvertible     = "Convertible"
	ReasonAnnotationTooLarge = "AnnotationTooLarge"
)

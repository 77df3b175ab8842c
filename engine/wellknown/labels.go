package wellknown

// The labels the engine sets on every child. LabelOwnerUID and LabelID are
// how the controller finds a parent's children and matches them to child
// ids. Every generated CRD carries LabelManagedBy=ManagedByValue too.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "cueop"
	LabelOwnerUID  = "cueop.dev/owner-uid"
	LabelID        = "cueop.dev/id"
)

// LabelName is the label, with the value ManagedByValue, on the objects
// cueop makes for itself: the release key Secret, and the ServiceAccounts,
// roles and bindings package identity writes.
const LabelName = "app.kubernetes.io/name"

// LabelIdentity names, on every child of a kind that acts as its own
// ServiceAccount (operator.Options.Identities), that ServiceAccount: the
// children cache of the identity selects it, so that each child is cached
// once, by the identity that wrote it.
const LabelIdentity = "cueop.dev/identity"

// LabelShard is the label cueop stamps on each child of a sharded replica:
// the range of its CR (shard.Range.Label), so that a replica caches only
// the children of the ranges it holds.
const LabelShard = "cueop.dev/shard"

// LabelShards on a member Lease is its replica's shard count
// (shard.Options.Shards).
const LabelShards = "cueop.dev/shards"

// LabelShardMember marks the member Leases, one per replica.
const LabelShardMember = "cueop.dev/shard-member"

// AnnotationAppliedHash holds the hash of what the applier last applied.
const AnnotationAppliedHash = "cueop.dev/applied-hash"

// AnnotationWave carries a child's wave on the object itself, set only when
// it is not 0: a CR being deleted loses its children in reverse wave order,
// and the template may no longer render them.
const AnnotationWave = "cueop.dev/wave"

// Annotations that carry a child's lifecycle policy on the object itself:
// prune and deletion act on live objects, which the template may no longer
// render. They are set where the policy differs from the default of every
// kind (prune: always, onDelete: delete), and always on a child of a data
// kind (render/results.go). A live object without them gets its kind's
// default (render.LivePolicy), so that no decision depends on an
// annotation having reached the object.
const (
	AnnotationPrune    = "cueop.dev/prune"
	AnnotationOnDelete = "cueop.dev/on-delete"
)

// AnnotationReleasedFrom names, on a released child, the CR it belonged to:
// "Kind.group ns/name" (reconcile's subjectOf).
const AnnotationReleasedFrom = "cueop.dev/released-from"

// AnnotationReleaseProof is, on a released child, the proof that cueop
// released it from the CR AnnotationReleasedFrom names
// (reconcile.ReleaseProof).
const AnnotationReleaseProof = "cueop.dev/release-proof"

// FinalizerOrdered is on the CRs of a kind that orders its children in
// waves: a CR being deleted loses its children in reverse wave order, each
// wave gone before the next is deleted, and only then goes.
const FinalizerOrdered = "cueop.dev/ordered-deletion"

// FinalizerRetain is on a CR while it has children to release, not delete,
// when it is deleted (policies: onDelete: "retain", the default of a data
// kind).
const FinalizerRetain = "cueop.dev/retain"

// AnnotationConversionPrefix prefixes the annotation that carries the spec
// of the version it names (cueop.dev/conversion.v2) through a conversion to
// a version that cannot hold all of it.
const AnnotationConversionPrefix = "cueop.dev/conversion."

// AnnotationIncompletePrefix, followed by a version, marks an object
// converted from that version (the hub) without the fields the target
// cannot hold, as their annotation would not fit
// (convert.AnnotationTooLargeError). Its value names the fields. A
// conversion of a marked object back to that version is refused: it would
// store the object without them.
const AnnotationIncompletePrefix = "cueop.dev/conversion-incomplete."

// AnnotationRevision records, on a CRD, the template revision it was
// generated from.
const AnnotationRevision = "cueop.dev/revision"

// AnnotationPackage records, on each CRD cueop applies, the package
// (template.Kind.Name: <module>/<package> for a registry module) it was
// applied for: the holder of the kind's claims (template/claims.go) that
// a fresh operator, with nothing served yet and an empty module cache,
// finds again.
const AnnotationPackage = "cueop.dev/package"

// AnnotationStorageMigration on a CRD holds the checkpoint of a storage
// migration under way (package migrate).
const AnnotationStorageMigration = "cueop.dev/storage-migration"

// AnnotationOperator names, on a kind's CRD, the operator instance holding
// the kind (operator/holder.go).
const AnnotationOperator = "cueop.dev/operator"

// AnnotationTemplates names, on a Template, the templates its writer loads
// (the directory; for registry modules, the directory they are laid out
// in, whose modules the status' source names).
const AnnotationTemplates = "cueop.dev/templates"

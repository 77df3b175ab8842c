// Package apply is the only place cueop writes children. It applies each
// desired child with server-side apply under one field manager ("cueop"),
// and sends no request at all when the live object, as the informer cache
// holds it, shows that nothing would change.
//
//	a := &apply.Applier{Client: c}
//	action, err := a.Apply(ctx, desired, live) // live from the cache, nil when absent
//	if apply.IsImmutable(err) {
//		err = a.Recreate(ctx, desired, live) // delete by UID, wait until gone, create
//	}
//	...
//	err = a.Prune(ctx, orphan) // only after every apply succeeded
//
// The API:
//
//   - Applier{Client, FieldManager, TypeConverter, Responses}: FieldManager
//     defaults to "cueop"; TypeConverter is only for kinds that are not
//     built in; Responses (NewMetadataResponses) sends the applies asking
//     for the object's metadata only in the answer, the rest stays on
//     Client.
//   - NeedsApply(desired, live) (bool, why, error): pure, no I/O.
//   - Apply(ctx, desired, live) (Action, error): Created, Updated or
//     Unchanged (no request sent). With live nil the apply only creates:
//     an object of that name left unchanged, the error wraps ErrExists
//     (IsExists). live must be an object the caller controls.
//   - Get(ctx, desired): the object of desired's name, read through Reader
//     (the API server, not a cache); RemoveAnnotations(ctx, live, keys...).
//   - DryRun, DryRunCreate: the same applies with dryRun=All.
//   - Prune(ctx, live): delete by UID with background propagation; an
//     object already gone, or replaced by another of the same name, is
//     pruned.
//   - Delete(ctx, live, propagation): the same with the propagation given
//     (ordered deletion deletes each wave in the foreground).
//   - IsImmutable(err): the API server refused the change as immutable (422
//     Invalid: "pod updates may not change fields other than ...", "field is
//     immutable", "may not change once set", ...).
//   - Recreate(ctx, desired, live): delete live by UID, poll until it is
//     gone (bounded by ctx), then apply desired.
//
// Errors name their subject first: "Pod ns/name apply failed: ...".
//
// # The no-op rule
//
// Before it applies an object, the applier stamps it with the annotation
// wellknown.AnnotationAppliedHash: the first 16 hex digits of the sha256 of the
// object's JSON (map keys sorted), computed without that annotation and
// without what the applier never sends (status, and metadata uid,
// resourceVersion, generation, creationTimestamp, managedFields, selfLink,
// deletionTimestamp, deletionGracePeriodSeconds). NeedsApply is true iff
//
//  1. live is nil (the child does not exist, or the cache has not seen it);
//     or
//  2. live's wellknown.AnnotationAppliedHash differs from desired's hash (the
//     template, the spec or anything else that shapes the child changed);
//     or
//  3. owned != wanted, where owned is the field set of live's managedFields
//     entry with manager == FieldManager, operation Apply, no subresource,
//     recorded for desired's apiVersion (no such entry: true), and wanted is
//     ToFieldSet of the stamped desired object typed with the kschema
//     converter, less the paths the API server strips from every manager's
//     set (apiVersion, kind, metadata, metadata.name, metadata.namespace,
//     ...; see stripped in needs.go).
//
// Rule 3 is exact set equality, and it holds because the API server records
// for an apply exactly ToFieldSet of the applied object under the same
// schema (client-go's applyconfigurations schema carries the OpenAPI
// defaults of list-map key fields, so a container port sent without
// protocol is keyed k:{"containerPort":6379,"protocol":"TCP"} on both sides,
// with no f:protocol leaf; null values, empty maps and floats sent for
// integers agree too; the tests check these shapes against a real API
// server). Only status is reset on the main resource of the built-in kinds,
// and the applier never sends status. Fields that admission adds (the
// service account volume of a Pod) are owned by nobody.
//
// Rule 3 is what notices other writers: when another writer changes or
// removes a field cueop set (kubectl edit, kubectl label, any update, or a
// server-side apply with --force-conflicts), the API server moves the
// field's ownership away from cueop's entry, so owned shrinks. A writer that
// adds fields cueop does not set, or applies a cueop field with the same
// value (shared ownership), leaves owned as it is: no apply.
//
// For kinds with no built-in schema the applier types desired with
// Applier.TypeConverter when set; without one it deduces a schema from the
// object, in which every list is atomic and every map granular, unlike the
// server's (the CRD's list-map and atomic-map markers). Then rule 3 compares
// the sets by field path prefix, and additionally every value desired sets
// must be in live (list items matched in order; see subset in needs.go).
//
// When no schema at hand types desired (a field the compiled client-go
// schema or the TypeConverter does not know: a newer cluster, a changed
// CRD), rule 3 cannot be computed and NeedsApply is true. Apply then sends
// the apply and compares the resourceVersion the API server returns with
// live's: the same means nothing changed, so it reports Unchanged and
// remembers (hash, uid, resourceVersion) as in sync below. Schema skew costs
// one request per change of the live object, never an error or a loop.
//
// The informer cache must keep managedFields: a transform that strips them
// (cache.TransformStripManagedFields) makes every NeedsApply true, so every
// reconcile sends an apply (a no-op on the server, but a request). Keeping
// only the field manager's own entry is fine.
//
// An Applier remembers which (hash, live uid, live resourceVersion) it found
// in sync, so a resync of unchanged children costs a hash and a lookup. A
// resourceVersion names one state of an object; live objects must be
// snapshots, as the cache hands them out, not modified in place.
//
// # Requests
//
// Apply sends one server-side apply with force (cueop owns what it renders)
// and never sends managedFields, uid, creationTimestamp or status. It sends
// a resourceVersion only with a child it is told is absent: one no object
// can have (the largest 64-bit number), so that the apply creates the child
// or, when an object of that name exists, is refused as a conflict and
// changes nothing (the API server checks a resourceVersion sent with an
// apply against the existing object, and wipes it on create). cueop never
// takes over an object it was not told about, at no request more. An apply that changes nothing on the server keeps the
// resourceVersion, but it is still a request; NeedsApply avoids it.
//
// Its files, one per job: apply.go writes a child (apply, create-only,
// dry run), needs.go holds the no-op rule, metadata.go what keeps an apply
// cheap (the memo, metadata-only answers), and delete.go lets go of a
// child (prune, delete, recreate, release).
//
// It must not decide what a child should be (package render) nor write a
// CR's status or finalizers (package reconcile): it writes the objects it is
// given, and says what it did.
package apply

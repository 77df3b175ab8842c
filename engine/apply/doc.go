// Package apply is the only place cueop writes children. It applies each
// desired child with server-side apply under one field manager ("cueop"),
// and sends no request at all when the live object, as the informer cache
// holds it, shows that nothing would change.
//
//	a := &apply.Applier{Client: c}
//	action, err := a.Apply(ctx, desired, live) // live: from the cache, nil when absent
//	switch {
//	case apply.IsImmutable(err):
//		err = a.Recreate(ctx, desired, live) // delete, wait until gone, create
//	}
//	...
//	err = a.Prune(ctx, orphan) // after every apply succeeded
//
// # The no-op rule
//
// Before it applies an object, the applier stamps it with the annotation
// AnnotationAppliedHash: a short sha256 of the object's canonical JSON,
// computed without that annotation and without the fields it never sends
// (status, uid, resourceVersion, generation, creationTimestamp,
// managedFields). NeedsApply, a pure function, then says an apply is needed
// iff one of these holds:
//
//   - live is nil: the child does not exist (or the cache has not seen it);
//   - live's AnnotationAppliedHash differs from the desired object's hash:
//     the template, the spec or anything else that shapes the child changed;
//   - the fields the field manager owns on live differ from the fields of the
//     desired object. The owned fields are the managedFields entry of the
//     manager with operation Apply on the main resource (no subresource),
//     recorded for the desired apiVersion; the desired fields are the field
//     set of the stamped desired object, typed with the same schema the API
//     server uses, less the fields the server never records (apiVersion,
//     kind, metadata.name, metadata.namespace, ...). When another writer
//     changes or removes a field cueop set (kubectl edit, kubectl label, an
//     update, or a server-side apply with --force-conflicts), the API server
//     moves that field's ownership away from cueop, so cueop's set shrinks
//     and the next NeedsApply is true. Fields cueop does not set are left
//     alone: another writer may add labels or fields without making cueop
//     apply.
//
// The API server records a field set for an apply exactly as
// typed.TypedValue.ToFieldSet computes it from the applied object: the keys
// of associative lists include key fields that the object left out but the
// schema defaults (a container port without protocol is recorded as
// k:{"containerPort":6379,"protocol":"TCP"}), and the kschema converter
// carries those defaults too, so for built-in kinds the two sets are
// compared for equality. For other kinds the applier uses
// Applier.TypeConverter if set; without one it deduces a schema from the
// object, in which every list is atomic and every map granular. Such a set
// cannot match the server's exactly, so for those kinds the comparison is
// by path prefix and, in addition, every value the desired object sets must
// equal the live one (see needs.go).
//
// The informer cache must keep managedFields for this to work: a cache
// transform that strips them (cache.TransformStripManagedFields) makes every
// NeedsApply true, so every reconcile sends a (no-op) apply. A transform that
// keeps only the field manager's own entry is fine.
//
// # Requests
//
// Apply sends one server-side apply with force (cueop owns what it renders)
// and never sends resourceVersion, managedFields, uid, creationTimestamp or
// status. Prune and Recreate delete with a UID precondition, so they never
// delete an object that replaced the one they saw.
package apply

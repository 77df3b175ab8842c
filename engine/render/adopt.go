package render

// Values of a child's adopt policy (policies: [id]: adopt): which existing
// object of the child's name, that the CR does not control, the controller
// may take over (apply over it, which sets the CR's controller reference).
// An object another controller owns is never taken over, whatever the
// policy: the CR stalls with ChildConflict (reconcile/converge.go).
const (
	// AdoptNever takes over nothing.
	AdoptNever = "never"
	// AdoptReleased, the default, takes over an object with no controller
	// that cueop released from a CR of the same kind, namespace and name
	// (its cueop.dev/released-from annotation names that CR, and its
	// cueop.dev/release-proof proves that cueop wrote it): a child
	// retained, or left by prune: never, and rendered again by a CR of
	// that name.
	AdoptReleased = "released"
	// AdoptUncontrolled takes over any object with no controller (one
	// created by hand, or by a tool that sets no owner).
	AdoptUncontrolled = "uncontrolled"
)

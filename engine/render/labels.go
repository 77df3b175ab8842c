package render

// Labels the engine sets on every child. LabelOwnerUID and LabelID are how
// the controller finds a parent's children and matches them to child ids.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "cueop"
	LabelOwnerUID  = "cueop.dev/owner-uid"
	LabelID        = "cueop.dev/id"
)

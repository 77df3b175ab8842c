package migrate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UnservedFields returns mfs, the managedFields of obj read at
// apiVersion, with the entries at a version served tells is not served
// moved to apiVersion as MovedFields moves them; the entries at served
// versions are kept as they are. It tells whether any entry was at a
// version not served.
func UnservedFields(obj map[string]any, mfs []metav1.ManagedFieldsEntry, apiVersion string, served func(apiVersion string) bool) ([]metav1.ManagedFieldsEntry, bool) {
	var move, keep []metav1.ManagedFieldsEntry
	stale := false
	for _, e := range mfs {
		switch {
		case e.APIVersion == apiVersion:
			move = append(move, e)
		case served(e.APIVersion):
			keep = append(keep, e)
		default:
			move, stale = append(move, e), true
		}
	}
	if !stale {
		return mfs, false
	}
	return append(MovedFields(obj, move, apiVersion), keep...), true
}

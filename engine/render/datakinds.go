package render

import (
	"github.com/cueop/cueop/engine/wellknown"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultDataKinds are the kinds whose objects hold data that deleting them
// destroys. As a StatefulSet's claims are retained unless its
// persistentVolumeClaimRetentionPolicy says Delete, a child of a data kind
// is released (left in place, no longer owned) when the template stops
// rendering it and when its CR is deleted, unless the template says prune:
// "always" or onDelete: "delete" for it. An administrator lists more (a
// database CRD's kind) with --data-kinds.
const DefaultDataKinds = "PersistentVolumeClaim"

var defaultData = MustKindSet(DefaultDataKinds)

func dataKinds(set KindSet) KindSet {
	if set == nil {
		return defaultData
	}
	return set
}

// IsDataKind says whether objects of live's kind hold data.
func (o Options) IsDataKind(live *unstructured.Unstructured) bool {
	return dataKinds(o.DataKinds)[live.GroupVersionKind().GroupKind()]
}

// LivePolicy is the prune and onDelete policy of live, a child that exists,
// which the template may no longer render: the policy recorded on it
// (wellknown.AnnotationPrune, wellknown.AnnotationOnDelete), else its kind's default. A child
// of a data kind whose annotations never reached it (an apply that failed,
// a child held back by its wave, a CR that skipped the revision that set
// them) is released, never deleted.
func (o Options) LivePolicy(live *unstructured.Unstructured) Policy {
	p := Policy{Prune: PruneAlways, OnDelete: OnDeleteDelete}
	if o.IsDataKind(live) {
		p.Prune, p.OnDelete = PruneNever, OnDeleteRetain
	}
	ann := live.GetAnnotations()
	if v := ann[wellknown.AnnotationPrune]; v == PruneAlways || v == PruneNever {
		p.Prune = v
	}
	if v := ann[wellknown.AnnotationOnDelete]; v == OnDeleteDelete || v == OnDeleteRetain {
		p.OnDelete = v
	}
	return p
}

package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestStatusWritesStale: a CR read at the resourceVersion the cache held
// when cueop last wrote its status is stale until the cache moves on; a
// write that changed nothing (same resourceVersion) brings no event, so it
// makes nothing stale.
func TestStatusWritesStale(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "w"}
	at := func(rv string) *unstructured.Unstructured {
		cr := &unstructured.Unstructured{}
		cr.SetResourceVersion(rv)
		return cr
	}
	var w statusWrites
	if w.stale(key, at("1")) {
		t.Error("stale before any write")
	}
	w.wrote(key, "1", "2")
	if !w.stale(key, at("1")) || !w.stale(key, at("1")) {
		t.Error("the version read before the write is not stale")
	}
	if w.stale(key, at("2")) {
		t.Error("the version written is stale")
	}
	if w.stale(key, at("1")) {
		t.Error("stale again after the cache moved on")
	}

	w.wrote(key, "2", "3")
	w.wrote(key, "3", "3") // a no-op write
	if w.stale(key, at("3")) || w.stale(key, at("2")) {
		t.Error("a no-op write left the CR stale")
	}

	w.wrote(key, "3", "4")
	w.forget(key)
	if w.stale(key, at("3")) {
		t.Error("stale after forget")
	}
}

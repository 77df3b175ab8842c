package operator

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// controllerWatches are kinds every running controller watches: the kinds
// watched before a controller starts and those added while it runs. The
// child kinds (children.go) and the referenced kinds (references.go) each
// keep one, with the source that maps an event of their kind to a
// controller's CRs.
type controllerWatches struct {
	mu       sync.Mutex
	kinds    []schema.GroupVersionKind // watched, in the order they were added
	watchers map[*kindController]bool  // running controllers, each watching every kind watched
	source   func(kc *kindController, gvk schema.GroupVersionKind) source.Source
}

func newControllerWatches(src func(*kindController, schema.GroupVersionKind) source.Source) controllerWatches {
	return controllerWatches{watchers: map[*kindController]bool{}, source: src}
}

// addKind makes every running controller watch gvk, and later ones too.
// The caller holds w.mu.
func (w *controllerWatches) addKind(gvk schema.GroupVersionKind) error {
	for kc := range w.watchers {
		if err := kc.ctrl.Watch(w.source(kc, gvk)); err != nil {
			return err
		}
	}
	w.kinds = append(w.kinds, gvk)
	return nil
}

// addController makes kc watch every kind watched, now and later.
func (w *controllerWatches) addController(kc *kindController) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, gvk := range w.kinds {
		if err := kc.ctrl.Watch(w.source(kc, gvk)); err != nil {
			return err
		}
	}
	w.watchers[kc] = true
	return nil
}

// removeController forgets kc, a controller that stopped.
func (w *controllerWatches) removeController(kc *kindController) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.watchers, kc)
}

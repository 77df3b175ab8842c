package shard

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// The filter. An API server without the ShardedListAndWatch gate ignores
// shardSelector: it answers a list in full, without listMeta.shardInfo, and
// sends a watch every event. KEP-5866 leaves it to the client to check a
// list's shard info and to filter when the server did not. ListWatch does
// that, so a range's cache holds only the range's objects on any API
// server; without the gate each range still receives (and decodes) every
// object.
//
// Filtering by the hash of the uid is exact on a watch too: an object's uid
// never changes, so an object never enters or leaves a range (the flaw
// watch.Filter warns of, an object starting to pass the filter, cannot
// happen), and a deletion seen by the filtered cache is a deletion.
// (rangeWatch rather than watch.Filter: the latter's goroutine blocks for
// good on an event nobody reads after Stop.)

// ListWatch makes every list and watch of lw ask for r's objects
// (shardSelector) and keeps only those: a list whose shardInfo does not
// echo r's selector is filtered on the client, and so is every watch event
// (a watch carries no shard info). Bookmarks and errors pass.
func (r Range) ListWatch(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	inner := toolscache.ToListerWatcherWithContext(lw)
	sel := r.Selector()
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.ShardSelector = sel
			list, err := inner.ListWithContext(ctx, opts)
			if err != nil || listShardSelector(list) == sel {
				return list, err
			}
			return list, r.filterList(list)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.ShardSelector = sel
			w, err := inner.WatchWithContext(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newRangeWatch(w, r.keepEvent), nil
		},
	}
}

// listShardSelector is the selector a list's shardInfo echoes; empty when
// the API server did not filter it.
func listShardSelector(list runtime.Object) string {
	switch l := list.(type) {
	case metav1.ShardedListInterface:
		if info := l.GetShardInfo(); info != nil {
			return info.Selector
		}
	case *unstructured.UnstructuredList:
		sel, _, _ := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		return sel
	}
	return ""
}

// filterList keeps the list's items of r.
func (r Range) filterList(list runtime.Object) error {
	if u, ok := list.(*unstructured.UnstructuredList); ok { // no copy
		kept := u.Items[:0]
		for _, item := range u.Items {
			if r.Contains(string(item.GetUID())) {
				kept = append(kept, item)
			}
		}
		clientDropped.Add(float64(len(u.Items) - len(kept)))
		clear(u.Items[len(kept):])
		u.Items = kept
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		if r.keep(item) {
			kept = append(kept, item)
		}
	}
	clientDropped.Add(float64(len(items) - len(kept)))
	return meta.SetList(list, kept)
}

// rangeWatch passes the events of in that keep keeps.
type rangeWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	done chan struct{} // closed when loop returns
}

func newRangeWatch(in watch.Interface, keep func(watch.Event) (watch.Event, bool)) *rangeWatch {
	w := &rangeWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(keep)
	return w
}

func (w *rangeWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops in, and the loop even when nobody reads any more.
func (w *rangeWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *rangeWatch) loop(keep func(watch.Event) (watch.Event, bool)) {
	defer close(w.done)
	defer close(w.out)
	for ev := range w.in.ResultChan() {
		ev, ok := keep(ev)
		if !ok {
			continue
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

// keepEvent keeps the watch events of r's objects, bookmarks and errors.
func (r Range) keepEvent(ev watch.Event) (watch.Event, bool) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if !r.keep(ev.Object) {
			clientDropped.Inc()
			return ev, false
		}
	}
	return ev, true
}

// keep tells whether obj is one of r's objects; an object without metadata
// is kept (the cache reports it).
func (r Range) keep(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err != nil || r.Contains(string(m.GetUID()))
}

package shard

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// uidIn is a uid in range r, and one out of it.
func uidIn(t *testing.T, r Range) (in, out types.UID) {
	t.Helper()
	for i := 0; in == "" || out == ""; i++ {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		if r.Contains(string(uid)) {
			in = uid
		} else {
			out = uid
		}
	}
	return in, out
}

// A range's watch passes the range's objects, bookmarks and errors, drops
// the others, and its goroutine ends on Stop even when nobody reads.
func TestRangeWatch(t *testing.T) {
	r := Ranges(2)[1]
	in, out := uidIn(t, r)
	fake := watch.NewRaceFreeFake()
	w := newRangeWatch(fake, r.keepEvent)
	cm := func(uid types.UID) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: string(uid), UID: uid}}
	}
	fake.Add(cm(out)) // buffered
	fake.Add(cm(in))
	fake.Modify(cm(out))
	fake.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}})
	fake.Delete(cm(out))
	fake.Delete(cm(in))
	fake.Add(cm(in)) // nobody reads it: Stop must end the loop all the same
	var got []string
	for range 3 {
		ev := <-w.ResultChan()
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*corev1.ConfigMap).Name))
	}
	want := fmt.Sprintf("[ADDED %s BOOKMARK  DELETED %s]", in, in)
	if fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
	// The positive sign that the loop took the last Add and is blocked
	// sending it: the fake's buffer is empty.
	deadline := time.Now().Add(5 * time.Second)
	for len(fake.ResultChan()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the watch's loop never took the last event")
		}
		runtime.Gosched()
	}
	w.Stop()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch's goroutine still runs 5 s after Stop")
	}
}

package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// TestPreloadServesTheEditMadeMeanwhile: Start compiles the templates while
// the caches sync; an edit made meanwhile must be what is served first, not
// the revision it replaced.
func TestPreloadServesTheEditMadeMeanwhile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	revision := func(set *template.Set) string {
		t.Helper()
		k := set.Lookup("cache.example.com", "RedisCluster")
		if k == nil {
			t.Fatal("no RedisCluster in the templates")
		}
		return k.Revision
	}
	load := func(dir string) string {
		t.Helper()
		set := templatetest.Load(t, dir)
		return revision(set)
	}

	t.Run("no edit: the preloaded templates", func(t *testing.T) {
		dir := copyTemplates(t)
		_, result, stop, err := operator.Preload(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		set, err := result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := revision(set), load(dir); got != want {
			t.Fatalf("served revision %s, want %s", got, want)
		}
	})

	t.Run("an edit while the caches sync: the edited templates", func(t *testing.T) {
		dir := copyTemplates(t)
		before := load(dir)
		noted, result, stop, err := operator.Preload(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		editTemplate(t, dir, addPodLabel("startup"))
		select {
		case <-noted:
		case <-ctx.Done():
			t.Fatal("the edit was not noted")
		}
		set, err := result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		after := load(dir)
		if after == before {
			t.Fatal("the edit did not change the revision")
		}
		if got := revision(set); got != after {
			t.Fatalf("served revision %s, want the edited %s (before the edit: %s)", got, after, before)
		}
	})

	t.Run("stopped before the caches synced: returns", func(t *testing.T) {
		_, _, stop, err := operator.Preload(ctx, copyTemplates(t))
		if err != nil {
			t.Fatal(err)
		}
		stop() // waits for the load: no compile outlives Start
	})
}

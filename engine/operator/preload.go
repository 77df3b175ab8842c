package operator

import (
	"context"
	"errors"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/cueop/cueop/engine/template"
)

// preloading is a load of the templates made while the caches sync
// (Start), so that a restarted process serves sooner. The caches and the
// children's informers may take minutes at scale: an edit of the templates
// made meanwhile is noted, and the templates are loaded again before the
// first serve, rather than serving a revision already replaced.
type preloading struct {
	log logr.Logger
	// load loads the templates (Operator.loadTemplates); watch adds the
	// templates' directories to w again (Operator.addWatches) before a
	// load made anew.
	load   func(context.Context) (*template.Set, error)
	watch  func(*fsnotify.Watcher)
	w      *fsnotify.Watcher
	cancel context.CancelFunc
	loaded chan preloaded // the load's result, once
	quiet  chan struct{}  // closed to stop noting edits
	edited chan bool      // whether an edit was noted, once quiet
	noted  chan struct{}  // closed once an edit is noted
	done   chan struct{}  // closed when both goroutines have returned
	got    bool
}

// preloaded is what template.LoadWith answered.
type preloaded struct {
	set *template.Set
	err error
}

// preload starts loading the templates with load and noting the edits w
// reports, which watch sets up. The watch is set up before: an edit after
// it is either in the load or noted.
func preload(ctx context.Context, log logr.Logger, w *fsnotify.Watcher, load func(context.Context) (*template.Set, error), watch func(*fsnotify.Watcher)) *preloading {
	ctx, cancel := context.WithCancel(ctx)
	p := &preloading{log: log, load: load, watch: watch, w: w, cancel: cancel,
		loaded: make(chan preloaded, 1), quiet: make(chan struct{}), edited: make(chan bool, 1), noted: make(chan struct{}), done: make(chan struct{})}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		set, err := p.load(ctx)
		p.loaded <- preloaded{set, err}
	}()
	go func() {
		defer close(p.done)
		p.edited <- p.note()
		<-loadDone
	}()
	return p
}

// note reads w's events until quiet is closed: true if one was a change of
// the templates (or the kernel's queue overflowed, which may hide one).
func (p *preloading) note() bool {
	edited := false
	for {
		select {
		case <-p.quiet:
			return edited
		case ev := <-p.w.Events:
			if !edited && templateChange(ev) {
				edited = true
				close(p.noted)
			}
		case err := <-p.w.Errors:
			p.log.Error(err, "templates watch")
			if !edited && errors.Is(err, fsnotify.ErrEventOverflow) {
				edited = true
				close(p.noted)
			}
		}
	}
}

// result is the load to serve first: the preloaded one, or a load made
// now when the templates were edited since the watch was set up. Later
// events are left to watchTemplates.
func (p *preloading) result(ctx context.Context) (preloaded, error) {
	var first preloaded
	select {
	case first = <-p.loaded:
	case <-ctx.Done():
		return first, ctx.Err()
	}
	p.got = true
	close(p.quiet)
	if <-p.edited {
		p.log.Info("templates edited while the caches synced: loading them again")
		p.watch(p.w)
		set, err := p.load(ctx)
		first = preloaded{set, err}
	}
	return first, nil
}

// stop ends the preload and waits for it, so that no compile runs on once
// Start has returned and its workers are stopped.
func (p *preloading) stop() {
	p.cancel()
	if !p.got {
		close(p.quiet)
	}
	<-p.done
}

package operator

import (
	"context"
	"errors"

	"github.com/fsnotify/fsnotify"

	"github.com/cueop/cueop/engine/template"
)

// preloading is a load of the templates made while the caches sync
// (Start), so that a restarted process serves sooner. The caches and the
// children's informers may take minutes at scale: an edit of the templates
// made meanwhile is noted, and the templates are loaded again before the
// first serve, rather than serving a revision already replaced.
type preloading struct {
	o      *Operator
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

// preload starts loading the templates and noting the edits w reports.
// The watch is set up before: an edit after it is either in the load or
// noted.
func (o *Operator) preload(ctx context.Context, w *fsnotify.Watcher) *preloading {
	ctx, cancel := context.WithCancel(ctx)
	p := &preloading{o: o, w: w, cancel: cancel,
		loaded: make(chan preloaded, 1), quiet: make(chan struct{}), edited: make(chan bool, 1), noted: make(chan struct{}), done: make(chan struct{})}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		set, err := o.loadTemplates(ctx)
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
			p.o.log.Error(err, "templates watch")
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
		p.o.log.Info("templates edited while the caches synced: loading them again")
		p.o.addWatches(p.w)
		set, err := p.o.loadTemplates(ctx)
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

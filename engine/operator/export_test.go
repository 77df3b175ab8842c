package operator

import (
	"context"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// ShardParents is shardParents, for the external tests.
var ShardParents = shardParents

// Preload is Start's preload of the templates of dir (in process), for the
// external tests: noted is closed once an edit is noted, result is the load
// served first, stop ends it.
func Preload(ctx context.Context, dir string) (noted <-chan struct{}, result func(context.Context) (*template.Set, error), stop func(), err error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, nil, err
	}
	watch := templatesWatch{dir: dir, log: logr.Discard()}
	watch.add(w)
	l := &templateLoader{dir: dir, eval: render.InProcess{}}
	p := preload(ctx, logr.Discard(), w, l.load, watch.add)
	result = func(ctx context.Context) (*template.Set, error) {
		first, err := p.result(ctx)
		if err != nil {
			return nil, err
		}
		return first.set, first.err
	}
	return p.noted, result, func() { p.stop(); _ = w.Close() }, nil
}

// ReleaseKey is the operator's release key (releasekey.go), for the
// external tests.
func (o *Operator) ReleaseKey(ctx context.Context) ([]byte, error) { return o.kinds.run.keys.key(ctx) }

// InstallCRDThen is installCRDThen, for the external tests: beforeApply
// runs once the live CRD was read and the schema guard passed it, just
// before the apply.
func (o *Operator) InstallCRDThen(ctx context.Context, k *template.Kind, beforeApply func() (undo func())) error {
	return o.crds.installThen(ctx, k, beforeApply)
}

// PointLiveCRD is pointLiveCRD, for the external tests.
func (o *Operator) PointLiveCRD(ctx context.Context, crdName string) error {
	return o.crds.pointLiveCRD(ctx, crdName)
}

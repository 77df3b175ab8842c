package operator

import "github.com/cueop/cueop/engine/template"

// accepted tells Options.TemplatesAccepted the sources of set when every
// kind of it loaded and serves (err nil): what a restart may come back
// on. A load refused in part tells nothing, so that the last one accepted
// stays the one recorded.
func (o *Operator) accepted(set *template.Set, err error) {
	if err != nil || o.opts.TemplatesAccepted == nil {
		return
	}
	srcs := make([]template.Source, 0, len(set.Kinds))
	for _, k := range set.Kinds {
		srcs = append(srcs, k.Source)
	}
	o.opts.TemplatesAccepted(srcs)
}

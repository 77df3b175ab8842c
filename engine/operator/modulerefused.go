package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/cueop/cueop/engine/wellknown"
)

// moduleRefusal is a module version refused at fetch for the reference
// ref, while the kinds of ref served the digest serving: it shows on
// their Templates until the reference moves (they serve another digest).
type moduleRefusal struct {
	serving string
	msg     string
}

// ModuleRefused reports a module version the module source refused at
// fetch (source.Options.Refused; once per digest): an ERROR line,
// cueop_template_load_errors_total, a ModuleRefused Event on the CRD of
// each kind of ref, and their Templates Degraded with the reason and the
// entry refused, until ref moves to a version that loads. What serves
// keeps serving.
func (o *Operator) ModuleRefused(ref string, err error) {
	msg := fmt.Sprintf("module reference %s: a version was refused at fetch, and is not fetched again until the reference moves; what serves keeps serving: %v", ref, err)
	o.log.Error(nil, msg)
	o.metrics.loadError()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.moduleRefused == nil {
		o.moduleRefused = map[string]moduleRefusal{}
	}
	for _, kc := range o.kinds {
		k := kc.rec.Kind()
		if k.Source.Ref != ref {
			continue
		}
		o.moduleRefused[ref] = moduleRefusal{serving: k.Source.Digest, msg: msg}
		o.crdEvent(ctx, kc.crdName, wellknown.TemplateReasonModuleRefused, msg)
		if o.templates != nil {
			o.templates.queue(o.kindReport(k, nil))
		}
	}
}

// moduleRefusedReport marks r, the report of a kind serving, Degraded by
// the refusal of its reference's newest version, if any. The caller holds
// o.mu.
func (o *Operator) moduleRefusedReport(r *kindReport, ref, digest string) {
	if m, ok := o.moduleRefused[ref]; ok && ref != "" && m.serving == digest {
		r.lastError = m.msg
		r.degraded = condition(wellknown.TemplateConditionDegraded, true, wellknown.TemplateReasonModuleRefused, m.msg)
	}
}

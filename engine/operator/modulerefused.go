package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// moduleRefusal is a module version refused at fetch for the reference
// ref, while the kinds of ref served the digest serving: it shows on
// their Templates until the reference moves (they serve another digest).
// serving is the digest the templates laid out of ref when it was
// reported (template.ModuleServing); when that is unknown, the first
// report of a kind of ref takes its digest.
type moduleRefusal struct {
	serving string
	msg     string
	// announced: the ModuleRefused Event is on the CRDs of ref's kinds
	// (markRefused, else the first report of a kind serving m.serving,
	// kindReports.moduleRefused); a range 0 replaying a refusal
	// before its kinds load announces it when they do.
	announced bool
}

// ModuleRefused reports a module version the module source refused at
// fetch (source.Options.Refused; once per digest): an ERROR line,
// cueop_template_load_errors_total, a ModuleRefused Event on the CRD of
// each kind of ref, and their Templates Degraded with the reason and the
// entry refused, until ref moves to a version that loads. What serves
// keeps serving. A sharded replica reports it once and marks it on each
// range's operator (Sharded.ModuleRefused).
func (o *Operator) ModuleRefused(ref string, err error) {
	msg := moduleRefusedMessage(ref, err)
	o.log.Error(nil, msg)
	o.metrics.loadError()
	o.kinds.markModuleRefused(moduleRefusal{msg: msg, serving: template.ModuleServing(o.opts.Templates, ref)}, ref)
}

func moduleRefusedMessage(ref string, err error) string {
	return fmt.Sprintf("module reference %s: a version was refused at fetch, and is not fetched again until the reference moves; what serves keeps serving: %v", ref, err)
}

// markRefused shows m on the kinds of ref among s: an Event on their CRDs
// and their Templates Degraded, as serving m.serving, else the digest
// they serve now, else the one the first of them loaded serves. It
// answers m as recorded.
func (r *kindReports) markRefused(s kindRecords, m moduleRefusal, ref string) moduleRefusal {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.refused == nil {
		r.refused = map[string]moduleRefusal{}
	}
	r.refused[ref] = m
	for _, kc := range s.controllers() {
		k := kc.rec.Kind()
		if k.Source.Ref != ref {
			continue
		}
		if m.serving == "" {
			m.serving = k.Source.Digest
			r.refused[ref] = m
		}
		if m.serving != k.Source.Digest {
			continue // moved on since: another version serves
		}
		if r.speaks {
			r.event(ctx, kc.crdName, wellknown.TemplateReasonModuleRefused, m.msg)
			m.announced = true
			r.refused[ref] = m
		}
		if r.writer != nil && r.writer.running() {
			r.writer.queue(r.kind(s, k, nil))
		}
	}
	return m
}

// moduleRefused marks rep, the report of a kind serving, Degraded by the
// refusal of its reference's newest version, if any.
func (r *kindReports) moduleRefused(rep *kindReport, ref, digest string) {
	m, ok := r.refused[ref]
	if !ok || ref == "" {
		return
	}
	if m.serving == "" { // reported before a kind of ref loaded
		m.serving = digest
		r.refused[ref] = m
	}
	if m.serving == digest {
		if !m.announced && r.speaks {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r.event(ctx, rep.name, wellknown.TemplateReasonModuleRefused, m.msg)
			cancel()
			m.announced = true
			r.refused[ref] = m
		}
		rep.lastError = m.msg
		rep.degraded = condition(wellknown.TemplateConditionDegraded, true, wellknown.TemplateReasonModuleRefused, m.msg)
	}
}

// ModuleRefused reports a module version the module source refused at
// fetch, as Operator.ModuleRefused does: once for the replica (the log
// line, the metric), and on the kinds of each range it serves now or
// takes later (the range 0 operator writes the Templates and the Events).
func (s *Sharded) ModuleRefused(ref string, err error) {
	msg := moduleRefusedMessage(ref, err)
	s.log.Error(nil, msg)
	NewMetrics().loadError()
	// What the templates lay out of ref now: the refusal left it as it
	// was. A range taken later, after ref moved to a version that loads,
	// does not show the refusal on it.
	m := moduleRefusal{msg: msg, serving: template.ModuleServing(s.opts.Templates, ref)}
	s.mu.Lock()
	if s.moduleRefused == nil {
		s.moduleRefused = map[string]moduleRefusal{}
	}
	s.moduleRefused[ref] = m
	ops := make([]*Operator, 0, len(s.ops))
	for _, op := range s.ops {
		ops = append(ops, op)
	}
	s.mu.Unlock()
	for _, op := range ops {
		s.keepServing(ref, op.kinds.markModuleRefused(m, ref))
	}
}

// replayModuleRefused marks on op, a range's operator just made, the
// refusals reported before.
func (s *Sharded) replayModuleRefused(op *Operator) {
	s.mu.Lock()
	refused := make(map[string]moduleRefusal, len(s.moduleRefused))
	for ref, m := range s.moduleRefused {
		refused[ref] = m
	}
	s.mu.Unlock()
	for ref, m := range refused {
		s.keepServing(ref, op.kinds.markModuleRefused(m, ref))
	}
}

// keepModuleRefused keeps what op, a range's operator stopping, learnt of
// the digests the refusals were reported on, for the operators made
// later.
func (s *Sharded) keepModuleRefused(op *Operator) {
	op.kinds.mu.Lock()
	bound := make(map[string]moduleRefusal, len(op.reports.refused))
	for ref, m := range op.reports.refused {
		bound[ref] = m
	}
	op.kinds.mu.Unlock()
	for ref, m := range bound {
		s.keepServing(ref, m)
	}
}

// keepServing records the digest serving m was reported on, when that is
// the refusal of ref the replica holds and it knew none.
func (s *Sharded) keepServing(ref string, m moduleRefusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if have, ok := s.moduleRefused[ref]; ok && have.msg == m.msg && have.serving == "" && m.serving != "" {
		s.moduleRefused[ref] = m
	}
}

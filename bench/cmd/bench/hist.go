package main

import (
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// hist is a cumulative Prometheus histogram: Counts[i] observations at most
// Bounds[i] seconds, Total in all (the +Inf bucket).
type hist struct {
	Bounds []float64 `json:"bounds"`
	Counts []uint64  `json:"counts"`
	Total  uint64    `json:"total"`
}

// reconcileTime merges controller_runtime_reconcile_time_seconds of every
// controller of the process (they share the buckets).
func reconcileTime() hist {
	var h hist
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return h
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			var o hist
			for _, b := range m.GetHistogram().GetBucket() {
				o.Bounds = append(o.Bounds, b.GetUpperBound())
				o.Counts = append(o.Counts, b.GetCumulativeCount())
			}
			o.Total = m.GetHistogram().GetSampleCount()
			h = h.add(o)
		}
	}
	return h
}

// conversions are the objects cueop's conversion webhook converted and the
// seconds its reviews took, from the process's registry; by are the
// objects by cause (conversionCause).
func conversions() (objects, seconds float64, by map[string]float64) {
	by = map[string]float64{}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0, 0, by
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "cueop_conversion_objects_total":
				objects += m.GetCounter().GetValue()
				by[conversionCause(m.GetLabel())] += m.GetCounter().GetValue()
			case "cueop_conversion_review_seconds":
				seconds += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return objects, seconds, by
}

// conversionCause names the reviews of labels: "v1>v2 one" (from v1 to
// v2, reviews of one object: from the storage version, the API server
// decoding a write for its watch cache of v2, or a get at v2), "v1>v2
// list" (a list at v2), "failed".
func conversionCause(labels []*dto.LabelPair) string {
	l := map[string]string{}
	for _, p := range labels {
		l[p.GetName()] = p.GetValue()
	}
	if l["result"] != "ok" {
		return "failed"
	}
	return l["from"] + ">" + l["to"] + " " + l["review"]
}

// add is h and o merged; buckets o lacks count as o's total below them.
func (h hist) add(o hist) hist {
	if len(h.Bounds) == 0 {
		return hist{Bounds: slices.Clone(o.Bounds), Counts: slices.Clone(o.Counts), Total: o.Total}
	}
	out := hist{Bounds: slices.Clone(h.Bounds), Counts: slices.Clone(h.Counts), Total: h.Total + o.Total}
	for i, b := range out.Bounds {
		out.Counts[i] += o.countAt(b)
	}
	return out
}

// countAt is the observations at most bound seconds, as far as h knows.
func (h hist) countAt(bound float64) uint64 {
	n := uint64(0)
	for i, b := range h.Bounds {
		if b <= bound {
			n = h.Counts[i]
		}
	}
	return n
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket that holds it; the largest finite bound
// when it falls in the +Inf bucket; 0 without observations.
func (h hist) quantile(q float64) time.Duration {
	if h.Total == 0 {
		return 0
	}
	rank := q * float64(h.Total)
	lower, below := 0.0, uint64(0)
	for i, b := range h.Bounds {
		if math.IsInf(b, 1) {
			break
		}
		if float64(h.Counts[i]) >= rank {
			in := h.Counts[i] - below
			frac := 1.0
			if in > 0 {
				frac = (rank - float64(below)) / float64(in)
			}
			return time.Duration((lower + (b-lower)*frac) * float64(time.Second))
		}
		lower, below = b, h.Counts[i]
	}
	return time.Duration(lower * float64(time.Second))
}

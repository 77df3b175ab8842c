package main

import (
	"context"
	"math"
)

// crSpace is where a run's CRs live: one namespace, or several of per CRs
// each, which the operators, the floor and the trackers all serve. Some of
// a cluster's own work grows with the size of a namespace (the endpoint
// controllers match each Pod change against every Service of its
// namespace): 12,000 CRs in one namespace measure that, not the operator.
type crSpace struct {
	names []string
	per   int
}

// oneNamespace is the space of ns alone.
func oneNamespace(ns string) crSpace { return crSpace{names: []string{ns}, per: math.MaxInt} }

// of is the namespace of the i-th CR.
func (s crSpace) of(i int) string { return s.names[min(i/s.per, len(s.names)-1)] }

// served is the namespace the operators and the trackers watch: the one,
// or "" (every namespace) when the CRs are spread.
func (s crSpace) served() string {
	if len(s.names) == 1 {
		return s.names[0]
	}
	return ""
}

// leases is the namespace of the shard Leases: the first.
func (s crSpace) leases() string { return s.names[0] }

// spread creates the namespaces of n CRs, per in each; per 0 or at least n
// is one namespace.
func (l *lab) spread(ctx context.Context, prefix string, n, per int) (crSpace, error) {
	if per <= 0 || per >= n {
		ns, err := l.namespace(ctx, prefix)
		return oneNamespace(ns), err
	}
	s := crSpace{per: per}
	for range (n + per - 1) / per {
		ns, err := l.namespace(ctx, prefix)
		if err != nil {
			return s, err
		}
		s.names = append(s.names, ns)
	}
	return s, nil
}

package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/bench/harness"
)

func TestHistQuantile(t *testing.T) {
	h := hist{Bounds: []float64{0.01, 0.1, 1, math.Inf(1)}, Counts: []uint64{50, 90, 100, 100}, Total: 100}
	for q, want := range map[float64]time.Duration{
		0.5:  10 * time.Millisecond,                       // the top of the first bucket
		0.7:  55 * time.Millisecond,                       // halfway through the second
		0.99: 910 * time.Millisecond,                      // 9 of the third's 10
		1:    time.Second,                                 // the last finite bound
		0.25: time.Duration(0.005 * float64(time.Second)), // halfway through the first, from 0
	} {
		if got := h.quantile(q); (got - want).Abs() > time.Microsecond {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := (hist{}).quantile(0.99); got != 0 {
		t.Errorf("empty: %v, want 0", got)
	}
	inf := hist{Bounds: []float64{1, math.Inf(1)}, Counts: []uint64{1, 10}, Total: 10}
	if got := inf.quantile(0.99); got != time.Second {
		t.Errorf("in the +Inf bucket: %v, want the largest finite bound", got)
	}
}

func TestHistAdd(t *testing.T) {
	a := hist{Bounds: []float64{1, 2}, Counts: []uint64{1, 3}, Total: 4}
	b := hist{Bounds: []float64{1, 2}, Counts: []uint64{2, 2}, Total: 5}
	got := (hist{}).add(a).add(b)
	if got.Total != 9 || got.Counts[0] != 3 || got.Counts[1] != 5 {
		t.Fatalf("merged %+v", got)
	}
	if a.Counts[0] != 1 {
		t.Fatal("add modified its operand")
	}
}

func TestMergedStats(t *testing.T) {
	a := opStats{Counts: harness.Counts{Writes: 10, WritesBy: map[string]int64{"PUT leases": 4, "PATCH pods": 6}}, CPUSeconds: 1, MaxRSS: 100, PeakHeapInuse: 7}
	b := opStats{Counts: harness.Counts{Writes: 5, WritesBy: map[string]int64{"PATCH pods": 5}}, CPUSeconds: 2, MaxRSS: 50, PeakHeapInuse: 9}
	m := merged([]opStats{a, b})
	if m.Writes != 15 || m.WritesBy["PATCH pods"] != 11 || m.CPUSeconds != 3 || m.MaxRSS != 100 || m.PeakHeapInuse != 9 {
		t.Fatalf("merged %+v", m)
	}
	m.WritesBy["PATCH customresourcedefinitions"]++
	m.Writes++
	if w := crWritesOf(m.Counts); w != 11 {
		t.Fatalf("writes without Lease renewals: %d, want 11", w)
	}
}

// TestScaleMarkdown checks that each figure stands beside its target and
// verdict, and that a point that did not converge says so.
func TestScaleMarkdown(t *testing.T) {
	good := scalePoint{N: 3000, Replicas: 1, Ready: 3000, AllReady: 110 * time.Second, Floor: 100 * time.Second,
		CPUPerCR: 12.5, PeakRSS: 300 << 20, PeakHeap: 200 << 20, RSSPerCR: 80 << 10, HeapPerCR: 60 << 10,
		P99: 42 * time.Millisecond, WritesPerCR: 7.5, Resync: 20 * time.Second,
		FloorCPU: map[string]float64{"kube-apiserver": 20, "etcd": 3, "kwok": 2, "kube-scheduler": 1, "kube-controller-manager": 3},
		CPU:      map[string]float64{"kube-apiserver": 25.5, "etcd": 3.5, "kwok": 2.5, "kube-controller-manager": 2.5},
		Writes:   harness.Counts{WritesBy: map[string]int64{"PATCH pods": 9000, "POST events": 1500}},
		Idle:     harness.Counts{Reads: 2, Watches: 3, WritesBy: map[string]int64{}}}
	sharded := good
	sharded.Replicas, sharded.AllReady, sharded.ResyncWrites = 3, 130*time.Second, 2
	sharded.Idle = harness.Counts{Writes: 60, WritesBy: map[string]int64{"PUT leases": 60}}
	sharded.ResyncAll = harness.Counts{Writes: 5, WritesBy: map[string]int64{"PATCH customresourcedefinitions": 3, "PATCH pods": 2}}
	stuck := scalePoint{N: 12000, Replicas: 1, Ready: 11000, Floor: 400 * time.Second, Err: "11000 of 12000 CRs Ready: not within 25m0s"}
	r := &scaleReport{cfg: scaleConfig{Points: []int{3000, 12000}, Shards: 3}, points: []scalePoint{good, stuck, sharded},
		crds: crdResult{CRDs: 200, Objects: 50, EmptyRSS: 100 << 20, WithRSS: 115 << 20}}
	md := r.markdown()
	for _, want := range []string{
		scaleTitle + "\n",
		"| figure | target | 3000 | 12000 | 3000, 3 replicas |",
		"| all CRs Ready (s) | every CR | 110.0; met | 11000 of 12000 Ready; **missed** | 130.0; met |",
		"| all Ready / floor | ≤ 1.2 | 1.10; met | n/a | 1.30; **missed** |",
		"| control plane CPU per CR until all Ready, floor / cueop (ms): kube-apiserver; etcd; the others |  | 20.0 / 25.5; 3.0 / 3.5; 6.0 / 5.0 | n/a | 20.0 / 25.5; 3.0 / 3.5; 6.0 / 5.0 |",
		"| peak RSS (MiB, largest process) | ≤ 1024 | 300; met | n/a | 300; met |",
		"| memory per CR: RSS; heap (KiB) |  | 80.0; 60.0 | n/a | 80.0; 60.0 |",
		"| p99 reconcile (ms) |  | 42 | n/a | 42 |",
		"| writes per CR while converging | ≤ 8 | 7.50; met |",
		"| writes on resync (of CRs and children; all writes) | 0 | 0; met | n/a | 2; **missed** (PATCH customresourcedefinitions: 3, PATCH pods: 2) |",
		"| idle window: reads / watches / writes (of CRs and children; all writes) | 0 writes | 2 / 3 / 0; met | n/a | 0 / 0 / 0; met (PUT leases: 60) |",
		"- 12000: 11000 of 12000 CRs Ready: not within 25m0s\n",
		"- 3000: writes per CR while converging, by request: PATCH pods 3.00, POST events 0.50.\n",
		"RSS with / without: 1.15 (target ≤ 1.10: **missed**).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
}

// TestStuckPointFigures: a point whose wait ended before every CR was Ready
// shows what its processes did until then, said so.
func TestStuckPointFigures(t *testing.T) {
	stuck := scalePoint{N: 12000, Replicas: 1, Ready: 348, Floor: 1555 * time.Second, Err: "348 of 12000 CRs Ready: not within 40m0s",
		PeakRSS: 900 << 20, RSSPerCR: 70 << 10, HeapPerCR: 50 << 10}
	cells := map[string]string{}
	for _, row := range scaleRows {
		cells[row.name] = row.cell(stuck)
	}
	for name, want := range map[string]string{
		"all CRs Ready (s)":               "348 of 12000 Ready; **missed**",
		"all Ready / floor":               "n/a",
		"peak RSS (MiB, largest process)": "900; met (when the wait ended)",
		"memory per CR: RSS; heap (KiB)":  "70.0; 50.0 (when the wait ended)",
		"resync after a restart (s)":      "n/a",
	} {
		if cells[name] != want {
			t.Errorf("%s: %q, want %q", name, cells[name], want)
		}
	}
}

// TestControlPlaneCPUPerCR: each component's CPU between two snapshots,
// in ms per CR.
func TestControlPlaneCPUPerCR(t *testing.T) {
	a := cpuSnapshot{procs: map[string]float64{"etcd": 1, "kube-apiserver": 10}}
	b := cpuSnapshot{procs: map[string]float64{"etcd": 1.3, "kube-apiserver": 12.5}}
	got := a.perCR(b, 100)
	if math.Abs(got["etcd"]-3) > 1e-9 || math.Abs(got["kube-apiserver"]-25) > 1e-9 || len(got) != 2 {
		t.Fatalf("perCR = %v, want etcd 3 and kube-apiserver 25 ms", got)
	}
	// A component gone between the snapshots (procCPU 0), missing from one,
	// or no component at all: no figures, so the cell says n/a.
	for _, b := range []cpuSnapshot{
		{procs: map[string]float64{"etcd": 0, "kube-apiserver": 12.5}},
		{procs: map[string]float64{"kube-apiserver": 12.5}},
		{procs: map[string]float64{"etcd": 1.3, "kube-apiserver": 12.5, "kwok": 1}},
		{procs: map[string]float64{}},
	} {
		if got := a.perCR(b, 100); got != nil {
			t.Errorf("perCR(%v) = %v, want nil", b.procs, got)
		}
	}
}

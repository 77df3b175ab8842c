package reconcile

import (
	"fmt"
	"sort"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/render"
)

// ReasonWaitingForWave is the Reconciling reason of a CR whose children of
// a higher wave wait for a child of a lower one.
const ReasonWaitingForWave = "WaitingForWave"

// gateWaves holds back the children of every wave above the first wave
// with a child that does not exist or is not ready (by its readyWhen, or
// kstatus): they are not applied yet (nor pruned, when they exist). A kind
// without waves holds nothing back.
func (r *run) gateWaves() {
	r.held = nil
	if !r.kind.Waves {
		return
	}
	byWave := map[int][]render.Child{}
	var waves []int
	for _, c := range r.result_.Children {
		if _, ok := byWave[c.Wave]; !ok {
			waves = append(waves, c.Wave)
		}
		byWave[c.Wave] = append(byWave[c.Wave], c)
	}
	sort.Ints(waves)
	for i, w := range waves {
		blocker, why := r.blocker(byWave[w])
		if blocker == nil || i == len(waves)-1 {
			continue
		}
		r.held = map[string]bool{}
		for _, later := range waves[i+1:] {
			for _, c := range byWave[later] {
				r.held[c.ID] = true
			}
		}
		o := blocker.Object
		r.waveWait = fmt.Sprintf("wave %d waits for children.%s: %s %s/%s %s", waves[i+1], blocker.ID, o.GetKind(), o.GetNamespace(), o.GetName(), why)
		r.result_.Ready = false
		return
	}
}

// blocker is the first child of a wave that does not exist or is not ready
// yet, and which of the two.
func (r *run) blocker(wave []render.Child) (*render.Child, string) {
	for i, c := range wave {
		live := r.live(c)
		if live == nil {
			return &wave[i], "to exist"
		}
		if c.ReadyWhen != nil {
			if !*c.ReadyWhen {
				return &wave[i], "to be ready (readyWhen)"
			}
			continue
		}
		if res, err := status.Compute(live); err != nil || res.Status != status.CurrentStatus {
			return &wave[i], "to be ready"
		}
	}
	return nil, ""
}

package template

import "cuelang.org/go/cue"

// The waves contract: the order in which children are applied and deleted.
var (
	// PathWaves is the optional `waves` field: per child id, the wave the
	// child belongs to (default 0). A child of wave k is applied once every
	// child of the lower waves exists and is ready; a CR being deleted loses
	// its children in reverse wave order.
	PathWaves = cue.ParsePath("waves")
	// PathReadyWhen is the optional `readyWhen` field: per child id, whether
	// the observed child is ready, instead of kstatus (a Job: its Complete
	// condition).
	PathReadyWhen = cue.ParsePath("readyWhen")
)

// WavesContract is the file name positions in the waves contract carry.
const WavesContract = "waves contract"

const (
	wavesSchema     = `[string]: int & >=0`
	readyWhenSchema = `[string]: bool`
)

// withWaves checks the template's waves and readyWhen against their
// contract and returns v with it unified in, whether the kind orders its
// children in waves and whether it gives readiness expressions.
func withWaves(v cue.Value) (out cue.Value, waves, readyWhen bool, err error) {
	v, waves, err = withContract(v, PathWaves, wavesSchema, WavesContract, "wave numbers keyed by child id")
	if err != nil {
		return v, waves, false, err
	}
	v, readyWhen, err = withContract(v, PathReadyWhen, readyWhenSchema, WavesContract, "readiness expressions keyed by child id")
	return v, waves, readyWhen, err
}

package template

import "cuelang.org/go/cue"

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

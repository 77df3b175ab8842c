package diff

import "reflect"

// withoutDefaults cuts the views of a CR, live (nil when absent) and
// after, to what the file says and what the apply changes: a field the file
// does not set and the apply leaves as it is (a default the API server
// filled in, a field another writer set) is left out of both, as the
// children's diffs leave out the fields cueop does not own.
func withoutDefaults(live, after, file map[string]any) (map[string]any, map[string]any) {
	var liveV any // a nil map in an interface is not nil
	if live != nil {
		liveV = live
	}
	l, a := trim(liveV, after, file, live != nil)
	lm, _ := l.(map[string]any)
	am, _ := a.(map[string]any)
	return lm, am
}

// trim is withoutDefaults for one value; hasLive says the CR exists.
func trim(live, after, file any, hasLive bool) (any, any) {
	lm, lok := live.(map[string]any)
	am, aok := after.(map[string]any)
	fm, fok := file.(map[string]any)
	if !fok || (!lok && live != nil) || (!aok && after != nil) {
		return live, after // a leaf, a list, or the file's own value
	}
	lout, aout := map[string]any{}, map[string]any{}
	for _, k := range keysOf(lm, am) {
		lv, inLive := lm[k]
		av, inAfter := am[k]
		fv, inFile := fm[k]
		switch {
		case inFile:
			lv, av = trim(lv, av, fv, hasLive)
		case !hasLive || reflect.DeepEqual(lv, av) && inLive == inAfter:
			continue
		}
		if inLive {
			lout[k] = lv
		}
		if inAfter {
			aout[k] = av
		}
	}
	return nilIfNil(lout, live), nilIfNil(aout, after)
}

// nilIfNil is m, or nil when the value it was cut from was nil.
func nilIfNil(m map[string]any, from any) any {
	if from == nil {
		return nil
	}
	return m
}

func keysOf(ms ...map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

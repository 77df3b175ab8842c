package localcluster

import (
	"testing"
)

func TestFeatureGatesFlag(t *testing.T) {
	for _, tc := range []struct {
		gates map[string]bool
		want  string
	}{
		{nil, ""},
		{map[string]bool{"ShardedListAndWatch": true}, "ShardedListAndWatch=true"},
		{map[string]bool{"B": false, "A": true}, "A=true,B=false"},
	} {
		if got := featureGates(tc.gates); got != tc.want {
			t.Errorf("featureGates(%v) = %q, want %q", tc.gates, got, tc.want)
		}
	}
}

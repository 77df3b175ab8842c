package clustertest

import "testing"

func TestNamePrefix(t *testing.T) {
	for test, want := range map[string]string{
		"TestPod":                                      "testpod-",
		"TestPod/ready_on_node#01":                     "testpod-ready-on-node-01-",
		"Test" + string(make([]byte, 60)):              "test-",
		"TestAVeryLongNameThatGoesOnAndOnAndOnForever": "testaverylongnamethatgoesonandonandonfor-",
	} {
		if got := namePrefix(test); got != want {
			t.Errorf("namePrefix(%q) = %q, want %q", test, got, want)
		}
	}
}

package diff

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

func yamlMap(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWithoutDefaults: the CR's diff leaves out the fields the file does
// not set and the apply does not change (the CRD's defaults, resources:
// {}), and keeps what the file sets and what the apply removes.
func TestWithoutDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                string
		live, after, file   string
		wantLive, wantAfter string
	}{
		{"a new CR: the defaults are left out",
			"", "spec: {image: x, replicas: 1, resources: {}, settings: {name: s}}", "spec: {settings: {name: s}}",
			"", "spec: {settings: {name: s}}"},
		{"a dropped field shows as removed; unchanged defaults are left out",
			"spec: {host: h, replicas: 1, resources: {}, settings: {name: s}}", "spec: {replicas: 1, resources: {}, settings: {name: s}}", "spec: {settings: {name: s}}",
			"spec: {host: h, settings: {name: s}}", "spec: {settings: {name: s}}"},
		{"a default the apply changes is shown",
			"spec: {replicas: 2, storage: {size: 1Gi}}", "spec: {replicas: 1, storage: {size: 1Gi}}", "spec: {}",
			"spec: {replicas: 2}", "spec: {replicas: 1}"},
		{"what the file sets is kept whole",
			"spec: {files: {a: x}}", "spec: {files: {a: y}}", "spec: {files: {a: y}}",
			"spec: {files: {a: x}}", "spec: {files: {a: y}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotLive, gotAfter := withoutDefaults(yamlMap(t, tc.live), yamlMap(t, tc.after), yamlMap(t, tc.file))
			if want := yamlMap(t, tc.wantLive); !reflect.DeepEqual(gotLive, want) {
				t.Errorf("live = %v, want %v", gotLive, want)
			}
			if want := yamlMap(t, tc.wantAfter); !reflect.DeepEqual(gotAfter, want) {
				t.Errorf("after = %v, want %v", gotAfter, want)
			}
		})
	}
}

package convert_test

import (
	"reflect"
	"testing"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// TestStorageSwitchAgrees: testdata/versions is RedisCluster one step
// later (v2 the hub, v1 a spoke). A v1 object reads the same at v2 under
// both templates, and converts there and back unchanged.
func TestStorageSwitchAgrees(t *testing.T) {
	set := templatetest.Load(t, "../../testdata/versions")
	k := set.Lookup("cache.example.com", "RedisCluster")
	if k.Hub().Name != "v2" || k.Version("v1") == nil {
		t.Fatalf("versions = %+v, want hub v2 and spoke v1", k.Versions)
	}
	next, err := convert.New(k)
	if err != nil {
		t.Fatal(err)
	}
	in := object(t, v1Obj)
	now := mustConvert(t, redis(t), in, "v2")
	later := mustConvert(t, next, in, "v2")
	if !reflect.DeepEqual(now.Object, later.Object) {
		t.Errorf("v2 form under the shipped template %v, under the next %v", now.Object, later.Object)
	}
	if back := mustConvert(t, next, later, "v1"); !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip %v, want %v", back.Object, in.Object)
	}
}

package operator_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestReleaseKeySharedByReplicas: replicas that need the release key at
// once, with no Secret yet, end with one Secret and the same key (the
// first create wins, the others read it); a later replica, or a restart,
// reads that key; a key given is used as is, and one too short is refused
// naming its length.
func TestReleaseKeySharedByReplicas(t *testing.T) {
	ns := clustertest.Namespace(t)
	replica := func(key []byte) *operator.Operator {
		opts := operatortest.Options(t.TempDir(), ns)
		opts.InProcess, opts.ReleaseKey = true, key
		op, err := operator.New(clustertest.Config(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	ctx := context.Background()
	keys := make([][]byte, 4)
	var wg sync.WaitGroup
	for i := range keys {
		op := replica(nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := op.ReleaseKey(ctx)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	later, err := replica(nil).ReleaseKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range append(keys, later) {
		if len(k) < operator.MinReleaseKeyBytes || !bytes.Equal(k, later) {
			t.Fatalf("replica %d has key %x, another %x", i, k, later)
		}
	}
	out := mustKubectl(t, "", "-n", ns, "get", "secret", operator.ReleaseKeySecret, "-o", "jsonpath={.data.key}")
	if out == "" {
		t.Fatalf("Secret %s/%s holds no key", ns, operator.ReleaseKeySecret)
	}

	given := bytes.Repeat([]byte("g"), operator.MinReleaseKeyBytes)
	if k, err := replica(given).ReleaseKey(ctx); err != nil || !bytes.Equal(k, given) {
		t.Fatalf("given key: %x, %v", k, err)
	}
	if _, err := replica([]byte("short")).ReleaseKey(ctx); err == nil || !strings.Contains(err.Error(), "5 bytes, fewer than 32") {
		t.Fatalf("short key: %v", err)
	}
}

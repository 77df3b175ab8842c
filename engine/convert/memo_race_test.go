package convert_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cueop/cueop/engine/budget"
)

// TestMemoConcurrentCallers: converters derived from one (strict, lenient,
// budgets of their own) convert at once and change their results, under
// the race detector.
func TestMemoConcurrentCallers(t *testing.T) {
	c := redis(t)
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc := c.WithBudget(budget.Budget{})
			if g%2 == 0 {
				cc = cc.Lenient()
			}
			for i := 0; i < 60; i++ {
				in := object(t, fmt.Sprintf(`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"a","namespace":"t"},"spec":{"replicas":%d,"version":"7.0"}}`, 1+i%5))
				out, err := cc.Convert(in, "v2")
				if err != nil {
					t.Error(err)
					return
				}
				out.Object["spec"].(map[string]any)["size"] = int64(99)
				back, err := cc.Convert(out, "v1")
				if err != nil {
					t.Error(err)
					return
				}
				back.Object["spec"].(map[string]any)["x"] = 1
			}
		}()
	}
	wg.Wait()
}

package webhook_test

import (
	"os"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/engine/worker"
)

func TestMain(m *testing.M) {
	worker.Main()
	os.Exit(m.Run())
}

// inWorkers, when set, makes benchServer convert with the operator's
// converter: in the workers of a pool (engine/worker), the memo in this
// process. workersCPU is the CPU time of that pool's workers, counted in
// cpuTime.
var (
	inWorkers  func(*testing.B, *template.Kind) webhook.Converter
	workersCPU = func() time.Duration { return 0 }
)

// benchInWorkers runs bench with the conversions in the workers of a pool
// of one worker.
func benchInWorkers(b *testing.B, bench func(*testing.B)) {
	p := worker.New(worker.Options{Workers: 1})
	inWorkers = func(b *testing.B, k *template.Kind) webhook.Converter {
		c, err := p.Converter(k, budget.Budget{})
		if err != nil || c == nil {
			b.Fatalf("converter: %v", err)
		}
		return c
	}
	workersCPU = p.CPU
	defer func() {
		inWorkers, workersCPU = nil, func() time.Duration { return 0 }
		p.Close()
	}()
	bench(b)
}

// BenchmarkConvertList1000Workers is BenchmarkConvertList1000 with the
// conversions in a worker, as the operator serves them.
func BenchmarkConvertList1000Workers(b *testing.B) { benchInWorkers(b, BenchmarkConvertList1000) }

// BenchmarkConvertOneWorkers is BenchmarkConvertOne with the conversions
// in a worker, as the operator serves them (the spec the same each time:
// answered from the memo in this process after the first).
func BenchmarkConvertOneWorkers(b *testing.B) { benchInWorkers(b, BenchmarkConvertOne) }

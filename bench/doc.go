// Package bench measures cueop against a hand-written controller-runtime
// operator for the same RedisCluster (package baseline).
//
//   - bench/baseline: the hand-written operator;
//   - bench/*_test.go: TestSameObjects and TestSameStatus (both operators
//     render the same objects and status; they run in `make test`) and
//     BenchmarkRender (cueop's render vs the hand-written builder);
//   - bench/harness: the counting transport and the CRD installation that
//     the driver and the baseline's tests share;
//   - bench/cmd/bench: the driver of `make bench`: the render benchmarks,
//     then both operators side by side on one local control plane; it
//     rewrites its section of docs/benchmarks.md;
//   - bench/patches: proposed engine changes that the measurements motivate
//     (see the notes in docs/benchmarks.md).
package bench

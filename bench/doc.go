// Package bench measures avenor's event path with `make bench`: the same
// backend driven through the host out of process (a real plugin binary over
// go-plugin gRPC) and in process (served over real gRPC in memory), in one
// run, so results read as ratios against that baseline. RESULTS.md records
// the numbers.
package bench

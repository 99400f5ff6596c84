// Package hosttest holds the end-to-end tests of the built avenor binary,
// driven as a harness would drive it: a command line, an environment, an
// --on-event NDJSON log, a --sentinel-file, an exit code and signals. The
// tests run the real avenor and the echo and scripted plugins as separate
// processes and assert the exact bytes and events the contract promises
// (docs/cli.md#avenor-run, docs/run.md, docs/events.md: run flags, exit codes, events, sentinel).
//
// The binaries come from $AVENOR_TEST_BIN (what `make test` passes); when it
// is unset, TestMain builds them once into a temporary directory. Each test
// gets its own HOME, XDG directories, TMPDIR and working directory, and sees
// only the echo and scripted plugins.
//
// The reliability suite lives here too, behind the build tag `reliability`
// (files reliability_*_test.go), so it shares this harness: `make test` never
// runs it; `make reliability` does, with bounded counts (RELIABILITY_TRIALS,
// 20 by default; RELIABILITY_SOAK_RUNS and RELIABILITY_SOAK_SPAWNS likewise):
// a crash matrix (SIGKILL of the plugin, the runtime child or the host at
// random points of a turn), a soak of sequential runs and stable spawns,
// security checks (socket modes, the HTTP debug adapter, pinned-plugin hashes,
// secret redaction) and bad input. Random choices come from one seeded RNG per
// test (RELIABILITY_SEED replays one); the seed is printed on failure.
//
// A few tests need root, to run a client or avenor itself as another uid
// (65534): a peer with another uid refused by the control socket
// (control_peer_test.go) and unreadable input files (unreadable_test.go,
// since root reads a mode-000 file). They skip with the reason elsewhere.
//
// Nothing here is imported by other packages.
package hosttest

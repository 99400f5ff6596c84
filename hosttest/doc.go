// Package hosttest holds the end-to-end tests of the built avenor binary,
// driven as a harness would drive it: a command line, an environment, an
// --on-event NDJSON log, a --sentinel-file, an exit code and signals. The
// tests run the real avenor and the echo and scripted plugins as separate
// processes and assert the exact bytes and events the contract promises
// (the avenor contract, §1–3: run flags, exit codes, events, sentinel).
//
// The binaries come from $AVENOR_TEST_BIN (what `make test` passes); when it
// is unset, TestMain builds them once into a temporary directory. Each test
// gets its own HOME, XDG directories, TMPDIR and working directory, and sees
// only the echo and scripted plugins.
//
// Nothing here is imported by other packages.
package hosttest

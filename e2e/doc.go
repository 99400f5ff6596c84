// Package e2e holds the real-runtime tests (`make e2e`, build tag e2e): the
// built avenor and its plugins drive the real agent CLIs, installed from
// npm at pinned versions by install.sh, offline against the fake LLM in
// e2e/fakellm. The tests run avenor exactly as a harness would (command
// line, isolated HOME and XDG directories, --on-event log, sentinel,
// permission files, signals) and assert what the CLI did (files the tool
// wrote) and what it sent to the model (model ids, the first turn's
// messages on resume).
//
// The same CLIs are also driven directly over ACP, without avenor: that
// proves the fake LLM and the offline configuration on their own, and is
// the baseline of the avenor-vs-direct timing.
//
// Environment: AVENOR_TEST_BIN (the directory of the built avenor and
// plugins; `make build` output when unset), AVENOR_E2E_OPENCODE and
// AVENOR_E2E_GEMINI (the CLI executables; install.sh runs when unset).
package e2e

// Package watchdog decides whether a turn of an agent runtime is hung,
// and gathers the evidence of why.
//
// It owns two rules and nothing else:
//
//   - A tool call is hung when it is older than the tool timeout and its own
//     process subtree — the descendants of the plugin and its runtime started
//     since the tool call began — gained neither CPU time (utime+stime of
//     /proc/<pid>/stat, its reaped children's included) nor I/O (rchar+wchar
//     of /proc/<pid>/io, which count pipes and sockets too) over the window,
//     nor started or lost a process. A busy tool — a compile, a test run, a
//     download — is never hung however long it takes.
//   - A tool call with no subtree of its own (an edit, an MCP call inside the
//     runtime) is not judged here: it falls back to the progress rule, no
//     event for the progress timeout, which the runner keeps.
//
// The host reads /proc of the plugin's descendants itself: plugins run as the
// same user and become child subreapers (sdk/agentproc), so every process a
// runtime's tool starts stays in the plugin's tree. The package reads /proc
// and judges samples; the runner (host/runner) feeds it tool events, samples
// on a ticker and acts on a firing.
package watchdog

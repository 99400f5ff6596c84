// Package suprecord keeps the records of the running `avenor stable`
// supervisors in the user's state directory (docs/cli.md#avenor-control): one
// small JSON file per supervisor, <state>/supervisors/<pid>.json, holding
// its socket, pid and run id, written when it starts and removed when it
// stops. `avenor board` lists them beside the sockets it scans, so a
// supervisor whose socket lives anywhere is still found.
//
// A supervisor killed with SIGKILL cannot remove its record: List drops
// (and deletes) every record whose process no longer runs, so a dead
// supervisor is never listed as live.
package suprecord

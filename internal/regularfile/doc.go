// Package regularfile reads the files a user names on avenor's command line
// or in its configs (prompt files, loop, team and roster configs, a spawn's
// prompt_file) without ever blocking on them: a named pipe, a device or a
// socket given where a file belongs is refused at once, with an error
// naming the path and what it is, instead of hanging the run (bad
// input: "no hang"). Create does the same for the files avenor writes
// where a harness reads them (the --on-event and on_event logs).
//
// Imported by cmd/avenor, host/loop, host/stable and host/permission (the
// permission files a harness writes).
package regularfile

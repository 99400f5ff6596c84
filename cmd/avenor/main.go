// Command avenor drives AI coding-agent runtimes through backend plugins.
// This package holds only the command line: it parses flags, builds a spec,
// starts it through host/run (backend resolution, run assembly) or calls
// the client package (control, await), and maps the outcome to an exit
// code.
package main

import (
	"os"
)

// Version is set at build time: -ldflags "-X main.Version=1.2.3".
var Version = "dev"

func main() {
	os.Exit(Main(os.Args[1:], Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ(),
	}))
}

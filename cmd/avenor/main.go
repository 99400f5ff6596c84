// Command avenor drives AI coding-agent runtimes through backend plugins.
// This package holds only the command line: it parses flags, builds the
// host's options, calls the host and maps errors to exit codes.
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

package main

import (
	"embed"
	"strings"
)

// helpFiles are the long help texts of the commands, one file a command:
// help/<name>.txt is byte for byte what --help prints, bar the file's
// last newline.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help is the long help text of help/<name>.txt.
func help(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("cmd/avenor: no help text " + name + ": " + err.Error()) // a build without its help files
	}
	return strings.TrimSuffix(string(b), "\n")
}

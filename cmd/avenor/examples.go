package main

import (
	"embed"
	"strings"

	"github.com/spf13/cobra"
)

// exampleFiles are the Examples: sections of the commands whose
// definitions do not set their own, one file a command:
// help/examples/avenor.<sub>.<sub>.txt by command path (avenor.txt is the
// root's). They live together so that every --help shows how a command is
// called; TestEveryCommandHasExamples keeps it so for new commands.
//
//go:embed help/examples/*.txt
var exampleFiles embed.FS

// example is the Examples: section of the command at path (without the
// leading "avenor"; "" is the root), false when it has no file.
func example(path string) (string, bool) {
	name := strings.Join(append([]string{"avenor"}, strings.Fields(path)...), ".")
	b, err := exampleFiles.ReadFile("help/examples/" + name + ".txt")
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(string(b), "\n"), true
}

// applyExamples sets the Example of every command of the tree that has
// none of its own and has an example file.
func applyExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if ex, ok := example(path); ok && c.Example == "" && !strings.Contains(c.Long, "Examples:") {
			c.Example = ex
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// Package docgen owns the generated parts of the user documentation in docs/:
// the capability matrix from the built plugins' Describe answers, the
// configuration key table from host/config, the event tables from the host's
// event registry and the plugins' event types, and the helpers the drift
// tests in docs/ share (marked sections, example JSON lines, event types in
// recorded transcripts, control methods registered in the source).
//
// The cobra-derived pages (cli.md, man pages, completions) are written by the
// hidden `avenor docs` command, which calls [Sections] and [Splice] for the
// rest. Imported by cmd/avenor and the docs tests only.
package docgen

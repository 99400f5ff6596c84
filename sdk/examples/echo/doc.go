// Package echo is a complete, small avenor backend plugin: the template a
// third party copies to write a plugin of their own, and the backend behind
// `make run`.
//
// It needs no runtime binary. For each prompt it streams a few thought
// chunks, runs a harmless "tool" (measuring the prompt), then streams a reply
// that echoes the prompt and names the turn ("echo (turn 2): hi"). A prompt
// that mentions "permission" first asks the host whether echo may write
// reply.txt in the session's directory. Sessions are kept in a small JSON
// file in the plugin's state directory, so a fresh plugin process can resume
// them by id.
//
// The binary is cmd/avenor-plugin-echo; README.md walks through writing a
// plugin.
package echo

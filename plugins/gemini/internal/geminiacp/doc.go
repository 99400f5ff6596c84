// Package geminiacp is avenor's gemini-acp backend: Gemini CLI driven over
// ACP (`gemini --acp`, docs/backends.md#gemini-acp-plugin-gemini,
// runtime-protocols.md §6.1), one process per session, through sdk/acp's
// backend.
package geminiacp

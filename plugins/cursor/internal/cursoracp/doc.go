// Package cursoracp is avenor's cursor-acp backend: Cursor's agent CLI
// driven over ACP (`agent acp`, docs/backends.md#cursor-acp-plugin-cursor,
// runtime-protocols.md §6.2), one process per session, through sdk/acp's
// backend; extensions.go answers the Cursor-only agent→client methods.
package cursoracp

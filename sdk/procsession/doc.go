// Package procsession is the skeleton of a session whose runtime is one
// child process spoken to over its stdio: the part every such backend
// wrote out the same way around a turn.Runner. Opening, it fills the
// config's duration defaults, picks the logger (the config's, else the
// host's, else a null one), makes the turn.Gate and the turn.Runner,
// starts the runtime's CLI (its failure the one runtime error every such
// backend gives) and tells the host the process it started. Closing, it
// runs the one order that leaves nothing behind: close the connection (the
// runtime reads EOF on its stdin), stop the process and its group, then
// wait for the reader to end, so no frame is handled after Close returns.
// Capabilities is the part of the capability table such backends share.
//
// A backend keeps what is its own — the arguments of its CLI, the
// handshake, the mapping of frames to events, how it interrupts a turn —
// and embeds the rest. Plugins import it; the host does not.
package procsession

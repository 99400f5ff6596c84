// Package runtime is the public Go contract between the avenor host and a
// backend: the Backend, Session and Host interfaces and the plain Go types
// that travel between them (events, permission requests and decisions, turn
// results, capabilities, errors).
//
// Plugin authors implement Backend and Session and call Host; the avenor host
// uses the very same interfaces through sdk/plugin, which turns them into gRPC
// on one side and back into these types on the other. No protobuf type ever
// appears here.
package runtime

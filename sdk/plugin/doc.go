// Package plugin carries sdk/runtime over gRPC with hashicorp/go-plugin.
//
// A plugin's main calls Serve with its backends. The host calls Launch to
// start a plugin binary and gets back a Client whose backends are ordinary
// runtime.Backend values that are really gRPC clients. ServeInProcess serves
// backends inside the calling process over the same real gRPC stack, for tests
// and for the benchmark baseline.
//
// A plugin whose host dies stops its runtimes — at once, or, when the host
// set a linger window (LingerEnv, avenor stable), once the window has
// passed with no new host: a host started meanwhile reconnects with
// Reattach and takes each session over (Reattacher), the turn in flight
// going on and what the plugin kept arriving in order (linger.go,
// reattach.go, reattach_client.go).
//
// This package is the one boundary where protobuf types are converted to and
// from sdk/runtime types (internal/toproto, internal/fromproto); nothing
// outside sdk/ sees them.
package plugin

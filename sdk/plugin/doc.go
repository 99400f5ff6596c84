// Package plugin carries sdk/runtime over gRPC with hashicorp/go-plugin.
//
// A plugin's main calls Serve with its backends. The host calls Launch to
// start a plugin binary and gets back a Client whose backends are ordinary
// runtime.Backend values that are really gRPC clients. ServeInProcess serves
// backends inside the calling process over the same real gRPC stack, for tests
// and for the benchmark baseline.
//
// This package is the one boundary where protobuf types are converted to and
// from sdk/runtime types (convert.go); nothing outside sdk/ sees them.
package plugin

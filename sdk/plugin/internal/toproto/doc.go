// Package toproto builds the generated wire messages (sdk/internal/runtimepb)
// from sdk/runtime values: one direction of the one conversion boundary of
// sdk/plugin, one file per concept. Its mirror is fromproto. Apart from
// these two, only the gRPC glue of sdk/plugin (serve.go, client.go) names
// the generated package: the stream plumbing carries the opaque Message,
// EncodedEvent and Batch built here, and plugins and the host see runtime
// types only.
package toproto

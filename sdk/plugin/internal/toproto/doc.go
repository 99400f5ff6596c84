// Package toproto builds the generated wire messages (sdk/internal/runtimepb)
// from sdk/runtime values: one direction of the one conversion boundary of
// sdk/plugin, one file per concept. Its mirror is fromproto. Apart from
// these two, only the gRPC glue of sdk/plugin (serve.go, client.go) and the
// stream plumbing that carries the built messages name the generated
// package; plugins and the host see runtime types only.
package toproto

// Package permission owns how avenor resolves the permission requests that
// backends raise (docs/permission-handler.md): the [Broker] and its precedence
// (auto-approve → a control client → the file handler → none), the file
// protocol of <base>.req / <base>.req.response ([FileHandler]), the parsing
// and validation of answers ([ParseResponse]), the writer behind
// `avenor answer` ([WriteAnswer]), the permission.request and
// permission.response events (docs/events.md#permissionresponse), and the derivation of the file base
// from a sentinel path ([DerivePermBase]).
//
// Nothing is ever allowed by default: a request the broker cannot resolve
// waits until the turn is cancelled or times out, and a failed file handler
// (timeout, invalid answer) fails the attempt. Only one request may be
// pending per session, and only one answer decides it: a later one is
// ErrAlreadyAnswered. Every decision is a permission.response event whose
// source says who decided: "avenor" (auto-approve), "control", "board" or "file".
//
// The control plane plugs in through [ControlResolver] and [Broker.Answer];
// without one the precedence is auto-approve → file → none.
//
// Imported by host/runner (whose Permissions interface [Session]
// implements) and by cmd/avenor. It depends on host/event and sdk/runtime
// only, never on host/runner.
package permission

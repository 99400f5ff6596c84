package runtime

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CapModelListing: the backend answers Catalog with the models its runtime
// reports here (`avenor backends --models`). It is not a row of the
// capability matrix: `avenor backends` shows it only with --models, so that
// the listing without the flag stays what it was.
const CapModelListing Capability = "model_listing"

// DiscoveryCapabilityNames are the capabilities `avenor backends --models`
// adds to each row's capabilities.
var DiscoveryCapabilityNames = []Capability{CapModelListing}

// Bounds of a model catalog: what a runtime reports is outside input, so
// the list is cut to MaxModels entries and each id and name to
// MaxModelIDBytes (an entry whose id is longer is dropped, not cut, since a
// cut id is not one --model takes). docs/configuration.md's bounds table.
const (
	MaxModels       = 500
	MaxModelIDBytes = 256
)

// AuthState is whether a backend's runtime is logged in, as its own status
// command says: the `auth` of `avenor backends --models`. A defined type so
// that a state is spelled with the constants below.
type AuthState string

// String returns the state as `avenor backends` spells it.
func (a AuthState) String() string { return string(a) }

// Authentication states. Unknown is the answer whenever the runtime has no
// status command, or its answer could not be read: never a guess.
const (
	// AuthAuthenticated: the runtime's status command says it is logged in
	// (or has a usable credential such as an API key).
	AuthAuthenticated AuthState = "authenticated"
	// AuthRequired: the runtime says it has no credential; log in first.
	AuthRequired AuthState = "required"
	// AuthRejected: a credential is configured and the runtime says it is
	// invalid or expired.
	AuthRejected AuthState = "rejected"
	// AuthUnknown: the runtime offers no way to ask, or did not answer.
	AuthUnknown AuthState = "unknown"
)

// AuthFromReadiness maps Readiness.Auth's older vocabulary ("ok",
// "missing", "unknown") onto AuthState; anything else is AuthUnknown.
func AuthFromReadiness(auth string) AuthState {
	switch auth {
	case "ok", string(AuthAuthenticated):
		return AuthAuthenticated
	case "missing", string(AuthRequired):
		return AuthRequired
	case string(AuthRejected):
		return AuthRejected
	}
	return AuthUnknown
}

// Model is one model a runtime reports: ID is what --model takes.
type Model struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Catalog is a backend's answer to `avenor backends --models`: its models
// and its authentication state. A failed list never makes a backend
// unusable: ModelsError says why and the row stays as Check left it.
type Catalog struct {
	// ModelsSupported: the backend can list models here; false leaves
	// Models and ModelsError empty.
	ModelsSupported bool
	Models          []Model
	// ModelsTruncated: entries were left out (over MaxModels, or too long).
	ModelsTruncated bool
	// ModelsError says why the list failed, in one line.
	ModelsError string
	// Auth is the runtime's own verdict; empty means not probed (the host
	// then keeps Check's answer).
	Auth        AuthState
	AuthMessage string
}

// Cataloger is an optional Backend extension answering `avenor backends
// --models`. Catalog runs the runtime's own bounded listing and status
// commands, within ctx's deadline, without starting a turn. A backend that
// does not implement it does not list models and its auth stays Check's.
type Cataloger interface {
	Catalog(ctx context.Context, req CheckRequest) Catalog
}

// Bounded returns c within the catalog's bounds: ids and names trimmed of
// space, control characters refused, empty and duplicate ids dropped, ids
// and names over MaxModelIDBytes dropped, at most MaxModels entries,
// messages cut to one line of MaxCatalogMessage bytes, an auth state
// outside the vocabulary read as AuthUnknown. Both ends of the wire apply
// it: the plugin before it sends, the host on what it receives.
func (c Catalog) Bounded() Catalog {
	out := c
	out.Models = nil
	seen := map[string]bool{}
	for _, m := range c.Models {
		id, name := strings.TrimSpace(m.ID), strings.TrimSpace(m.Name)
		if id == "" || seen[id] {
			continue
		}
		if len(out.Models) == MaxModels || len(id) > MaxModelIDBytes || !printable(id) {
			out.ModelsTruncated = true
			continue
		}
		if len(name) > MaxModelIDBytes || !printable(name) {
			name = ""
		}
		seen[id] = true
		out.Models = append(out.Models, Model{ID: id, Name: name})
	}
	if !out.ModelsSupported {
		out.Models, out.ModelsTruncated, out.ModelsError = nil, false, ""
	}
	out.ModelsError = oneLine(out.ModelsError)
	out.AuthMessage = oneLine(out.AuthMessage)
	switch out.Auth {
	case "", AuthAuthenticated, AuthRequired, AuthRejected, AuthUnknown:
	default:
		out.Auth = AuthUnknown
	}
	return out
}

// MaxCatalogMessage bounds Catalog's ModelsError and AuthMessage.
const MaxCatalogMessage = 512

// oneLine is s's first line, trimmed and cut to MaxCatalogMessage bytes on
// a rune boundary.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) <= MaxCatalogMessage {
		return s
	}
	s = s[:MaxCatalogMessage]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// printable: valid UTF-8 without control characters, so an id or name
// cannot break the table's lines or a terminal.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

package run

import (
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestApplyCatalog(t *testing.T) {
	listing := sdk.BackendInfo{Capabilities: sdk.Supports(sdk.CapModelListing)}
	cases := []struct {
		name      string
		checkAuth string
		info      sdk.BackendInfo
		cat       sdk.Catalog
		wantAuth  string
		wantCap   sdk.Support
	}{
		{"check's ok maps to authenticated", "ok", sdk.BackendInfo{}, sdk.Catalog{}, "authenticated", sdk.Unsupported},
		{"check's missing maps to required", "missing", sdk.BackendInfo{}, sdk.Catalog{}, "required", sdk.Unsupported},
		{"no auth is unknown", "", sdk.BackendInfo{}, sdk.Catalog{}, "unknown", sdk.Unsupported},
		{"the runtime's verdict wins", "unknown", listing, sdk.Catalog{ModelsSupported: true, Auth: sdk.AuthRejected}, "rejected", sdk.Supported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := BackendRow{Auth: tc.checkAuth, Ready: true}
			applyCatalog(&r, tc.info, tc.cat)
			if r.Auth != tc.wantAuth || r.Capabilities[sdk.CapModelListing] != tc.wantCap || r.Models == nil || !r.Ready {
				t.Errorf("row %+v", r)
			}
		})
	}
}

func TestWriteModelsTable(t *testing.T) {
	many := make([]sdk.Model, 40)
	for i := range many {
		many[i] = sdk.Model{ID: "provider/model-with-a-long-name"}
	}
	rows := []BackendRow{
		{Backend: "a", Auth: "authenticated", Capabilities: map[sdk.Capability]sdk.Support{sdk.CapModelListing: sdk.Supported}, Models: many, ModelsTruncated: true},
		{Backend: "b", Auth: "unknown", Capabilities: map[sdk.Capability]sdk.Support{sdk.CapModelListing: sdk.Unsupported}},
		{Backend: "c", Auth: "unknown", Capabilities: map[sdk.Capability]sdk.Support{sdk.CapModelListing: sdk.Supported}, ModelsError: "opencode models: exit 1"},
		{Backend: "d", Auth: "required", Capabilities: map[sdk.Capability]sdk.Support{sdk.CapModelListing: sdk.Supported}},
		{Plugin: "broken", Error: "exec format error"},
	}
	var b strings.Builder
	WriteModelsTable(&b, rows, 100)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "BACKEND") {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range []string{"(40) provider/", "does not list models", "error: opencode models: exit 1", "reported none", "error: exec format error"} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("line %q lacks %q", lines[i+1], want)
		}
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("a line of %d columns", n)
		}
	}
	b.Reset()
	WriteModelsTable(&b, rows, 0)
	if !strings.Contains(b.String(), ", …\n") {
		t.Errorf("-o wide does not show the whole, truncated list:\n%s", b.String())
	}
}

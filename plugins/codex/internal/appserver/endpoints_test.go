package appserver

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestModelEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		env          []string
		want         []runtime.NetDest
	}{
		{"the provider's base_url", "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:4000/v1\"\n", nil,
			[]runtime.NetDest{{Host: "127.0.0.1", Port: 4000}}},
		{"the profile's provider", "profile = \"p\"\nmodel_provider = \"a\"\n[profiles.p]\nmodel_provider = \"b\"\n[model_providers.a]\nbase_url = \"http://127.0.0.1:1\"\n[model_providers.b]\nbase_url = \"https://b.example.com/v1\"\n", nil,
			[]runtime.NetDest{{Host: "b.example.com", Port: 443}}},
		{"openai with OPENAI_BASE_URL", "", []string{"OPENAI_BASE_URL=http://localhost:8080/v1"}, []runtime.NetDest{{Host: "localhost", Port: 8080}}},
		{"openai without: none", "model = \"gpt\"\n", nil, nil},
		{"a provider without base_url: none", "model_provider = \"x\"\n", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := modelEndpoints(append([]string{"CODEX_HOME=" + home}, tc.env...))
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("modelEndpoints = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

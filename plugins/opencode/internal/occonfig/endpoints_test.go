package occonfig

import (
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestModelEndpoints(t *testing.T) {
	prov := func(id, url string) map[string]any {
		return map[string]any{"provider": map[string]any{id: map[string]any{"options": map[string]any{"baseURL": url}}}}
	}
	for _, tc := range []struct {
		name   string
		layers []map[string]any
		model  string
		want   []runtime.NetDest
	}{
		{"the configured model's provider", []map[string]any{
			{"model": "fake/m", "small_model": "fake/s"}, prov("fake", "http://127.0.0.1:4000/v1"),
		}, "", []runtime.NetDest{{Host: "127.0.0.1", Port: 4000}}},
		{"--model's provider, and the small model's", []map[string]any{
			{"model": "a/m", "small_model": "b/s"}, prov("a", "https://a.example.com/v1"), prov("b", "http://127.0.0.1:9/v1"),
		}, "a/x", []runtime.NetDest{{Host: "a.example.com", Port: 443}, {Host: "127.0.0.1", Port: 9}}},
		{"the last layer wins", []map[string]any{prov("a", "http://127.0.0.1:1"), prov("a", "http://127.0.0.1:2")},
			"a/m", []runtime.NetDest{{Host: "127.0.0.1", Port: 2}}},
		{"a built-in provider without baseURL: none", []map[string]any{{"model": "openai/gpt"}}, "", nil},
		{"no model at all: none", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var layers []Layer
			for _, c := range tc.layers {
				layers = append(layers, Layer{Config: c})
			}
			got, err := ModelEndpoints(layers, tc.model)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ModelEndpoints = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

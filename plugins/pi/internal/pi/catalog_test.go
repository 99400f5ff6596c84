package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func listModelsTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseListModels(t *testing.T) {
	cases := []struct {
		name   string
		out    string
		ids    []string
		noneOK bool
	}{
		{"the fake provider of models.json", listModelsTestdata(t, "list-models-fake-0.73.1.txt"), []string{"fake/fake-model"}, false},
		{"a built-in provider with a key", listModelsTestdata(t, "list-models-anthropic-0.73.1.txt"),
			[]string{"anthropic/claude-3-5-haiku-20241022", "anthropic/claude-3-5-haiku-latest", "anthropic/claude-3-5-sonnet-20240620"}, false},
		{"no provider holds a key", listModelsTestdata(t, "list-models-none-0.73.1.txt"), nil, true},
		{"a warning before the header, colour", "Warning: x y\n\x1b[1mprovider  model\x1b[0m\nfake  fake-model  1K\n", []string{"fake/fake-model"}, false},
		{"rows without a header are not models", "fake  fake-model  1K\n", nil, false},
		{"a row that is not a name", "provider model\n\x07bad  x\n", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			models, none := ParseListModels(tc.out)
			var ids []string
			for _, m := range models {
				ids = append(ids, m.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.ids, ",") || none != tc.noneOK {
				t.Errorf("ParseListModels = %v, none %v; want %v, %v", ids, none, tc.ids, tc.noneOK)
			}
		})
	}
}

// FuzzParseListModels: whatever pi prints, no panic and every id is
// provider/model without spaces or control characters.
func FuzzParseListModels(f *testing.F) {
	for _, n := range []string{"list-models-fake-0.73.1.txt", "list-models-anthropic-0.73.1.txt", "list-models-none-0.73.1.txt"} {
		f.Add(listModelsTestdata(f, n))
	}
	f.Fuzz(func(t *testing.T, out string) {
		models, none := ParseListModels(out)
		if none && len(models) > 0 {
			t.Errorf("none with models %v", models)
		}
		for _, m := range models {
			if !strings.Contains(m.ID, "/") || strings.ContainsAny(m.ID, " \t\r\n\x1b\x07") {
				t.Errorf("id %q", m.ID)
			}
		}
	})
}

package run

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// addCatalogs asks c for the catalog of each of its rows' backends, all
// within one CatalogTimeout, and fills the rows' --models fields. A
// catalog that fails or runs out of time sets models_error and leaves the
// row's readiness as Check said it.
func addCatalogs(ctx context.Context, c *plugin.Client, rows []BackendRow) {
	cctx, cancel := context.WithTimeout(ctx, CatalogTimeout)
	defer cancel()
	for i := range rows {
		r := &rows[i]
		b, ok := c.Backend(r.Backend)
		if !ok {
			continue
		}
		var cat sdk.Catalog
		if cl, ok := b.(sdk.Cataloger); ok {
			if cctx.Err() != nil {
				cat = sdk.Catalog{ModelsSupported: true, ModelsError: "the plugin's catalogs did not finish within " + CatalogTimeout.String()}
			} else {
				cat = cl.Catalog(cctx, sdk.CheckRequest{Backend: r.Backend}).Bounded()
			}
		}
		applyCatalog(r, b.Info(), cat)
	}
}

// applyCatalog fills r's --models fields from cat: the model_listing
// capability, the models (never null), the error, and auth in the
// catalog's vocabulary — the runtime's own verdict when it gave one,
// otherwise Check's mapped onto it.
func applyCatalog(r *BackendRow, info sdk.BackendInfo, cat sdk.Catalog) {
	if r.Capabilities == nil {
		r.Capabilities = map[sdk.Capability]sdk.Support{}
	}
	for _, name := range sdk.DiscoveryCapabilityNames {
		r.Capabilities[name] = info.Capability(name)
	}
	r.Models = append([]sdk.Model{}, cat.Models...)
	r.ModelsTruncated = cat.ModelsTruncated
	r.ModelsError = cat.ModelsError
	if cat.Auth != "" {
		r.Auth, r.AuthMessage = string(cat.Auth), cat.AuthMessage
	} else {
		r.Auth = string(sdk.AuthFromReadiness(r.Auth))
	}
}

// WriteModelsTable writes `avenor backends --models` on a terminal: one
// line a backend with its auth and its models, or a short reason when it
// lists none. width > 0 cuts each line's models to fit (-o wide: 0, the
// whole list).
func WriteModelsTable(out io.Writer, rows []BackendRow, width int) {
	if len(rows) == 0 {
		WriteBackendsTable(out, rows)
		return
	}
	table := [][]string{{"BACKEND", "AUTH", "MODELS"}}
	for _, r := range rows {
		if r.Error != "" {
			table = append(table, []string{"?", "-", "error: " + r.Error})
			continue
		}
		table = append(table, []string{r.Backend, r.Auth, modelsCell(r)})
	}
	widths := [2]int{}
	for _, row := range table {
		for i := range widths {
			widths[i] = max(widths[i], utf8.RuneCountInString(row[i]))
		}
	}
	for _, row := range table {
		line := row[0] + strings.Repeat(" ", widths[0]-utf8.RuneCountInString(row[0])+2) +
			row[1] + strings.Repeat(" ", widths[1]-utf8.RuneCountInString(row[1])+2)
		last := row[2]
		if width > 0 {
			last = clipRunes(last, width-utf8.RuneCountInString(line))
		}
		fmt.Fprintln(out, strings.TrimRight(line+last, " "))
	}
}

// modelsCell is a row's models as one cell: their ids with their count,
// or why there are none.
func modelsCell(r BackendRow) string {
	switch {
	case r.ModelsError != "":
		return "error: " + r.ModelsError
	case len(r.Models) == 0 && r.Capabilities[sdk.CapModelListing] == sdk.Unsupported:
		return "- (the backend does not list models)"
	case len(r.Models) == 0:
		return "- (the runtime reported none)"
	}
	ids := make([]string, len(r.Models))
	for i, m := range r.Models {
		ids[i] = m.ID
	}
	more := ""
	if r.ModelsTruncated {
		more = ", …"
	}
	return fmt.Sprintf("(%d) %s%s", len(ids), strings.Join(ids, ", "), more)
}

package plugins

import (
	"fmt"
	"sort"
	"strings"

	"github.com/avenor-go/avenor/internal/nearest"
)

// BackendHint adds to an unknown backend's error the backends installed
// (names) and, when one is close to it, the one meant. The first line stays
// the contract's `unknown backend "X"` (docs/run.md#validation).
func BackendHint(nf *NotFoundError, names []string) error {
	names = append([]string(nil), names...)
	sort.Strings(names)
	hint := "installed: " + strings.Join(names, ", ")
	if n, ok := nearest.Name(nf.Backend, names); ok {
		hint = "did you mean " + n + "? " + hint
	}
	return fmt.Errorf("unknown backend %q\n%s\n%w", nf.Backend, hint, nf)
}

// Package docs holds avenor's user documentation (the markdown pages, man
// pages and shell completions beside this file) and, in its tests, the drift
// checks that keep the pages true to the code: `make docs` regenerates the
// generated parts (see internal/docgen and the hidden `avenor docs`).
package docs

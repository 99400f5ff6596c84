package board

import (
	"context"
	"embed"
	"io/fs"
	"net/http"
	"time"
)

// assets is the page: plain files, served as they are.
//
//go:embed assets
var assets embed.FS

// pageHandler serves assets/ (index.html for the directory). The page
// holds no secret: the token comes from the URL the person opened.
func pageHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed pattern names the directory: cannot happen
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A page that loads nothing from elsewhere, and nothing may frame it.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

func contextWithTimeout(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d)
}

package httpdebug

import (
	"net/http"
)

// refuse answers a refused request and closes its connection: a peer that
// is refused must not keep the connection (and its descriptor) for more
// tries.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	httpError(w, code, msg)
}

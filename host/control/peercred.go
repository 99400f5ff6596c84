package control

import "github.com/avenor-go/avenor/internal/peercred"

// peerCred is who is at the other end of a connection; a Server's
// peerCred field starts as it, and tests replace that.
var peerCred = peercred.Of

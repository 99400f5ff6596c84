package client

import "github.com/avenor-go/avenor/internal/peercred"

// peerCred is who serves a socket; tests of the trust rules replace it.
var peerCred = peercred.Of

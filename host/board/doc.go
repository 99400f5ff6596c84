// Package board is `avenor board` (docs/board.md): a loopback web page
// over the control sockets it finds, for a person watching many runtimes —
// which are alive, what each does now, which waits for a permission, what
// each has cost — and, with AllowMutations, answering permissions,
// cancelling and sending follow-up prompts.
//
// It is a client of the control method table and of nothing else in the
// host: every fact it shows and every action it takes goes through the
// client package over a control socket (one-shot `avenor run
// --control-socket` and stable supervisors alike). Permission answers carry
// the source hint "board", so the runtime's log says a person answered on
// the board.
//
// Start serves the HTTP API (routes in routes.go) and the page embedded from
// assets/ (plain HTML, CSS and JavaScript: no build step, no external
// fonts or scripts, so it works offline). Security, in order of checks:
// the Host header must name the bound address (loopback unless the user
// bound elsewhere with a token), a browser Origin must be the page's own,
// every /api/ route but /api/config needs the token (Authorization: Bearer,
// or ?token= on the SSE stream, which EventSource cannot give headers), and
// every POST needs AllowMutations. The token is never logged.
//
// cmd/avenor/board.go parses the flags into a Config; nothing else imports
// this package.
package board

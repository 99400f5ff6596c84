package client

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A server that refuses the connection with an error line (id null) and
// closes it, as a control socket over its connection cap does: pending and
// later calls fail with ErrClosed and say why, not only "closed".
func TestServerRefusalIsTheCloseReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const refusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many control connections: 128 are open (the limit, control.MaxConnections); close one and retry"}}` + "\n"
	served := make(chan struct{})
	go func() {
		defer close(served)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = nc.Write([]byte(refusal))
		nc.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-served
	for range 2 { // the call in flight when the line came, and one after
		_, err := c.Identity(ctx)
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "too many control connections") {
			t.Fatalf("call on a refused connection: %v", err)
		}
	}
}

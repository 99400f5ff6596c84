package board

import (
	"context"
	"testing"
)

func TestBindPolicy(t *testing.T) {
	lo, err := resolveBind(context.Background(), "127.0.0.1:0", false)
	if err != nil || !lo.loopback {
		t.Fatalf("127.0.0.1:0 = %+v, %v", lo, err)
	}
	for addr, want := range map[string]string{":8080": "127.0.0.1:8080", "localhost:1": "127.0.0.1:1", "[::1]:2": "[::1]:2"} {
		p, err := resolveBind(context.Background(), addr, false)
		if err != nil || p.listen != want || !p.loopback {
			t.Errorf("%s = %+v, %v; want loopback %s", addr, p, err, want)
		}
	}
	lan, err := resolveBind(context.Background(), "192.0.2.7:80", true)
	if err != nil || lan.loopback {
		t.Fatalf("guarded lan address = %+v, %v", lan, err)
	}
	any, err := resolveBind(context.Background(), "0.0.0.0:80", true)
	if err != nil || !any.any {
		t.Fatalf("0.0.0.0 = %+v, %v", any, err)
	}
	hosts := []struct {
		p    bindPolicy
		host string
		ok   bool
	}{
		{lo, "127.0.0.1:5", true}, {lo, "127.0.0.1", true}, {lo, "LOCALHOST:9", true}, {lo, "[::1]:9", true},
		{lo, "127.0.0.1:x", false}, {lo, "example.com", false}, {lo, "192.0.2.7:80", false}, {lo, "", false},
		{lan, "192.0.2.7:80", true}, {lan, "localhost", true}, {lan, "evil.example", false},
		{any, "box.lan:80", true},
	}
	for _, h := range hosts {
		if got := h.p.hostAllowed(h.host); got != h.ok {
			t.Errorf("hostAllowed(%q) under %+v = %v", h.host, h.p, got)
		}
	}
	origins := []struct {
		origin, host string
		ok           bool
	}{
		{"", "127.0.0.1:5", true},
		{"http://127.0.0.1:5", "127.0.0.1:5", true},
		{"http://127.0.0.1:6", "127.0.0.1:5", false},
		{"https://127.0.0.1:5", "127.0.0.1:5", false},
		{"http://evil.example", "evil.example", false},
		{"http://127.0.0.1:5/path", "127.0.0.1:5", false},
		{"null", "127.0.0.1:5", false},
	}
	for _, o := range origins {
		if got := lo.originAllowed(o.origin, o.host); got != o.ok {
			t.Errorf("originAllowed(%q, %q) = %v", o.origin, o.host, got)
		}
	}
}

package runtime

import (
	"strings"
	"testing"
)

func TestParseNetProfile(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"empty is host", "", "host", ""},
		{"host", "host", "host", ""},
		{"none", "none", "none", ""},
		{"model", "model", "model", ""},
		{"one host", "allow=api.example.com", "allow=api.example.com", ""},
		{"host and port", "allow=API.example.com:443", "allow=api.example.com:443", ""},
		{"port only", "allow=:8080", "allow=:8080", ""},
		{"ipv4", "allow=127.0.0.1:8080", "allow=127.0.0.1:8080", ""},
		{"ipv6", "allow=[::1]:8080,[2001:db8::1]", "allow=[::1]:8080,[2001:db8::1]", ""},
		{"spaces and duplicates", "allow= a.io:1 ,a.io:1,b.io", "allow=a.io:1,b.io", ""},
		{"unknown word", "open", "", "invalid sandbox network"},
		{"empty list", "allow=", "", "allows nothing"},
		{"blank list", "allow= ", "", "allows nothing"},
		{"empty entry", "allow=a.io,,b.io", "", "empty entry"},
		{"port zero", "allow=a.io:0", "", "1 to 65535"},
		{"port too big", "allow=a.io:65536", "", "1 to 65535"},
		{"port not number", "allow=a.io:https", "", "1 to 65535"},
		{"port leading zero", "allow=a.io:080", "", "1 to 65535"},
		{"port signed", "allow=a.io:+80", "", "1 to 65535"},
		{"empty port", "allow=a.io:", "", "empty port"},
		{"bare colon", "allow=:", "", "empty port"},
		{"v6 unbracketed", "allow=::1:80", "", "brackets"},
		{"v6 unclosed", "allow=[::1:80", "", "unclosed"},
		{"v6 junk after", "allow=[::1]x", "", "not :port"},
		{"v6 not v6", "allow=[1.2.3.4]:80", "", "not an IPv6"},
		{"bad host", "allow=a b.io", "", "not a host name"},
		{"bad label", "allow=-a.io", "", "not a host name"},
		{"url given", "allow=https://a.io", "", "1 to 65535"},
		{"path given", "allow=a.io/x", "", "not a host name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseNetProfile(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseNetProfile(%q) = %v, %v; want error with %q", tc.in, p, err, tc.err)
				}
				return
			}
			if err != nil || p.String() != tc.want {
				t.Fatalf("ParseNetProfile(%q) = %q, %v; want %q", tc.in, p.String(), err, tc.want)
			}
		})
	}
}

func TestParseNetProfileBound(t *testing.T) {
	entries := make([]string, MaxNetworkAllow+1)
	for i := range entries {
		entries[i] = ":" + string(rune('1'+i%9)) + "0"
	}
	if _, err := ParseNetProfile("allow=" + strings.Join(entries, ",")); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("err = %v; want the bound", err)
	}
	if _, err := ParseNetProfile("allow=" + strings.Join(entries[:MaxNetworkAllow], ",")); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
}

func TestNetDestAllows(t *testing.T) {
	for _, tc := range []struct {
		d    NetDest
		host string
		port int
		want bool
	}{
		{NetDest{Host: "a.io", Port: 443}, "A.io", 443, true},
		{NetDest{Host: "a.io", Port: 443}, "a.io", 80, false},
		{NetDest{Host: "a.io"}, "a.io", 80, true},
		{NetDest{Port: 8080}, "b.io", 8080, true},
		{NetDest{Port: 8080}, "b.io", 8081, false},
		{NetDest{Host: "::1", Port: 1}, "[::1]", 1, true},
	} {
		if got := tc.d.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("%v.Allows(%s, %d) = %v; want %v", tc.d, tc.host, tc.port, got, tc.want)
		}
	}
}

func TestCheckSandboxNetworkModel(t *testing.T) {
	sb := Sandbox{Profile: SandboxWorkspace, Mechanism: MechanismBubblewrap, Network: SandboxNetworkModel}
	b := BackendInfo{Name: "x", Capabilities: map[Capability]Support{CapSandbox: Supported}}
	if err := CheckSandbox(b, sb); err == nil || !strings.Contains(err.Error(), string(CapSandboxNetworkModel)) {
		t.Fatalf("model without the capability: %v", err)
	}
	b.Capabilities[CapSandboxNetworkModel] = Supported
	if err := CheckSandbox(b, sb); err != nil {
		t.Fatalf("model with the capability: %v", err)
	}
}

// FuzzParseNetProfile: whatever the input, the parser neither panics nor
// accepts what its own canonical form does not read back the same.
func FuzzParseNetProfile(f *testing.F) {
	for _, s := range []string{"", "host", "none", "model", "allow=a.io:443,:80,[::1]:1", "allow=", "allow=[::1", "allow=a:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseNetProfile(in)
		if err != nil {
			return
		}
		if len(p.Allow) > MaxNetworkAllow {
			t.Fatalf("%q: %d entries over the bound", in, len(p.Allow))
		}
		again, err := ParseNetProfile(p.String())
		if err != nil || again.String() != p.String() {
			t.Fatalf("%q: canonical %q reads back as %q, %v", in, p.String(), again.String(), err)
		}
		for _, d := range p.Allow {
			if d.Port < 0 || d.Port > 65535 || d.Host == "" && d.Port == 0 {
				t.Fatalf("%q: bad entry %+v", in, d)
			}
		}
	})
}

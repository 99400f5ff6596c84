package agentproc

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestLandlockConnectPorts: Landlock takes an allow-list of :PORT entries
// and nothing it cannot tell apart — none, model, a host, a portless
// entry — each refused with the way out.
func TestLandlockConnectPorts(t *testing.T) {
	for _, tc := range []struct {
		network string
		want    []int
		err     string
	}{
		{"", nil, ""},
		{"host", nil, ""},
		{"allow=:8080,:443", []int{8080, 443}, ""},
		{"none", nil, "cannot take the network away"},
		{"model", nil, "cannot tell hosts apart"},
		{"allow=127.0.0.1:8080", nil, "allow=127.0.0.1:8080 needs bubblewrap, or write it :PORT"},
		{"allow=localhost:8080", nil, "needs bubblewrap"},
		{"allow=:8080,api.example.com:443", nil, "allow=api.example.com:443 needs bubblewrap"},
		{"allow=api.example.com", nil, "needs bubblewrap"},
	} {
		got, err := landlockConnectPorts(tc.network)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v; want %q", tc.network, err, tc.err)
			}
			if LandlockExpressible(runtime.Sandbox{Network: tc.network}) == nil {
				t.Errorf("%q: LandlockExpressible accepted it", tc.network)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %v, %v; want %v", tc.network, got, err, tc.want)
		}
	}
}

// TestPlanLandlockConnectPorts: the plan carries the ports, and refuses
// one out of range.
func TestPlanLandlockConnectPorts(t *testing.T) {
	empty := func(string) ([]fs.DirEntry, error) { return nil, nil }
	plan, err := planLandlock(landlockSpec{Path: "/bin/true", ConnectPorts: []int{8080, 443}}, empty)
	if err != nil || !reflect.DeepEqual(plan.ConnectPorts, []int{8080, 443}) {
		t.Fatalf("plan %v, %v; want ports 8080 443", plan.ConnectPorts, err)
	}
	if _, err := planLandlock(landlockSpec{Path: "/bin/true", ConnectPorts: []int{70000}}, empty); err == nil {
		t.Fatal("port 70000 was planned")
	}
}

// TestStartLandlockConnectPorts: under Landlock with allow=:PORT a
// connect to that port succeeds and one to another port fails.
func TestStartLandlockConnectPorts(t *testing.T) {
	requireLandlock(t)
	if LandlockABI() < LandlockNetABI {
		t.Skipf("this kernel's Landlock ABI %d does not restrict TCP connect", LandlockABI())
	}
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "allowed-ok") }))
	defer allowed.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other-reached") }))
	defer other.Close()
	_, port, _ := net.SplitHostPort(allowed.Listener.Addr().String())
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismLandlock, Network: "allow=:" + port}
	p := startSh(t, Spec{Sandbox: sb, Dir: t.TempDir()}, `
		curl -s --max-time 20 --noproxy '*' http://127.0.0.1:`+port+`/; echo
		curl -s --max-time 20 --noproxy '*' http://127.0.0.1:`+otherPort+`/ || echo other-denied`)
	got := lineTexts(t, p)
	want := []string{"allowed-ok", "other-denied"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("under landlock: got %q, want %q (stderr %q)", got, want, p.StderrTail())
	}
}

package ocwarm

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStart: the warm-up finds the process's listening port and asks it
// for the directory's files, then for the tool registry of the configured
// model (none without one), with basic auth when a server password is
// set; without one, no Authorization header.
func TestStart(t *testing.T) {
	const dirQuery = "directory=%2Fw%2Fa+b"
	for _, tc := range []struct {
		name, wantUser, wantPass string
		env                      []string
		config                   string
		want                     []string
	}{
		{"no password", "", "", []string{"PATH=/bin"}, `{"model":"fake/fake-model"}`,
			[]string{"/file?path=.&" + dirQuery, "/config?" + dirQuery, "/experimental/tool?provider=fake&model=fake-model&" + dirQuery}},
		{"password", "opencode", "s3cret", []string{"OPENCODE_SERVER_PASSWORD=s3cret"}, `{"model":"p/m/x"}`,
			[]string{"/file?path=.&" + dirQuery, "/config?" + dirQuery, "/experimental/tool?provider=p&model=m%2Fx&" + dirQuery}},
		{"user and password", "me", "pw", []string{"OPENCODE_SERVER_USERNAME=me", "OPENCODE_SERVER_PASSWORD=pw"}, `{"model":"a/b"}`,
			[]string{"/file?path=.&" + dirQuery, "/config?" + dirQuery, "/experimental/tool?provider=a&model=b&" + dirQuery}},
		{"no model configured", "", "", nil, `{"share":"disabled"}`,
			[]string{"/file?path=.&" + dirQuery, "/config?" + dirQuery}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct{ uri, user, pass string }
			got := make(chan seen, 8)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, p, _ := r.BasicAuth()
				got <- seen{r.URL.RequestURI(), u, p}
				if r.URL.Path == "/config" {
					_, _ = w.Write([]byte(tc.config))
					return
				}
				_, _ = w.Write([]byte("[]"))
			})}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			stop := Start(os.Getpid(), "/w/a b", tc.env, nil)
			for i, want := range tc.want {
				select {
				case s := <-got:
					if s.uri != want {
						t.Errorf("request %d asked %s, want %s", i, s.uri, want)
					}
					if s.user != tc.wantUser || s.pass != tc.wantPass {
						t.Errorf("request %d: basic auth %q:%q, want %q:%q", i, s.user, s.pass, tc.wantUser, tc.wantPass)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("no warm-up request %d (%s)", i, want)
				}
			}
			stop() // the warm-up has ended: nothing more is asked
			select {
			case s := <-got:
				t.Errorf("asked %s after the last request", s.uri)
			default:
			}
		})
	}
}

// TestStopWithoutPort: a process that listens on nothing is looked at
// until stop, which returns at once.
func TestStopWithoutPort(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if p := ListeningPort(cmd.Process.Pid); p != 0 {
		t.Fatalf("ListeningPort of sleep = %d, want 0", p)
	}
	stop := Start(cmd.Process.Pid, "/w", nil, nil)
	time.Sleep(120 * time.Millisecond)
	begin := time.Now()
	stop()
	if d := time.Since(begin); d > time.Second {
		t.Errorf("stop took %v", d)
	}
}

// TestListeningPortOfChild: the port of a descendant is found (the npm
// wrapper of opencode may run the real binary as its child).
func TestListeningPortOfChild(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Its child sleep inherits the listener; sh then closes its own copy.
	cmd := exec.Command("sh", "-c", "sleep 30 & exec 3>&-; wait")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	want := ln.Addr().(*net.TCPAddr).Port
	deadline := time.Now().Add(5 * time.Second)
	for ListeningPort(cmd.Process.Pid) != want {
		if time.Now().After(deadline) {
			t.Fatalf("ListeningPort = %d, want %d (the child's)", ListeningPort(cmd.Process.Pid), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

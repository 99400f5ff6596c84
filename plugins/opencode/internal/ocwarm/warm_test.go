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
// for the directory's files, with basic auth when a server password is
// set; without one, no Authorization header.
func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name, wantUser, wantPass string
		env                      []string
	}{
		{"no password", "", "", []string{"PATH=/bin"}},
		{"password", "opencode", "s3cret", []string{"OPENCODE_SERVER_PASSWORD=s3cret"}},
		{"user and password", "me", "pw", []string{"OPENCODE_SERVER_USERNAME=me", "OPENCODE_SERVER_PASSWORD=pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct{ path, query, user, pass string }
			got := make(chan seen, 1)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, p, _ := r.BasicAuth()
				got <- seen{r.URL.Path, r.URL.RawQuery, u, p}
				_, _ = w.Write([]byte("[]"))
			})}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			stop := Start(os.Getpid(), "/w/a b", tc.env, nil)
			defer stop()
			select {
			case s := <-got:
				if s.path != "/file" || s.query != "path=.&directory=%2Fw%2Fa+b" {
					t.Errorf("asked %s?%s, want /file?path=.&directory=%%2Fw%%2Fa+b", s.path, s.query)
				}
				if s.user != tc.wantUser || s.pass != tc.wantPass {
					t.Errorf("basic auth %q:%q, want %q:%q", s.user, s.pass, tc.wantUser, tc.wantPass)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no warm-up request")
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

package permission_test

import (
	"errors"
	"testing"

	"github.com/avenor-go/avenor/host/permission"
)

func TestDerivePermBase(t *testing.T) {
	for _, tc := range []struct{ sentinel, want string }{
		{"/tmp/x.done", "/tmp/x.perm"},
		{"/tmp/x", "/tmp/x.perm"},
		{"/tmp/foo.done.done", "/tmp/foo.done.perm"},
		{"run.done", "run.perm"},
		{"/tmp/x.DONE", "/tmp/x.DONE.perm"},
		{"/tmp/x.done/", "/tmp/x.done/.perm"},
		{".done", ".perm"},
	} {
		t.Run(tc.sentinel, func(t *testing.T) {
			if got := permission.DerivePermBase(tc.sentinel); got != tc.want {
				t.Errorf("DerivePermBase(%q) = %q, want %q", tc.sentinel, got, tc.want)
			}
		})
	}
}

func TestFileBase(t *testing.T) {
	for _, tc := range []struct {
		name, handler, sentinel string
		auto                    bool
		want, wantErr           string
	}{
		{name: "nothing", want: ""},
		{name: "derived from the sentinel", sentinel: "/j/run.done", want: "/j/run.perm"},
		{name: "auto-approve turns the derived handler off", sentinel: "/j/run.done", auto: true, want: ""},
		{name: "explicit wins over the sentinel", handler: "file:/p/x", sentinel: "/j/run.done", want: "/p/x"},
		{name: "explicit stays with auto-approve", handler: "file:/p/x", auto: true, want: "/p/x"},
		{name: "relative path", handler: "file:rel/x", want: "rel/x"},
		{name: "other scheme", handler: "http://x", wantErr: "--permission-handler supports file:<path> only"},
		{name: "bare path", handler: "/p/x", wantErr: "--permission-handler supports file:<path> only"},
		{name: "upper-case scheme", handler: "FILE:/p/x", wantErr: "--permission-handler supports file:<path> only"},
		{name: "empty path", handler: "file:", wantErr: "--permission-handler file:<path> needs a path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := permission.FileBase(tc.handler, tc.sentinel, tc.auto)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("FileBase error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FileBase = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := permission.ParseHandler("tcp:x"); !errors.Is(err, permission.ErrHandlerScheme) {
		t.Errorf("ParseHandler(tcp:x) = %v, want ErrHandlerScheme", err)
	}
}

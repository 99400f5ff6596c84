package control

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"status"}`,
		`{"jsonrpc":"2.0","id":"a","method":"prompt","params":{"text":"x"}}`,
		`{"jsonrpc":"2.0","method":"cancel"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":[1]}`,
		`{"jsonrpc":"1.0","id":1,"method":"status"}`,
		`{"jsonrpc":"2.0","id":{},"method":"status"}`,
		`[1,2]`, `null`, `"x"`, `{`, ``, "\xff", `{"jsonrpc":"2.0","id":1e999,"method":"m"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, rerr := DecodeRequest(line)
		if rerr != nil {
			if rerr.Code != CodeParseError && rerr.Code != CodeInvalidRequest {
				t.Fatalf("bad input answered %d", rerr.Code)
			}
			out := EncodeError(req.ID, rerr)
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *Error          `json:"error"`
			}
			if err := json.Unmarshal(out, &resp); err != nil || resp.JSONRPC != "2.0" || resp.Error == nil || resp.ID == nil {
				t.Fatalf("error response %q is not a JSON-RPC error: %v", out, err)
			}
			return
		}
		if req.Method == "" {
			t.Fatal("accepted a request without a method")
		}
		if req.ID != nil && !validID(req.ID) {
			t.Fatalf("accepted id %q", req.ID)
		}
		if req.Params != nil && req.Params[0] != '{' && req.Params[0] != '[' {
			t.Fatalf("accepted params %q", req.Params)
		}
		if out, err := EncodeResult(req.ID, map[string]any{"ok": true}); err != nil || !json.Valid(out) {
			t.Fatalf("result line %q: %v", out, err)
		}
	})
}

// An endless line is discarded without holding more than the limit.
func TestReadLineBoundsMemory(t *testing.T) {
	const limit = 1 << 10
	huge := io.MultiReader(
		io.LimitReader(repeatReader('x'), 50<<20),
		strings.NewReader("\n"+`{"ok":1}`+"\nlast"),
	)
	r := bufio.NewReaderSize(huge, 4096)
	var buf []byte
	if _, err := readLine(r, &buf, limit); !errors.Is(err, errLineTooLong) {
		t.Fatalf("first line: %v", err)
	}
	if cap(buf) > limit+4096 {
		t.Fatalf("buffer grew to %d", cap(buf))
	}
	if line, err := readLine(r, &buf, limit); err != nil || string(line) != `{"ok":1}` {
		t.Fatalf("next line %q, %v", line, err)
	}
	if line, err := readLine(r, &buf, limit); err != nil || string(line) != "last" {
		t.Fatalf("unterminated last line %q, %v", line, err)
	}
	if _, err := readLine(r, &buf, limit); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestDecodeRequestLimit(t *testing.T) {
	line := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"`), bytes.Repeat([]byte("a"), MaxRequestLine)...)
	if _, e := DecodeRequest(append(line, `"}}`...)); e == nil || e.Code != CodeInvalidRequest {
		t.Fatalf("over-long request: %v", e)
	}
}

func TestEncodeEventMatchesNDJSONLine(t *testing.T) {
	var log bytes.Buffer
	ev := map[string]any{"event": "agent.message_chunk", "content": map[string]any{"text": "<a&b>"}, "seq": int64(7), "n": 1.5}
	enc := json.NewEncoder(&log)
	if err := enc.Encode(ev); err != nil {
		t.Fatal(err)
	}
	line, err := EncodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","method":"event","params":` + strings.TrimSuffix(log.String(), "\n") + "}\n"
	if string(line) != want {
		t.Errorf("got  %s\nwant %s", line, want)
	}
}

func TestTakeEnv(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := syscall.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Setenv(EnvIdentityToken, "tok")
	t.Setenv(EnvReadyFD, strconv.Itoa(fd))
	token, ready, err := TakeEnv()
	if err != nil || token != "tok" || ready == nil {
		t.Fatalf("TakeEnv = %q, %v, %v", token, ready != nil, err)
	}
	for _, k := range []string{EnvIdentityToken, EnvReadyFD} {
		if _, ok := os.LookupEnv(k); ok {
			t.Errorf("%s still set", k)
		}
	}
	ready()
	b, err := io.ReadAll(r) // EOF: ready closed the fd
	if err != nil || len(b) != 1 {
		t.Fatalf("read %q, %v; want one byte", b, err)
	}

	t.Setenv(EnvReadyFD, "three")
	if _, ready, err := TakeEnv(); err == nil || ready != nil {
		t.Errorf("a bad fd: ready %v, err %v", ready != nil, err)
	}
}

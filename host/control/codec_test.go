package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// An over-long line is refused without holding more than the limit, and
// its buffer is given back at once; lines within the limit, and a last one
// without its newline, are read.
func TestLineReaderBoundsALine(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name  string
		input io.Reader
		lines []string
		err   error
	}{
		{"lines", strings.NewReader(`{"a":1}` + "\n\n" + `{"b":2}` + "\nlast"), []string{`{"a":1}`, "", `{"b":2}`, "last"}, io.EOF},
		{"at the limit", strings.NewReader(strings.Repeat("x", limit) + "\n"), []string{strings.Repeat("x", limit)}, io.EOF},
		{"one byte over", strings.NewReader(strings.Repeat("x", limit+1) + "\n"), nil, errLineTooLong},
		{"endless", io.LimitReader(repeatReader('x'), 50<<20), nil, errLineTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := &lineBudget{max: 2 << 20}
			released := 0
			lr := newLineReader(tc.input, limit, budget, func(n int) { released += n })
			for _, want := range tc.lines {
				got, err := lr.read()
				if err != nil || string(got) != want {
					t.Fatalf("line %.40q, %v; want %.40q", got, err, want)
				}
			}
			if _, err := lr.read(); !errors.Is(err, tc.err) {
				t.Fatalf("end: %v, want %v", err, tc.err)
			}
			if cap(lr.buf) > keepLineBuffer || lr.held != 0 || budget.inUse() != 0 {
				t.Errorf("after the end: kept %d bytes, holds %d, budget in use %d", cap(lr.buf), lr.held, budget.inUse())
			}
			lr.close()
			if len(tc.lines) > 0 && len(tc.lines[0]) > keepLineBuffer && released == 0 {
				t.Error("a long line's buffer was given back without a word to the memory returner")
			}
		})
	}
}

// The budget is shared: a line that would take more than is left is
// refused (errBudget), holding nothing; what a handled long line took is
// given back at the next read, and all of it at close.
func TestLineReaderSharesTheBudget(t *testing.T) {
	const limit = 4 << 20
	budget := &lineBudget{max: 1 << 20}
	pr, pw := io.Pipe()
	defer pw.Close()
	a := newLineReader(pr, limit, budget, nil)
	done := make(chan error, 1)
	go func() {
		// 900 KiB, no newline yet: it holds budget while it waits.
		_, err := pw.Write([]byte(strings.Repeat("a", 900<<10)))
		done <- err
	}()
	got := make(chan error, 1)
	go func() {
		_, err := a.read()
		got <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for budget.inUse() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	held := budget.inUse()
	if held == 0 || held > 1<<20 {
		t.Fatalf("a 900 KiB partial line holds %d bytes of the budget", held)
	}
	b := newLineReader(strings.NewReader(strings.Repeat("b", 800<<10)+"\n"), limit, budget, nil)
	if _, err := b.read(); !errors.Is(err, errBudget) {
		t.Fatalf("a second long line with the budget taken: %v, want errBudget", err)
	}
	if b.held != 0 || budget.inUse() != held {
		t.Errorf("the refused line holds %d, budget in use %d (want %d)", b.held, budget.inUse(), held)
	}
	pw.Write([]byte("\n"))
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	go pw.Write([]byte("short\n")) // an io.Pipe write waits for its read
	if line, err := a.read(); err != nil || string(line) != "short" || budget.inUse() != 0 {
		t.Fatalf("next line %q, %v; budget in use %d, want 0", line, err, budget.inUse())
	}
	a.close()
	if budget.inUse() != 0 {
		t.Errorf("budget in use %d after close", budget.inUse())
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

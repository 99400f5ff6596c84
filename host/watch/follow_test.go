package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Error(err)
	}
}

func evLine(name, extra string) string {
	return fmt.Sprintf(`{"event":%q,"session_id":"ses_1"%s}`+"\n", name, extra)
}

// poller is an injected Sleep: at each poll it records what Run printed so
// far (it runs on Run's goroutine, so reading out is safe), hands the turn to
// a writer goroutine, and waits until that goroutine has written. Run never
// sleeps for real.
type poller struct {
	out       *bytes.Buffer
	snapshots []string
	polls     chan int
	written   chan struct{}
}

func newPoller(out *bytes.Buffer) *poller {
	return &poller{out: out, polls: make(chan int), written: make(chan struct{})}
}

func (p *poller) sleep(ctx context.Context, d time.Duration) error {
	if d != DefaultPollInterval {
		return fmt.Errorf("slept %v, want the default poll interval", d)
	}
	p.snapshots = append(p.snapshots, p.out.String())
	select {
	case p.polls <- len(p.snapshots):
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-p.written:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writer runs steps, one per poll, in its own goroutine; the test waits for
// it (wait) so it never outlives the test.
func (p *poller) writer(ctx context.Context, steps ...func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, step := range steps {
			select {
			case <-p.polls:
			case <-ctx.Done():
				return
			}
			step()
			select {
			case p.written <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { <-done }
}

func TestFollowStopsAtAFinalSessionEnd(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ev.ndjson")
	start := evLine("session.start", `,"backend":"echo"`)
	appendFile(t, log, start)
	call := evLine("tool.call", `,"kind":"read","title":"a.go","status":"pending"`)
	// refused: no retry and no next turn can follow, so this session.end
	// ends the run.
	end := evLine("session.end", `,"stop_reason":"refusal"`)
	after := evLine("agent.message_chunk", `,"content":{"text":"after the end"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	p := newPoller(&out)
	wait := p.writer(ctx,
		func() { appendFile(t, log, call) },
		func() { appendFile(t, log, end[:20]) }, // half a line: must wait for the rest
		func() { appendFile(t, log, end[20:]+after) },
	)
	res, err := Run(ctx, log, &out, Config{Follow: true, Sleep: p.sleep})
	cancel()
	wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{
		"EVENT session.start ses_1 backend=echo\n",
		"EVENT session.start ses_1 backend=echo\nEVENT tool.call ses_1 read:a.go [pending]\n",
		"EVENT session.start ses_1 backend=echo\nEVENT tool.call ses_1 read:a.go [pending]\n", // the half line printed nothing
	}
	if strings.Join(p.snapshots, "|") != strings.Join(want, "|") {
		t.Errorf("output at each poll:\n%q\nwant\n%q", p.snapshots, want)
	}
	if got, want := out.String(), want[2]+"EVENT session.end ses_1 stop_reason=refusal\n"; got != want {
		t.Errorf("output:\n%s\nwant\n%s", got, want)
	}
	if wantOff := int64(len(start + call + end)); res.Offset != wantOff || res.Ended != EndSessionEnd || res.Malformed != 0 || res.Events != 3 {
		t.Errorf("Result = %+v, want Offset %d (just past session.end), Ended session_end, 3 events, 0 malformed", res, wantOff)
	}
}

func TestFollowStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "cur")
	first := evLine("agent.status", `,"phase":"thinking"`)
	appendFile(t, log, first)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	p := newPoller(&out)
	wait := p.writer(ctx, func() { appendFile(t, log, `{"event":"partial"`); cancel() })
	res, err := Run(ctx, log, &out, Config{Follow: true, CursorPath: cursor, Sleep: p.sleep})
	wait()
	if err != nil {
		t.Fatalf("a cancelled follow is a clean stop, got %v", err)
	}
	if res.Ended != "" || res.Events != 1 {
		t.Errorf("Result = %+v", res)
	}
	assertCursor(t, cursor, int64(len(first)))
}

func TestFollowWaitsForTheLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "later.ndjson")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	p := newPoller(&out)
	wait := p.writer(ctx,
		func() {}, // still missing at the first poll
		func() { appendFile(t, log, evLine("session.end", `,"stop_reason":"timeout"`)) },
	)
	_, err := Run(ctx, log, &out, Config{Follow: true, Sleep: p.sleep})
	cancel()
	wait()
	if err != nil || out.String() != "EVENT session.end ses_1 stop_reason=timeout\n" {
		t.Errorf("Run = %v, output %q", err, out.String())
	}
}

func TestFollowSavesCursorEveryTenEvents(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "cur")
	line := evLine("agent.status", `,"phase":"working"`)
	appendFile(t, log, strings.Repeat(line, 25))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	var seen []string
	sleep := func(ctx context.Context, _ time.Duration) error {
		b, _ := os.ReadFile(cursor)
		seen = append(seen, string(b))
		cancel()
		return ctx.Err()
	}
	if _, err := Run(ctx, log, &out, Config{Follow: true, CursorPath: cursor, Sleep: sleep}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d\n", 20*len(line)); len(seen) != 1 || seen[0] != want {
		t.Errorf("cursor while following = %q, want %q (saved at the 20th event)", seen, want)
	}
	assertCursor(t, cursor, int64(25*len(line)))
}

func TestFollowFailsWhenTheLogShrinks(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ev.ndjson")
	appendFile(t, log, evLine("agent.status", `,"phase":"working"`)+`{"event":"par`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	p := newPoller(&out)
	wait := p.writer(ctx, func() {
		if err := os.Truncate(log, 5); err != nil {
			t.Error(err)
		}
	})
	_, err := Run(ctx, log, &out, Config{Follow: true, Sleep: p.sleep})
	cancel()
	wait()
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("Run = %v, want ErrTruncated", err)
	}
}

func assertCursor(t *testing.T, path string, want int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != fmt.Sprintf("%d\n", want) {
		t.Errorf("cursor file = %q, want %q", got, fmt.Sprintf("%d\n", want))
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("%s.tmp left behind: %v", path, err)
	}
}

func TestCursorResume(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "watch.cursor")
	first := evLine("session.start", `,"backend":"echo"`) + evLine("agent.status", `,"phase":"thinking"`)
	appendFile(t, log, first+`{"event":"agent.message_chunk","content":{"te`) // a line still being written
	cfg := Config{CursorPath: cursor}

	var out bytes.Buffer
	res, err := Run(context.Background(), log, &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := "EVENT session.start ses_1 backend=echo\nEVENT agent.status ses_1 thinking\n"; out.String() != want || res.Malformed != 0 {
		t.Errorf("first run printed %q (malformed %d), want %q", out.String(), res.Malformed, want)
	}
	assertCursor(t, cursor, int64(len(first)))

	appendFile(t, log, `xt":"hi"}}`+"\n"+evLine("session.end", `,"stop_reason":"end_turn"`))
	out.Reset()
	if _, err := Run(context.Background(), log, &out, cfg); err != nil {
		t.Fatal(err)
	}
	if want := "EVENT agent.message_chunk  hi\nEVENT session.end ses_1 stop_reason=end_turn\n"; out.String() != want {
		t.Errorf("second run printed %q, want only the new events %q", out.String(), want)
	}
	fi, _ := os.Stat(log)
	assertCursor(t, cursor, fi.Size())

	out.Reset()
	if _, err := Run(context.Background(), log, &out, cfg); err != nil || out.Len() != 0 {
		t.Errorf("third run: %v, printed %q", err, out.String())
	}
}

func TestCursorPastTheEndOfTheLog(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "cur")
	line := evLine("session.end", `,"stop_reason":"end_turn"`)
	appendFile(t, log, line)
	if err := os.WriteFile(cursor, []byte("9999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err := Run(context.Background(), log, &out, Config{CursorPath: cursor})
	want := fmt.Sprintf("log %s shorter than cursor (offset 9999 > size %d) (cursor %s)", log, len(line), cursor)
	if err == nil || err.Error() != want || !errors.Is(err, ErrCursorAhead) {
		t.Errorf("Run = %v\nwant %s", err, want)
	}
	assertCursor(t, cursor, 9999) // left alone
	if out.Len() != 0 {
		t.Errorf("printed %q", out.String())
	}
}

func TestBadCursor(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "cur")
	appendFile(t, log, "\n")
	for _, content := range []string{"", "abc\n", "-1\n", "12 34\n"} {
		if err := os.WriteFile(cursor, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), log, &bytes.Buffer{}, Config{CursorPath: cursor}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: Run = %v, want ErrBadCursor", content, err)
		}
	}
}

func TestMissingLogWithoutFollow(t *testing.T) {
	_, err := Run(context.Background(), filepath.Join(t.TempDir(), "nope"), &bytes.Buffer{}, Config{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run = %v, want not-exist", err)
	}
}

func TestOverLongLineIsSkippedWithANote(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ev.ndjson")
	big := evLine("agent.message_chunk", `,"content":{"text":"`+strings.Repeat("x", 200)+`"}`)
	small := evLine("agent.status", `,"phase":"done"`)
	appendFile(t, log, big+small)
	var out, stderr bytes.Buffer
	res, err := Run(context.Background(), log, &out, Config{MaxLineBytes: 100, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "EVENT agent.status ses_1 done\n" || res.TooLong != 1 {
		t.Errorf("output %q, Result %+v", out.String(), res)
	}
	wantNote := fmt.Sprintf("avenor watch: skipped the line at byte 0 of %s: %d bytes, over the 100-byte limit\n", log, len(big)-1)
	if stderr.String() != wantNote {
		t.Errorf("stderr = %q, want %q", stderr.String(), wantNote)
	}
}

// failingWriter fails every write: the cursor must not move past lines that
// were never written out.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestCursorDoesNotPassUnwrittenLines(t *testing.T) {
	dir := t.TempDir()
	log, cursor := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "cur")
	appendFile(t, log, evLine("agent.status", `,"phase":"done"`))
	if _, err := Run(context.Background(), log, failingWriter{}, Config{CursorPath: cursor}); err == nil {
		t.Fatal("want the write error")
	}
	assertCursor(t, cursor, 0)
}

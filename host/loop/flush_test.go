package loop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
)

// slowLog is an event log whose every write takes a while, so a batched
// writer has lines queued when the run ends.
type slowLog struct {
	mu   sync.Mutex
	data []byte
}

func (l *slowLog) Write(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data = append(l.data, p...)
	return len(p), nil
}

func (l *slowLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.data)
}

// Loop and team runs write through a batched writer, as every run does: the
// sentinel must still come after the last line, loop.end or team.end.
func TestBatchedWriterFlushedBeforeTheSentinel(t *testing.T) {
	for _, kind := range []string{"loop", "team"} {
		t.Run(kind, func(t *testing.T) {
			f := newRunFixture(t)
			log := &slowLog{}
			w := event.NewWriter(log, event.Stamp{RunID: f.opts.RunID}, event.Options{Batched: true})
			defer w.Close()
			f.phases.w, f.opts.Writer = w, w
			var res Result
			if kind == "loop" {
				res = RunLoop(context.Background(), f.loop(`{"max_iterations": 1, "loop": [{"name": "a", "prompt": "say a"}, {"name": "b", "prompt": "say b"}]}`), f.opts)
			} else {
				res = RunTeam(context.Background(), f.team(`{"team": [{"name": "a", "prompt": "say a"}, {"name": "b", "prompt": "say b"}]}`), f.opts)
			}
			if res.ExitCode != 0 {
				t.Fatalf("%+v", res)
			}
			if !strings.HasPrefix(f.sentinelText(), "DONE\n") {
				t.Fatalf("sentinel %q", f.sentinelText())
			}
			if got := log.String(); !strings.Contains(got, `"event":"avenor.`+kind+`.end"`) {
				t.Fatalf("the sentinel was written before the log held avenor.%s.end; the log has %d lines", kind, strings.Count(got, "\n"))
			}
		})
	}
}

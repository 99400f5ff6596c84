package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func eventsMsg(ids ...int) toproto.Message {
	var evs []toproto.EncodedEvent
	for _, id := range ids {
		evs = append(evs, toproto.EventJSON("agent.message_chunk", []byte(fmt.Sprintf(`{"n":%d,"text":"%0100d"}`, id, 0))))
	}
	return toproto.Events(evs)
}

func eventIDs(t *testing.T, msgs []toproto.Message) (ids []int, warnings []map[string]any, others int) {
	t.Helper()
	for _, m := range msgs {
		ev := m.Proto().GetEvents()
		if ev == nil {
			others++
			continue
		}
		for _, e := range ev.GetEvents() {
			var f map[string]any
			if err := json.Unmarshal(e.GetJson(), &f); err != nil {
				t.Fatal(err)
			}
			if e.GetType() == "avenor.warning" {
				warnings = append(warnings, f)
				continue
			}
			ids = append(ids, int(f["n"].(float64)))
		}
	}
	return ids, warnings, others
}

func TestLingerBufferKeepsAllWithinBound(t *testing.T) {
	b := newLingerBuffer(1 << 20)
	b.push(eventsMsg(1, 2))
	b.push(toproto.Ended("1", runtime.TurnResult{}, nil))
	b.push(eventsMsg(3))
	ids, warns, others := eventIDs(t, b.take())
	if fmt.Sprint(ids) != "[1 2 3]" || len(warns) != 0 || others != 1 {
		t.Fatalf("ids %v warnings %v others %d", ids, warns, others)
	}
	if n, size, dropped := b.stats(); n != 0 || size != 0 || dropped != 0 {
		t.Fatalf("take left %d msgs, %d bytes, %d dropped", n, size, dropped)
	}
}

// TestLingerBufferBound: past the bound the oldest events go, the newest
// stay in order, messages that are not events are never dropped, and the
// host is told how many were dropped.
func TestLingerBufferBound(t *testing.T) {
	one := eventsMsg(0)
	per := len(one.Proto().GetEvents().GetEvents()[0].GetJson()) + 10
	b := newLingerBuffer(per * 10)
	pr, err := toproto.Ask(runtime.PermissionRequest{ID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	b.push(eventsMsg(1, 2, 3))
	b.push(pr)
	for i := 4; i <= 40; i += 2 {
		b.push(eventsMsg(i, i+1))
	}
	_, size, dropped := b.stats()
	if size > per*10 {
		t.Fatalf("buffer holds %d bytes, over its bound %d", size, per*10)
	}
	if dropped == 0 {
		t.Fatal("nothing dropped past the bound")
	}
	msgs := b.take()
	ids, warns, others := eventIDs(t, msgs)
	if others != 1 {
		t.Fatalf("the permission request was dropped (%d non-event messages kept)", others)
	}
	if len(ids) == 0 || ids[len(ids)-1] != 41 {
		t.Fatalf("the newest event is not kept: %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("kept events are not the newest, contiguous: %v", ids)
		}
	}
	if len(ids)+dropped != 41 {
		t.Fatalf("kept %d + dropped %d != 41 pushed", len(ids), dropped)
	}
	if len(warns) != 1 || int(warns[0]["dropped"].(float64)) != dropped {
		t.Fatalf("warning %v does not say %d dropped", warns, dropped)
	}
	if w := msgs[0].Proto().GetEvents(); w == nil || w.GetEvents()[0].GetType() != "avenor.warning" {
		t.Fatal("the warning does not come first")
	}
}

func TestLingerFromEnv(t *testing.T) {
	for _, tc := range []struct {
		v    string
		set  bool
		want time.Duration
	}{
		{"", false, 0}, {"60s", true, 60 * time.Second}, {"0s", true, 0}, {"soon", true, 0}, {"-1s", true, 0},
	} {
		if tc.set {
			t.Setenv(LingerEnv, tc.v)
		} else {
			os.Unsetenv(LingerEnv)
		}
		if got := lingerFromEnv(); got != tc.want {
			t.Errorf("%s=%q: linger %v, want %v", LingerEnv, tc.v, got, tc.want)
		}
		if _, still := os.LookupEnv(LingerEnv); still {
			t.Errorf("%s=%q is still in the environment", LingerEnv, tc.v)
		}
	}
}

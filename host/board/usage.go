package board

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/avenor-go/avenor/client"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// UsageEntry is one runtime's line of /api/usage: the token counts of its
// session.ends summed over its turns (docs/events.md#sessionend usage) and, when the backend reports
// one, its cost in US dollars (session.end's cost_usd, e.g. the claude
// backends'). A runtime that reported neither has neither field.
type UsageEntry struct {
	Socket    string          `json:"socket"`
	RuntimeID string          `json:"runtime_id,omitempty"`
	Label     string          `json:"label,omitempty"`
	Backend   string          `json:"backend,omitempty"`
	Model     string          `json:"model,omitempty"`
	Usage     json.RawMessage `json:"usage,omitempty"`
	CostUSD   *float64        `json:"cost_usd,omitempty"`
}

// UsageTotal sums the entries; CostUSD is absent when no runtime reported
// a cost, and Reported counts the runtimes that reported usage.
type UsageTotal struct {
	InputTokens      int64    `json:"input_tokens"`
	OutputTokens     int64    `json:"output_tokens"`
	TotalTokens      int64    `json:"total_tokens"`
	CachedReadTokens int64    `json:"cached_read_tokens"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
	Reported         int      `json:"reported"`
}

// Usage is /api/usage's answer.
type Usage struct {
	Runtimes []UsageEntry `json:"runtimes"`
	Total    UsageTotal   `json:"total"`
}

func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	paths, _ := s.sockets()
	if p := r.URL.Query().Get("socket"); p != "" {
		path, err := s.checkSocket(p)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		paths = []string{path}
	}
	out := Usage{Runtimes: []UsageEntry{}}
	for _, p := range paths {
		out.Runtimes = append(out.Runtimes, s.socketUsage(r.Context(), p)...)
	}
	for _, e := range out.Runtimes {
		var u struct {
			In     int64 `json:"input_tokens"`
			Out    int64 `json:"output_tokens"`
			Total  int64 `json:"total_tokens"`
			Cached int64 `json:"cached_read_tokens"`
		}
		if len(e.Usage) > 0 && json.Unmarshal(e.Usage, &u) == nil {
			t := &out.Total
			t.InputTokens += u.In
			t.OutputTokens += u.Out
			t.TotalTokens += u.Total
			t.CachedReadTokens += u.Cached
			t.Reported++
		}
		if e.CostUSD != nil {
			sum := *e.CostUSD
			if out.Total.CostUSD != nil {
				sum += *out.Total.CostUSD
			}
			out.Total.CostUSD = &sum
		}
	}
	writeJSON(w, out)
}

// socketUsage reads every runtime's usage on one socket; an unreachable
// socket has none.
func (s *Server) socketUsage(ctx context.Context, path string) []UsageEntry {
	c, release, err := s.conn(ctx, path)
	if err != nil {
		return nil
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, 4*DialTimeout)
	defer cancel()
	list, err := c.List(ctx)
	var re *client.RPCError
	if errors.As(err, &re) && re.Code == client.CodeMethodNotFound {
		// A one-shot run: its only runtime, from its history.
		e := UsageEntry{Socket: path}
		if st, err := c.Status(ctx); err == nil {
			e.RuntimeID, e.Label = st.RunID, st.RunLabel
		}
		e.Usage, e.CostUSD = reportedUsage(ctx, c, "")
		return []UsageEntry{e}
	}
	if err != nil {
		return nil
	}
	out := make([]UsageEntry, 0, len(list))
	for _, rt := range list {
		e := UsageEntry{Socket: path, RuntimeID: rt.RuntimeID, Label: rt.Label, Backend: rt.Backend, Model: rt.Model}
		// Every turn's tokens, from the history; the entry's own usage is
		// its latest turn's only, the fallback when the history has none.
		e.Usage, e.CostUSD = reportedUsage(ctx, c, rt.RuntimeID)
		if e.Usage == nil && len(rt.Usage) > 0 && string(rt.Usage) != "null" {
			e.Usage = rt.Usage
		}
		out = append(out, e)
	}
	return out
}

// reportedUsage sums the usage and cost_usd of every session.end in a
// runtime's buffered history (nil when none reported any): a parked
// runtime's follow-up is a turn of its own, and its tokens add to those of
// the turns before it rather than replacing them in the total.
func reportedUsage(ctx context.Context, c *client.Client, runtimeID string) (json.RawMessage, *float64) {
	h, err := c.History(ctx, client.HistoryOptions{RuntimeID: runtimeID, Limit: historyLimit})
	if err != nil {
		return nil, nil
	}
	var (
		sum   usageCounts
		cost  *float64
		found bool
	)
	for _, ev := range h.Events {
		if ev.Name != sdk.EventSessionEnd {
			continue
		}
		var end struct {
			Usage   *usageCounts `json:"usage"`
			CostUSD *float64     `json:"cost_usd"`
		}
		if ev.Decode(&end) != nil {
			continue
		}
		if end.Usage != nil {
			sum.In += end.Usage.In
			sum.Out += end.Usage.Out
			sum.Total += end.Usage.Total
			sum.Cached += end.Usage.Cached
			found = true
		}
		if end.CostUSD != nil {
			v := *end.CostUSD
			if cost != nil {
				v += *cost
			}
			cost = &v
		}
	}
	if !found {
		return nil, cost
	}
	raw, _ := json.Marshal(sum)
	return raw, cost
}

// historyLimit is the most events a usage read asks for (the control
// protocol's largest history limit).
const historyLimit = 256

// usageCounts is session.end's usage, as summed.
type usageCounts struct {
	In     int64 `json:"input_tokens"`
	Out    int64 `json:"output_tokens"`
	Total  int64 `json:"total_tokens"`
	Cached int64 `json:"cached_read_tokens,omitempty"`
}

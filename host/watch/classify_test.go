package watch

import "testing"

// TestClassify covers every MILESTONE and FINDING rule of docs/watch.md and
// the ACTIVITY fallback next to each.
func TestClassify(t *testing.T) {
	cases := []struct {
		name, line string
		want       Class
	}{
		{"session end", `{"event":"session.end","stop_reason":"end_turn"}`, Milestone},
		{"permission request", `{"event":"permission.request","tool":"bash"}`, Milestone},
		{"loop start", `{"event":"avenor.loop.start","max_iterations":5}`, Milestone},
		{"loop end", `{"event":"avenor.loop.end","exit_reason":"marker"}`, Milestone},
		{"phase end", `{"event":"avenor.phase.end","phase":"test"}`, Milestone},
		{"phase start is activity", `{"event":"avenor.phase.start","phase":"test"}`, Activity},
		{"retry", `{"event":"avenor.retry","attempt":2}`, Milestone},
		{"error", `{"event":"avenor.error","source":"backend","message":"x"}`, Milestone},
		{"status waiting", `{"event":"agent.status","phase":"waiting"}`, Milestone},
		{"status done", `{"event":"agent.status","phase":"done"}`, Milestone},
		{"status thinking", `{"event":"agent.status","phase":"thinking"}`, Activity},
		{"status working", `{"event":"agent.status","phase":"working","label":"git commit"}`, Activity},
		{"tool kind commit", `{"event":"tool.call","kind":"commit","status":"pending"}`, Milestone},
		{"tool update kind commit", `{"event":"tool.call_update","kind":"commit","status":"completed"}`, Milestone},
		{"task completed", `{"event":"tool.call_update","kind":"task","status":"completed"}`, Milestone},
		{"task pending", `{"event":"tool.call","kind":"task","status":"pending"}`, Activity},
		{"title git commit", `{"event":"tool.call","kind":"bash","title":"git commit -m 'fix'"}`, Milestone},
		{"title Git Commit any case", `{"event":"tool.call","kind":"bash","title":"Run Git Commit"}`, Milestone},
		{"title git status", `{"event":"tool.call","kind":"bash","title":"git status"}`, Activity},
		{"permission response", `{"event":"permission.response","kind":"allow"}`, Activity},
		{"session start", `{"event":"session.start","backend":"echo"}`, Activity},
		{"unknown event", `{"event":"custom.thing","title":"git commit"}`, Activity},
		{"message [finding]", `{"event":"agent.message_chunk","content":{"text":"[Finding] off by one"}}`, Finding},
		{"thought reviewer flagged", `{"event":"agent.thought_chunk","content":{"text":"the reviewer flagged a race"}}`, Finding},
		{"user correction needed", `{"event":"user.message_chunk","content":{"text":"Correction needed: use ctx"}}`, Finding},
		{"failed test", `{"event":"agent.message_chunk","content":{"text":"1 failed test in ./host"}}`, Finding},
		{"delta text", `{"event":"agent.message_chunk","delta":"[finding] via delta"}`, Finding},
		{"confidence 59", `{"event":"agent.message_chunk","content":{"text":"confidence: 59%"}}`, Activity},
		{"confidence 60", `{"event":"agent.message_chunk","content":{"text":"confidence: 60%"}}`, Finding},
		{"confidence 100", `{"event":"agent.message_chunk","content":{"text":"Confidence: 100%"}}`, Finding},
		{"confidence 59.9", `{"event":"agent.message_chunk","content":{"text":"confidence: 59.9%"}}`, Activity},
		{"second confidence counts", `{"event":"agent.message_chunk","content":{"text":"confidence: 10% then confidence: 75%"}}`, Finding},
		{"confidence without percent", `{"event":"agent.message_chunk","content":{"text":"confidence: 90"}}`, Activity},
		{"plain message", `{"event":"agent.message_chunk","content":{"text":"all good"}}`, Activity},
		{"finding phrase outside a chunk", `{"event":"avenor.turn.start","note":"[finding]"}`, Activity},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Classify(mustParse(t, c.line)); got != c.want {
				t.Errorf("Classify = %s, want %s", got, c.want)
			}
		})
	}
}

package hosttest

import (
	"testing"
)

// TestDecisionPossiblySentWhenThePluginDies: the plugin receives an allow
// and dies before its turn ends; avenor cannot know whether the runtime
// acted on it, and says so — it never pretends the decision was applied or
// answers anything in its place.
func TestDecisionPossiblySentWhenThePluginDies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath := w.path("events.ndjson")
	res := w.run("--backend", "scripted", "--auto-approve", "--on-event", evPath,
		"--prompt", "permission tool=bash\ndie")
	if res.code != 1 {
		t.Fatalf("want exit 1; got %v", res)
	}
	evs := readEvents(t, evPath)
	var delivery []string
	for _, ev := range only(evs, "avenor.error") {
		if ev.str("source") == "permission" {
			delivery = append(delivery, ev.str("delivery")+":"+ev.str("request_id"))
		}
	}
	if len(delivery) != 1 || delivery[0] != "possibly_sent:perm_1" {
		t.Fatalf("permission delivery errors %v, want [possibly_sent:perm_1]", delivery)
	}
	if end := lastSessionEnd(t, evs); end.str("stop_reason") != "error" {
		t.Fatalf("session.end %v", end)
	}
}

package watch

import (
	"regexp"
	"strconv"
	"strings"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Class is what an event means to someone skimming a run (docs/watch.md).
// The string is the prefix of a classified plain line and the value of the
// "classify" field in JSON output.
type Class string

// The three classes.
const (
	Milestone Class = "MILESTONE"
	Finding   Class = "FINDING"
	Activity  Class = "ACTIVITY"
)

// findingPhrases mark a finding when a chunk's text contains one
// (case-insensitive).
var findingPhrases = []string{"[finding]", "reviewer flagged", "correction needed", "failed test"}

// confidenceRE finds "confidence: N%"; N ≥ [findingConfidence] is a finding.
var confidenceRE = regexp.MustCompile(`(?i)confidence:\s*([0-9]+(?:\.[0-9]+)?)\s*%`)

const findingConfidence = 60

// Classify sorts an event into a [Class] (docs/watch.md):
//
// MILESTONE: session.end, permission.request, avenor.loop.start and
// avenor.loop.end, avenor.phase.end, avenor.retry, avenor.error,
// agent.status with phase waiting or done, and tool events (tool.*) whose
// kind is commit, whose kind is task with status completed, or whose title
// contains "git commit" (any case).
//
// FINDING: agent.message_chunk, agent.thought_chunk and user.message_chunk
// whose text contains "[finding]", "reviewer flagged", "correction needed"
// or "failed test" (any case), or "confidence: N%" with N ≥ 60.
//
// ACTIVITY: everything else, unknown events included. A phrase split across
// two chunks is not seen: each line is classified on its own.
func Classify(ev Event) Class {
	name := ev.Name()
	switch name {
	case sdk.EventSessionEnd, sdk.EventPermissionRequest, sdk.EventLoopStart, sdk.EventLoopEnd, sdk.EventPhaseEnd, sdk.EventRetry, sdk.EventError:
		return Milestone
	case sdk.EventAgentStatus:
		if p := ev.str("phase"); p == "waiting" || p == "done" {
			return Milestone
		}
		return Activity
	case sdk.EventMessageChunk, sdk.EventThoughtChunk, sdk.EventUserMessageChunk:
		if isFinding(ev.chunkText()) {
			return Finding
		}
		return Activity
	}
	if strings.HasPrefix(string(name), "tool.") {
		kind := ev.str("kind")
		if kind == "commit" ||
			(kind == "task" && ev.str("status") == "completed") ||
			strings.Contains(strings.ToLower(ev.str("title")), "git commit") {
			return Milestone
		}
	}
	return Activity
}

func isFinding(text string) bool {
	lower := strings.ToLower(text)
	for _, p := range findingPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	for _, m := range confidenceRE.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.ParseFloat(m[1], 64); err == nil && n >= findingConfidence {
			return true
		}
	}
	return false
}

package watchdog

import "time"

// Verdict is what the tool rule says of one tool call.
type Verdict int

const (
	// Young: the tool call is not older than the tool timeout yet.
	Young Verdict = iota
	// Busy: its subtree gained CPU time or I/O (or a process came or
	// went) within the window.
	Busy
	// Hung: older than the tool timeout, and its subtree gained nothing
	// over the window.
	Hung
	// NoSubtree: older than the tool timeout with no process of its own;
	// the progress rule judges it.
	NoSubtree
)

func (v Verdict) String() string {
	switch v {
	case Young:
		return "young"
	case Busy:
		return "busy"
	case Hung:
		return "hung"
	case NoSubtree:
		return "no_subtree"
	}
	return "unknown"
}

// Judge is the tool rule: a tool call of age, whose subtree (when it has
// one) last gained CPU or I/O idle ago, against the tool timeout and the
// sampling window.
func Judge(age, idle, timeout, window time.Duration, hasSubtree bool) Verdict {
	switch {
	case timeout <= 0 || age < timeout:
		return Young
	case !hasSubtree:
		return NoSubtree
	case idle >= window:
		return Hung
	}
	return Busy
}

// Gained reports whether a subtree did anything between two samples: a
// process came or went, or one gained CPU time or I/O.
func Gained(prev, cur map[Key]Usage) bool {
	if len(prev) != len(cur) {
		return true
	}
	for k, u := range cur {
		p, ok := prev[k]
		if !ok || u.CPU > p.CPU || u.IO > p.IO {
			return true
		}
	}
	return false
}

package liveview

import (
	"context"
	"io"
	"strings"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// An inline question: a permission request that nothing else is set up to
// answer is asked at the terminal, acpx-style — "Allow once / Always allow
// / Reject [o/a/r]" — and the person's line is the answer.

// choice is one answer of an inline question: the key typed, the option it
// picks and the words shown for it.
type choice struct{ key, id, label string }

// kindKeys are the keys of the option kinds the backends offer (ACP's four
// and the plain allow/reject of the simpler runtimes).
var kindKeys = map[string]string{
	"allow_once": "o", "allow": "o", "allow_always": "a",
	"reject_once": "r", "reject": "r", "deny_once": "r", "deny": "r",
	"reject_always": "n", "deny_always": "n",
}

// kindWords name an option that has no name of its own.
var kindWords = map[string]string{
	"allow_once": "Allow once", "allow": "Allow", "allow_always": "Always allow",
	"reject_once": "Reject", "reject": "Reject", "deny_once": "Reject", "deny": "Reject",
	"reject_always": "Always reject", "deny_always": "Always reject",
}

// label is the words for o: its name, else its kind in words, else its id.
func (o option) label() string {
	if o.name != "" {
		return sanitizeLine(o.name, 40)
	}
	if w, ok := kindWords[strings.ToLower(o.kind)]; ok {
		return w
	}
	return sanitizeLine(o.id, 40)
}

// choicesOf gives each option a key: by its kind, else its position.
func choicesOf(opts []option) []choice {
	used := map[string]bool{}
	out := make([]choice, len(opts))
	for i, o := range opts {
		key := kindKeys[strings.ToLower(o.kind)]
		if key == "" || used[key] {
			key = ""
			for n := i + 1; key == "" || used[key]; n++ {
				key = itoa(n)
			}
		}
		used[key] = true
		out[i] = choice{key: key, id: o.id, label: o.label()}
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// question is the prompt line: the labels, then the keys.
func question(cs []choice) string {
	labels, keys := make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		labels[i], keys[i] = c.label, c.key
	}
	return "  " + strings.Join(labels, " / ") + " [" + strings.Join(keys, "/") + "] "
}

// pick is the choice a typed line names: its key, its option id or its
// words, case and surrounding space ignored.
func pick(cs []choice, line string) (choice, bool) {
	line = strings.TrimSpace(line)
	for _, c := range cs {
		if strings.EqualFold(line, c.key) || line == c.id || strings.EqualFold(line, c.label) {
			return c, line != ""
		}
	}
	return choice{}, false
}

// AnswerInline makes the view ask, at the terminal, the permission
// requests nothing else is set up to answer (resolver "none"); Ask reads
// the answers. Only a TTY view asks.
func (v *View) AnswerInline() {
	v.mu.Lock()
	v.inline = v.o.Mode == TTY
	v.mu.Unlock()
}

// Inline reports whether the view asks permission requests at the terminal.
func (v *View) Inline() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.inline
}

// askLine ends the rendering of a request that the view asks inline: the
// question, with the cursor left after it for the person's answer (the
// status line stays off until the answer).
func (v *View) askLine(opts []option) string {
	v.asking = true
	return question(choicesOf(opts))
}

// Ask waits for the person's answer to req, one line at a time from lines
// (the terminal's stdin): a key, an option id or an option's words. A line
// that names none asks again. It returns the option id chosen, io.EOF when
// lines closes, or ctx's error once the request is decided another way or
// its turn ends.
func (v *View) Ask(ctx context.Context, req sdk.PermissionRequest, lines <-chan string) (string, error) {
	opts := make([]option, len(req.Options))
	for i, o := range req.Options {
		opts[i] = option{id: o.ID, kind: o.Kind, name: o.Name}
	}
	cs := choicesOf(opts)
	for {
		select {
		case <-ctx.Done():
			v.stopAsking()
			return "", ctx.Err()
		case line, ok := <-lines:
			if !ok {
				v.stopAsking()
				return "", io.EOF
			}
			c, ok := pick(cs, line)
			v.mu.Lock()
			v.midLine = false // the person's Enter ended the question's line
			if ok {
				v.asking = false
			} else {
				keys := make([]string, len(cs))
				for i, c := range cs {
					keys[i] = c.key
				}
				v.writeRaw("  answer " + strings.Join(keys, ", ") + " (or an option id)\n" + question(cs))
				v.midLine = true
			}
			v.mu.Unlock()
			if ok {
				return c.id, nil
			}
		}
	}
}

func (v *View) stopAsking() {
	v.mu.Lock()
	v.asking = false
	v.mu.Unlock()
}

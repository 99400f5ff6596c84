package docgen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A generated section of a hand-written page sits between these two
// markers; everything else on the page is left alone.
const (
	beginFmt = "<!-- BEGIN GENERATED %s (make docs; do not edit) -->"
	endFmt   = "<!-- END GENERATED %s -->"
)

// Section is a generated part of a hand-written page.
type Section struct {
	Page string // file name under docs/, e.g. "backends.md"
	Name string // the marker's name
	Body string // the markdown between the markers
}

// Sections renders every generated section of the hand-written pages;
// root is the repository (the bounds are read from its source).
func Sections(root string, ps []Plugin) ([]Section, error) {
	bounds, err := BoundsTable(root)
	if err != nil {
		return nil, err
	}
	return []Section{
		{Page: "backends.md", Name: "capability-matrix", Body: CapabilityMatrix(ps)},
		{Page: "backends.md", Name: "launch-matrix", Body: LaunchMatrix(ps)},
		{Page: "configuration.md", Name: "config-keys", Body: ConfigKeys()},
		{Page: "configuration.md", Name: "bounds", Body: bounds},
		{Page: "events.md", Name: "host-events", Body: HostEvents()},
		{Page: "events.md", Name: "plugin-events", Body: PluginEvents(ps)},
	}, nil
}

// Splice replaces the body of section name in page. The markers must
// already be on the page, each on its own line.
func Splice(page, name, body string) (string, error) {
	begin, end := fmt.Sprintf(beginFmt, name), fmt.Sprintf(endFmt, name)
	i := strings.Index(page, begin+"\n")
	if i < 0 {
		return "", fmt.Errorf("marker %q missing", begin)
	}
	rest := page[i+len(begin)+1:]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", fmt.Errorf("marker %q missing after %q", end, begin)
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return page[:i+len(begin)+1] + body + rest[j:], nil
}

// StripGenerated removes every generated section's body, leaving the
// hand-written text (and the markers).
func StripGenerated(page string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(page, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "<!-- BEGIN GENERATED "):
			in = true
			b.WriteString(line)
		case strings.HasPrefix(t, "<!-- END GENERATED "):
			in = false
			b.WriteString(line)
		case !in:
			b.WriteString(line)
		}
	}
	return b.String()
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func codeList(xs []string) string {
	if len(xs) == 0 {
		return "—"
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return strings.Join(out, ", ")
}

var levelMark = map[sdk.Support]string{
	sdk.Supported: "yes", sdk.Experimental: "experimental", sdk.Unverified: "unverified", sdk.Unsupported: "—",
}

// CapabilityMatrix is the seed's matrix: one row per backend served by a
// built plugin, one column per capability, as each plugin's Describe says.
func CapabilityMatrix(ps []Plugin) string {
	var b strings.Builder
	b.WriteString("| backend | plugin |")
	for _, c := range sdk.CapabilityNames {
		b.WriteString(" " + c.String() + " |")
	}
	b.WriteString(" resume scope | thinking levels |\n|---|---|")
	for range sdk.CapabilityNames {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	type row struct {
		p Plugin
		b sdk.BackendInfo
	}
	var rows []row
	for _, p := range ps {
		for _, bi := range p.Backends {
			rows = append(rows, row{p, bi})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].b.Name < rows[j].b.Name })
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s %s |", r.b.Name, r.p.Name, r.p.Version)
		for _, c := range sdk.CapabilityNames {
			b.WriteString(" " + levelMark[r.b.Capability(c)] + " |")
		}
		scope := r.b.ResumeScope
		if scope == "" {
			scope = "—"
		}
		fmt.Fprintf(&b, " %s | %s |\n", scope, codeList(r.b.ThinkingLevels))
	}
	b.WriteString("\nDescriptions, as the plugins give them:\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- `%s` — %s\n", r.b.Name, cell(r.b.Description))
	}
	return b.String()
}

// LaunchMatrix is the permission modes and launch-context fields each
// backend honours natively, as each plugin's Describe says: one row per
// backend, one column per mode and field; a "—" is refused before anything
// starts.
func LaunchMatrix(ps []Plugin) string {
	var b strings.Builder
	b.WriteString("| backend |")
	for _, c := range sdk.LaunchCapabilityNames {
		b.WriteString(" " + c.String() + " |")
	}
	b.WriteString("\n|---|")
	for range sdk.LaunchCapabilityNames {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var infos []sdk.BackendInfo
	for _, p := range ps {
		infos = append(infos, p.Backends...)
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	for _, bi := range infos {
		fmt.Fprintf(&b, "| `%s` |", bi.Name)
		for _, c := range sdk.LaunchCapabilityNames {
			b.WriteString(" " + levelMark[bi.Capability(c)] + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ConfigKeys is the key table of host/config.Keys().
func ConfigKeys() string {
	var b strings.Builder
	b.WriteString("| key | type | default | environment | flag | meaning |\n|---|---|---|---|---|---|\n")
	for _, k := range config.Keys() {
		def, env, flag := k.Default, k.Env, k.Flag
		if def == "" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		if env == "" {
			env = "—"
		} else {
			env = "`" + env + "`"
		}
		if flag == "" {
			flag = "—"
		} else {
			flag = "`" + flag + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", k.Key, k.Type, def, env, flag, cell(k.Meaning))
	}
	return b.String()
}

// HostEvents is the table of event.HostEventTypes.
func HostEvents() string {
	var b strings.Builder
	b.WriteString("| event | fields (always) | fields (optional) | meaning |\n|---|---|---|---|\n")
	for _, t := range event.HostEventTypes {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", t.Name, Anchor(t.Name.String()), codeList(t.Fields), codeList(t.Optional), cell(t.Doc))
	}
	return b.String()
}

// PluginEvents is one row per backend of a built plugin: the event types
// its Describe declares. One row per backend keeps the drift test able to
// tolerate backends whose plugin is not built here.
func PluginEvents(ps []Plugin) string {
	var rows []string
	for _, p := range ps {
		for _, bi := range p.Backends {
			types := make([]string, len(bi.EventTypes))
			for i, t := range bi.EventTypes {
				types[i] = t.String()
			}
			sort.Strings(types)
			links := make([]string, len(types))
			for i, t := range types {
				links[i] = fmt.Sprintf("[`%s`](#%s)", t, Anchor(t))
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s |\n", bi.Name, strings.Join(links, ", ")))
		}
	}
	sort.Strings(rows)
	return "| backend | event types it declares |\n|---|---|\n" + strings.Join(rows, "")
}

// SectionBody returns the body of section name in page, and whether both
// markers were found.
func SectionBody(page, name string) (string, bool) {
	begin, end := fmt.Sprintf(beginFmt, name)+"\n", fmt.Sprintf(endFmt, name)
	i := strings.Index(page, begin)
	if i < 0 {
		return "", false
	}
	rest := page[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// PluginSections names the sections whose rows come from the built plugins.
var PluginSections = map[string]bool{"capability-matrix": true, "launch-matrix": true, "plugin-events": true}

// Anchor is the GitHub heading anchor of a heading that is just `name` in
// code: lower case, dots and other punctuation dropped.
func Anchor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

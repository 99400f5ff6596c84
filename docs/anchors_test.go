package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// headingAnchor is GitHub's anchor for a Markdown heading: lower case,
// punctuation other than '-' and '_' dropped, spaces turned into '-'.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	headingLine = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	explicitID  = regexp.MustCompile(`<a id="([^"]+)"`)
	docsRef     = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(#[A-Za-z0-9_-]+)?`)
	fenced      = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors returns the anchors a page defines: its headings' (outside code
// blocks) and its explicit <a id>s.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingLine.FindAllStringSubmatch(fenced.ReplaceAllString(md, ""), -1) {
		out[headingAnchor(m[1])] = true
	}
	for _, m := range explicitID.FindAllStringSubmatch(md, -1) {
		out[m[1]] = true
	}
	return out
}

// TestSourceReferencesResolve: every docs/<page>.md#<anchor> that Go source,
// a Makefile or a Markdown file of the repository cites names a page of docs/
// and an anchor that page defines, so a reference in a comment leads
// somewhere a reader can open.
func TestSourceReferencesResolve(t *testing.T) {
	pageAnchors := map[string]map[string]bool{}
	for name, md := range pages(t) {
		pageAnchors[name] = anchors(md)
	}
	var broken []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" || n == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" && d.Name() != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range docsRef.FindAllStringSubmatch(string(b), -1) {
			as, ok := pageAnchors[m[1]]
			switch {
			case !ok:
				broken = append(broken, path+": no page docs/"+m[1])
			case m[2] != "" && !as[m[2][1:]]:
				broken = append(broken, path+": docs/"+m[1]+" has no anchor "+m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(broken)
	for _, b := range broken {
		t.Error(b)
	}
}

func TestHeadingAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"Ownership":             "ownership",
		"Transport and framing": "transport-and-framing",
		"`session.end`":         "sessionend",
		"`answer_permission`":   "answer_permission",
		"`claude-channel` (plugin `claude`, experimental)": "claude-channel-plugin-claude-experimental",
		"avenor control tree_budget":                       "avenor-control-tree_budget",
	} {
		if got := headingAnchor(h); got != want {
			t.Errorf("headingAnchor(%q) = %q, want %q", h, got, want)
		}
	}
}

package docgen

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// CodeBlock is one fenced code block of a markdown page.
type CodeBlock struct {
	Lang string
	Line int // 1-based line of the opening fence
	Text string
}

// CodeBlocks returns the fenced (```) code blocks of a markdown page.
func CodeBlocks(md string) []CodeBlock {
	var out []CodeBlock
	var cur *CodeBlock
	var body []string
	for i, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			if cur != nil {
				body = append(body, line)
			}
			continue
		}
		if cur == nil {
			cur = &CodeBlock{Lang: strings.TrimSpace(strings.TrimPrefix(t, "```")), Line: i + 1}
			body = nil
			continue
		}
		cur.Text = strings.Join(body, "\n")
		out = append(out, *cur)
		cur = nil
	}
	return out
}

// IsJSONLines reports whether a block's language says one JSON value per line.
func IsJSONLines(lang string) bool { return lang == "ndjson" || lang == "jsonl" }

var eventTypeRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)

// EventTypesIn collects the "event" values of every object in v, however
// deeply nested, that look like event types (dotted lower-case names).
func EventTypesIn(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x["event"].(string); ok && eventTypeRE.MatchString(s) {
			into[s] = true
		}
		for _, e := range x {
			EventTypesIn(e, into)
		}
	case []any:
		for _, e := range x {
			EventTypesIn(e, into)
		}
	}
}

// TranscriptEventTypes walks root for files in testdata/ directories and
// returns every event type in a JSON object on any of their lines (a line
// may carry a prefix such as "< " before its JSON), with one file that
// holds it.
func TranscriptEventTypes(root string) (map[string]string, error) {
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".tools", "node_modules", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			i := strings.IndexByte(line, '{')
			if i < 0 {
				continue
			}
			var v any
			if json.Unmarshal([]byte(line[i:]), &v) != nil {
				continue
			}
			types := map[string]bool{}
			EventTypesIn(v, types)
			for t := range types {
				if _, ok := found[t]; !ok {
					found[t], _ = filepath.Rel(root, path)
				}
			}
		}
		return nil
	})
	return found, err
}

// RegisteredMethods parses the non-test Go files under dirs and returns the
// name of every control method registered with X.Handle("name",
// Method{…}) or X.Handle("name", control.Method{…}), with where.
func RegisteredMethods(dirs ...string) (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Handle" {
					return true
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				cl, ok := call.Args[1].(*ast.CompositeLit)
				if !ok || !isMethodType(cl.Type) {
					return true
				}
				name, _ := strconv.Unquote(lit.Value)
				out[name] = fset.Position(lit.Pos()).String()
				return true
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isMethodType(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "Method"
	case *ast.SelectorExpr:
		return t.Sel.Name == "Method"
	}
	return false
}

// StringLiterals returns the string literals of the non-test Go files in dir
// that match re, sorted.
func StringLiterals(dir string, re *regexp.Regexp) ([]string, error) {
	seen := map[string]bool{}
	err := eachSourceFile(dir, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && re.MatchString(s) {
					seen[s] = true
				}
			}
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Phase kinds: the kind field of avenor.phase.start and avenor.phase.end.
const (
	KindPre  = "pre"
	KindLoop = "loop"
	KindTeam = "team"
	KindPost = "post"
)

// Limits and defaults of the configs.
const (
	// DefaultMaxIterations is a loop's max_iterations when missing or 0 (docs/loop.md#loop-config).
	DefaultMaxIterations = 10
	// MaxIterationsLimit is the largest max_iterations accepted: a loop of
	// more iterations is a typo, not a plan, and would run for days.
	MaxIterationsLimit = 1000
	// InitialPhase names the pre phase that --prompt / --prompt-file insert
	// at index 0; no config may use the name.
	InitialPhase = "(initial)"
	// DefaultMaxNudges is on_incomplete.max_nudges when missing or 0.
	DefaultMaxNudges = 1
	// maxNudgesLimit bounds on_incomplete.max_nudges.
	maxNudgesLimit = 100
	// maxConfigBytes bounds a config or roster file.
	maxConfigBytes = 4 << 20
	// maxNesting bounds loop_file / team_file nesting.
	maxNesting = 8
)

// Phase is one phase object of a loop or team config (docs/loop.md#phase).
type Phase struct {
	// Name is required and unique across the config's sections.
	Name string `json:"name"`
	// Prompt is a text/template; after loading it also holds the text of
	// PromptFile.
	Prompt string `json:"prompt,omitempty"`
	// PromptFile is read at load, relative to the config file's directory.
	PromptFile string `json:"prompt_file,omitempty"`
	// LoopFile and TeamFile make the phase a nested loop or team run,
	// relative to the config file's directory.
	LoopFile string `json:"loop_file,omitempty"`
	TeamFile string `json:"team_file,omitempty"`
	// ResumeFromPrevious resumes the immediately preceding phase's session;
	// ignored on the first phase of a section, on a loop's pre phases and
	// on team members.
	ResumeFromPrevious bool `json:"resume_from_previous,omitempty"`
	// Conditional marks a team member a pre phase may skip.
	Conditional bool `json:"conditional,omitempty"`
	// Agent and Model override the run's for a team member; ignored on a
	// team's pre and post phases, refused in loop configs.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// RosterEntry selects the phase's backend, agent, model (and default
	// thinking) from the roster.
	RosterEntry string `json:"roster_entry,omitempty"`
	// Requires lists files the phase must leave behind.
	Requires *Requires `json:"requires,omitempty"`
	// OnIncomplete says how to nudge a phase whose requirements are unmet.
	OnIncomplete *OnIncomplete `json:"on_incomplete,omitempty"`
	// LaunchKeys are the phase's own permission mode and launch context,
	// over its roster entry's and the run's; refused on loop_file and
	// team_file phases (their phases set their own).
	LaunchKeys

	// NestedLoop and NestedTeam are the loaded LoopFile / TeamFile.
	NestedLoop *LoopConfig `json:"-"`
	NestedTeam *TeamConfig `json:"-"`
	// literal: the prompt is the user's own text ("(initial)"), not a template.
	literal bool
}

// Requires are a phase's completion requirements; paths are relative to the
// run's working directory.
type Requires struct {
	// Files must exist.
	Files []string `json:"files,omitempty"`
	// NonEmptyFiles must exist and hold at least one byte.
	NonEmptyFiles []string `json:"non_empty_files,omitempty"`
}

// OnIncomplete is the follow-up sent, in the same session, while a phase's
// requirements are unmet after a clean turn.
type OnIncomplete struct {
	// Nudge is the follow-up prompt; default a text naming the missing files.
	Nudge string `json:"nudge,omitempty"`
	// MaxNudges is how many follow-ups at most; 0 means DefaultMaxNudges.
	MaxNudges int `json:"max_nudges,omitempty"`
}

// LoopConfig is a loop config file (docs/loop.md#loop-config).
type LoopConfig struct {
	// MaxIterations bounds the loop phases' repetitions; 0/missing means
	// DefaultMaxIterations, above MaxIterationsLimit is refused.
	MaxIterations int     `json:"max_iterations"`
	Pre           []Phase `json:"pre"`
	Loop          []Phase `json:"loop"`
	Post          []Phase `json:"post"`
	// RosterFile is the config's roster, relative to the config file.
	RosterFile string `json:"roster_file,omitempty"`

	// Path is the config file's absolute path.
	Path string `json:"-"`
	// Roster is the effective roster: RosterFile's, else the one inherited
	// from LoadOptions; nil when none.
	Roster *Roster `json:"-"`
}

// TeamConfig is a team config file (docs/loop.md#teams).
type TeamConfig struct {
	Pre        []Phase `json:"pre"`
	Team       []Phase `json:"team"`
	Post       []Phase `json:"post"`
	RosterFile string  `json:"roster_file,omitempty"`

	Path   string  `json:"-"`
	Roster *Roster `json:"-"`
}

// PhaseCount is the number of phases in all sections.
func (c *LoopConfig) PhaseCount() int { return len(c.Pre) + len(c.Loop) + len(c.Post) }

// PhaseCount is the number of phases in all sections.
func (c *TeamConfig) PhaseCount() int { return len(c.Pre) + len(c.Team) + len(c.Post) }

// LoadOptions tune LoadLoop and LoadTeam. The zero value is usable.
type LoadOptions struct {
	// Roster applies to a config that declares no roster_file: the parent
	// config's for a nested one, the command's --roster-file at the top.
	Roster *Roster
	// Shallow leaves loop_file / team_file phases unloaded (verify walks
	// them itself, to report each file on its own line).
	Shallow bool

	stack []string // configs being loaded, outermost first: cycle detection
}

// LoadLoop reads, decodes strictly and validates a loop config, reads its
// prompt files, its roster and (unless Shallow) its nested configs. Errors
// start with "loop config: ", as in the contract's messages.
func LoadLoop(path string, o LoadOptions) (*LoopConfig, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("loop config: %w", err)
	}
	var c LoopConfig
	if err := decodeFile(abs, &c); err != nil {
		return nil, fmt.Errorf("loop config: %w", err)
	}
	c.Path = abs
	if c.MaxIterations == 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("loop config: %w", err)
	}
	l := loader{dir: filepath.Dir(abs), opts: o, path: abs, vars: LoopVars{}}
	if c.Roster, err = l.roster(c.RosterFile); err != nil {
		return nil, fmt.Errorf("loop config: %w", err)
	}
	for _, s := range [][]Phase{c.Pre, c.Loop, c.Post} {
		if err := l.resolve(s, c.Roster); err != nil {
			return nil, fmt.Errorf("loop config: %w", err)
		}
	}
	return &c, nil
}

// LoadTeam is LoadLoop for a team config; errors start with "team config: ".
func LoadTeam(path string, o LoadOptions) (*TeamConfig, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("team config: %w", err)
	}
	var c TeamConfig
	if err := decodeFile(abs, &c); err != nil {
		return nil, fmt.Errorf("team config: %w", err)
	}
	c.Path = abs
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("team config: %w", err)
	}
	l := loader{dir: filepath.Dir(abs), opts: o, path: abs, vars: TeamVars{}}
	if c.Roster, err = l.roster(c.RosterFile); err != nil {
		return nil, fmt.Errorf("team config: %w", err)
	}
	for _, s := range [][]Phase{c.Pre, c.Team, c.Post} {
		if err := l.resolve(s, c.Roster); err != nil {
			return nil, fmt.Errorf("team config: %w", err)
		}
	}
	return &c, nil
}

func (c *LoopConfig) validate() error {
	if len(c.Pre) == 0 && len(c.Loop) == 0 {
		return errors.New("at least one of pre or loop must be non-empty")
	}
	if len(c.Loop) > 0 && c.MaxIterations < 1 {
		return errors.New("max_iterations must be >= 1 when loop phases are present")
	}
	if c.MaxIterations > MaxIterationsLimit {
		return fmt.Errorf("max_iterations must be <= %d, got %d", MaxIterationsLimit, c.MaxIterations)
	}
	for _, s := range [][]Phase{c.Pre, c.Loop, c.Post} {
		for i := range s {
			p := &s[i]
			if p.Name == "" {
				return fmt.Errorf("phase[index %d]: name must not be empty", i)
			}
			if p.Conditional || p.Agent != "" || p.Model != "" {
				return fmt.Errorf("phase[name %s]: conditional, agent, and model are only supported on team members", p.Name)
			}
			if err := p.validate(); err != nil {
				return err
			}
		}
	}
	return uniqueNames(c.Pre, c.Loop, c.Post)
}

func (c *TeamConfig) validate() error {
	if len(c.Pre) == 0 && len(c.Team) == 0 {
		return errors.New("at least one of pre or team must be non-empty")
	}
	conditional := false
	for k, s := range [][]Phase{c.Pre, c.Team, c.Post} {
		for i := range s {
			p := &s[i]
			if p.Name == "" {
				return fmt.Errorf("phase[index %d]: name must not be empty", i)
			}
			if p.Conditional && k != 1 {
				return fmt.Errorf("phase[name %s]: conditional is only supported on team members", p.Name)
			}
			conditional = conditional || p.Conditional
			if err := p.validate(); err != nil {
				return err
			}
		}
	}
	if conditional && len(c.Pre) == 0 {
		return errors.New("conditional team members require at least one pre phase")
	}
	return uniqueNames(c.Pre, c.Team, c.Post)
}

// validate checks one phase's fields against each other.
func (p *Phase) validate() error {
	nested := p.LoopFile != "" || p.TeamFile != ""
	switch {
	case p.RosterEntry != "" && (p.Agent != "" || p.Model != ""):
		return fmt.Errorf("phase[name %s]: roster_entry is mutually exclusive with agent and model", p.Name)
	case p.RosterEntry != "" && nested:
		return fmt.Errorf("phase[name %s]: roster_entry is mutually exclusive with loop_file and team_file", p.Name)
	case p.Prompt != "" && p.PromptFile != "":
		return fmt.Errorf("phase[name %s]: prompt and prompt_file are mutually exclusive", p.Name)
	case p.Prompt != "" && nested:
		return fmt.Errorf("phase[name %s]: prompt is mutually exclusive with loop_file and team_file", p.Name)
	case p.PromptFile != "" && nested:
		return fmt.Errorf("phase[name %s]: prompt_file is mutually exclusive with loop_file and team_file", p.Name)
	case p.LoopFile != "" && p.TeamFile != "":
		return fmt.Errorf("phase[name %s]: loop_file and team_file are mutually exclusive", p.Name)
	case p.Prompt == "" && p.PromptFile == "" && !nested:
		return fmt.Errorf("phase[name %s]: prompt must not be empty (set prompt or prompt_file)", p.Name)
	case nested && (p.Requires != nil || p.OnIncomplete != nil):
		return fmt.Errorf("phase[name %s]: requires and on_incomplete apply to prompt phases, not loop_file or team_file", p.Name)
	case nested && !p.LaunchKeys.IsZero():
		return fmt.Errorf("phase[name %s]: permission_mode, append_system_prompt, allowed_tools and mcp_config apply to prompt phases, not loop_file or team_file: set them on the nested config's phases", p.Name)
	case p.OnIncomplete != nil && p.Requires.empty():
		return fmt.Errorf("phase[name %s]: on_incomplete needs requires (files or non_empty_files)", p.Name)
	case p.OnIncomplete != nil && (p.OnIncomplete.MaxNudges < 0 || p.OnIncomplete.MaxNudges > maxNudgesLimit):
		return fmt.Errorf("phase[name %s]: on_incomplete.max_nudges must be between 0 and %d, got %d", p.Name, maxNudgesLimit, p.OnIncomplete.MaxNudges)
	}
	if err := p.LaunchKeys.check(); err != nil {
		return fmt.Errorf("phase[name %s]: %w", p.Name, err)
	}
	if p.Requires != nil {
		for _, f := range append(append([]string{}, p.Requires.Files...), p.Requires.NonEmptyFiles...) {
			if strings.TrimSpace(f) == "" {
				return fmt.Errorf("phase[name %s]: requires: file paths must not be empty", p.Name)
			}
		}
	}
	return nil
}

func (r *Requires) empty() bool { return r == nil || len(r.Files)+len(r.NonEmptyFiles) == 0 }

// maxNudges is the phase's follow-up budget.
func (p *Phase) maxNudges() int {
	if p.Requires.empty() {
		return 0
	}
	if p.OnIncomplete == nil || p.OnIncomplete.MaxNudges == 0 {
		return DefaultMaxNudges
	}
	return p.OnIncomplete.MaxNudges
}

func uniqueNames(sections ...[]Phase) error {
	seen := map[string]bool{}
	for _, s := range sections {
		for _, p := range s {
			if p.Name == InitialPhase || seen[p.Name] {
				return fmt.Errorf("duplicate phase name: %q", p.Name)
			}
			seen[p.Name] = true
		}
	}
	return nil
}

// loader resolves what a config's phases refer to.
type loader struct {
	dir, path string
	opts      LoadOptions
	vars      any // the config's template variables, to check prompts
}

// roster is the config's effective roster.
func (l *loader) roster(declared string) (*Roster, error) {
	if declared == "" {
		return l.opts.Roster, nil
	}
	r, err := LoadRoster(l.rel(declared))
	if err != nil {
		return nil, fmt.Errorf("roster_file %q: %w", declared, err)
	}
	return r, nil
}

func (l *loader) rel(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(l.dir, p)
}

// resolve reads prompt files, checks templates and roster entries, and
// loads nested configs.
func (l *loader) resolve(phases []Phase, roster *Roster) error {
	for i := range phases {
		p := &phases[i]
		p.LaunchKeys = p.LaunchKeys.rel(l.dir)
		if p.PromptFile != "" {
			data, err := readBounded(l.rel(p.PromptFile))
			if err != nil {
				return fmt.Errorf("phase[name %s]: reading prompt_file %q: %w", p.Name, p.PromptFile, err)
			}
			if strings.TrimSpace(string(data)) == "" {
				return fmt.Errorf("phase[name %s]: prompt_file %q is empty", p.Name, p.PromptFile)
			}
			p.Prompt = string(data)
			// Refused at load, before any plugin starts (the rendered
			// prompt is checked again when the phase runs).
			if err := sdk.CheckPrompt(fmt.Sprintf("prompt_file %q", p.PromptFile), p.Prompt); err != nil {
				return fmt.Errorf("phase[name %s]: %w", p.Name, err)
			}
		} else if err := sdk.CheckPrompt("prompt", p.Prompt); err != nil {
			return fmt.Errorf("phase[name %s]: %w", p.Name, err)
		}
		if p.Prompt != "" {
			if _, err := Render(p.Name, p.Prompt, l.vars); err != nil {
				return fmt.Errorf("phase[name %s]: %w", p.Name, err)
			}
		}
		if p.RosterEntry != "" {
			if roster == nil {
				return fmt.Errorf("phase[name %s]: roster_entry %q needs a roster (roster_file in the config, or --roster-file)", p.Name, p.RosterEntry)
			}
			e, err := roster.Lookup(p.RosterEntry)
			if err != nil {
				return fmt.Errorf("phase[name %s]: %w", p.Name, err)
			}
			if err := directOnly(e); err != nil {
				return fmt.Errorf("phase %q: roster entry %q %w", p.Name, p.RosterEntry, err)
			}
		}
		if l.opts.Shallow || (p.LoopFile == "" && p.TeamFile == "") {
			continue
		}
		if err := l.nested(p, roster); err != nil {
			return err
		}
	}
	return nil
}

// nested loads a loop_file / team_file phase's config, refusing cycles.
func (l *loader) nested(p *Phase, roster *Roster) error {
	field, file := "loop_file", p.LoopFile
	if p.TeamFile != "" {
		field, file = "team_file", p.TeamFile
	}
	target := l.rel(file)
	stack := append(append([]string{}, l.opts.stack...), l.path)
	for _, s := range stack {
		if s == target {
			chain := make([]string, 0, len(stack)+1)
			for _, c := range append(stack, target) {
				chain = append(chain, filepath.Base(c))
			}
			return fmt.Errorf("phase[name %s]: %s %q: the config includes itself (%s)", p.Name, field, file, strings.Join(chain, " -> "))
		}
	}
	if len(stack) > maxNesting {
		return fmt.Errorf("phase[name %s]: %s %q: configs nest deeper than %d levels", p.Name, field, file, maxNesting)
	}
	o := LoadOptions{Roster: roster, stack: stack}
	var err error
	if p.LoopFile != "" {
		p.NestedLoop, err = LoadLoop(target, o)
	} else {
		p.NestedTeam, err = LoadTeam(target, o)
	}
	if err != nil {
		return fmt.Errorf("phase[name %s]: %s %q: %w", p.Name, field, file, err)
	}
	return nil
}

// decodeFile decodes a JSON object strictly: unknown fields, trailing data
// and a top level that is not an object are errors, worded without Go
// type names.
func decodeFile(path string, v any) error {
	data, err := readBounded(path)
	if err != nil {
		return err
	}
	return decodeStrict(data, v)
}

func readBounded(path string) ([]byte, error) {
	f, err := regularfile.Open(path) // a FIFO would block the load forever
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxConfigBytes)
	}
	return data, nil
}

// ErrNotObject: the file's top-level JSON value is not an object.
var ErrNotObject = errors.New("the top-level value must be a JSON object")

func decodeStrict(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if len(trimmed) > 0 && !json.Valid(trimmed) {
			var probe any
			return jsonError(data, json.Unmarshal(trimmed, &probe))
		}
		return ErrNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the top-level JSON object")
	}
	return nil
}

// jsonError words a decoding error for a user: where, and what was wrong.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return fmt.Errorf("field %s: got a JSON %s, want %s", field, typ.Value, kindName(typ.Type.Kind().String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: unexpected end of file")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func kindName(k string) string {
	switch k {
	case "int", "int64", "int32":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return k
}

func position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

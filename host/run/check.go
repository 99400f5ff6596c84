package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ReadPromptFile reads the prompt file at path for the param or flag named
// param ("--prompt-file", "prompt_file"), as run and spawn do: a prompt the
// wire cannot carry (not UTF-8, over sdk.MaxPromptBytes) is a
// *sdk.PromptError naming param and path; any other failure (missing, not
// a regular file) says "<param>: " and why.
func ReadPromptFile(param, path string) (string, error) {
	prompt, err := regularfile.ReadPrompt(path, param+" "+path)
	if err != nil {
		var perr *sdk.PromptError
		if errors.As(err, &perr) {
			return "", err
		}
		return "", fmt.Errorf("%s: %w", param, err)
	}
	return prompt, nil
}

// DirError is a working directory the wire cannot carry (sdk.CheckDir): the
// spawn param itself is invalid (-32602), not the spawn's doing.
type DirError struct {
	Param string
	Err   error
}

func (e *DirError) Error() string { return e.Param + " " + e.Err.Error() }
func (e *DirError) Unwrap() error { return e.Err }

// WorkDir is the agent's absolute working directory for the setting dir of
// the param or flag named param ("--dir", "dir"): it must be a directory,
// and one the wire can carry (a *DirError when not).
func WorkDir(param, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", param, dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s %q is not a directory", param, dir)
	}
	if err := sdk.CheckDir(abs); err != nil {
		return "", &DirError{Param: param, Err: err}
	}
	return abs, nil
}

// Sources are what a run or spawn runs: its prompt, prompt file, loop or
// team file, and the session it resumes.
type Sources struct{ Prompt, PromptFile, LoopFile, TeamFile, Resume string }

// Check refuses the combinations run and spawn both refuse
// (docs/run.md#validation), name spelling each param as the front door
// does (FlagName, or a spawn's params).
func (s Sources) Check(name func(param string) string) error {
	pair := func(a, b string) error { return fmt.Errorf("%s and %s are mutually exclusive", name(a), name(b)) }
	switch {
	case s.Prompt != "" && s.PromptFile != "":
		return pair("prompt", "prompt_file")
	case s.LoopFile != "" && s.TeamFile != "":
		return pair("loop_file", "team_file")
	case s.LoopFile != "" && s.Resume != "":
		return pair("loop_file", "resume")
	case s.TeamFile != "" && s.Resume != "":
		return pair("team_file", "resume")
	case s.Prompt == "" && s.PromptFile == "" && s.LoopFile == "" && s.TeamFile == "":
		return fmt.Errorf("%s, %s, %s, or %s is required", name("prompt"), name("prompt_file"), name("loop_file"), name("team_file"))
	}
	return nil
}

// CheckRoster checks the roster params (docs/loop.md#rosters), name
// spelling them as Sources.Check does: roster_file with roster_entry is
// direct mode (direct) and excludes backend, agent and model (given says
// which the run or spawn gave); with loop_file or team_file, roster_file
// alone is the phases' fallback roster.
func CheckRoster(file, entry string, phased bool, given func(key string) bool, name func(string) string) (direct bool, err error) {
	switch {
	case entry == "" && file == "":
		return false, nil
	case entry != "" && file == "":
		return false, fmt.Errorf("%s requires %s", name("roster_entry"), name("roster_file"))
	case entry != "" && phased:
		return false, fmt.Errorf("%s cannot be used with %s or %s (set roster_entry on the phases)", name("roster_entry"), name("loop_file"), name("team_file"))
	case entry == "" && !phased:
		return false, fmt.Errorf("%s requires %s (or a %s or %s whose phases set roster_entry)", name("roster_file"), name("roster_entry"), name("loop_file"), name("team_file"))
	case phased:
		return false, nil
	}
	for _, key := range []string{"backend", "agent", "model"} {
		if given(key) {
			return false, fmt.Errorf("%s and %s are mutually exclusive", name("roster_entry"), name(key))
		}
	}
	return true, nil
}

// FlagName is a param's flag: prompt_file is --prompt-file.
func FlagName(param string) string { return "--" + strings.ReplaceAll(param, "_", "-") }

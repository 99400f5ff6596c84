package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

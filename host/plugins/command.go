package plugins

import (
	"context"
	"fmt"
	"io"
)

// The `avenor plugin` commands after their command lines are parsed
// (docs/plugins.md): each does its work and tells the person what it did
// on out, and what to watch out for on warn.

// WriteText tells the person where inst went, and warns on warn when it
// replaced a different binary of the same version.
func (inst Installed) WriteText(out, warn io.Writer) {
	fmt.Fprintf(out, "installed %s %s at %s (%s)\n", inst.Family, inst.Version, inst.Path, inst.SHA256)
	if inst.Replaced != "" {
		fmt.Fprintf(warn, "avenor: warning: this replaced a different %s %s (%s); projects that pinned it will refuse to run the new binary until they pin it again with `avenor plugin use %s@%s`\n",
			inst.Family, inst.Version, inst.Replaced, inst.Family, inst.Version)
	}
}

// UseRequest is one `avenor plugin use`: a development build by Path
// (Family, when given, must be what it serves), else Family at Version
// ("" for the highest) from InstallDir.
type UseRequest struct {
	// Dir is where the project is looked for; a directory in no project
	// becomes one.
	Dir, InstallDir       string
	Path, Family, Version string
}

// Use pins what req names in its project's lock and writes the lock.
func Use(ctx context.Context, req UseRequest, out, warn io.Writer) error {
	lock, created, err := ProjectLock(req.Dir, true)
	if err != nil {
		return err
	}
	var pin Pin
	if req.Path != "" {
		pin, err = PinBinary(ctx, lock, req.Path, req.Family)
	} else {
		pin, err = PinInstalled(lock, req.InstallDir, req.Family, req.Version)
	}
	if err != nil {
		return fmt.Errorf("plugin use: %w", err)
	}
	if err := lock.Write(); err != nil {
		return fmt.Errorf("plugin use: writing %s: %w", lock.File(), err)
	}
	if created {
		fmt.Fprintf(out, "created project %s\n", lock.Project)
	}
	fmt.Fprintf(out, "pinned %s %s (%s) in %s\n", pin.Family, pin.Version, pin.Hash, lock.File())
	if pin.Path != "" {
		fmt.Fprintf(warn, "avenor: warning: pinned a development build of %s by path (%s): it is checked by hash, so re-run `avenor plugin use --path` after every rebuild; for a lock you commit, install a release (`avenor plugin install`) and pin its version\n",
			pin.Family, pin.Path)
	}
	return nil
}

// Unpin removes family's pin from the lock of dir's project; a family
// nothing pins there is said on out, not an error.
func Unpin(dir, family string, out io.Writer) error {
	lock, _, err := ProjectLock(dir, false)
	if err != nil {
		return err
	}
	if lock == nil || !lock.Remove(family) {
		where := "this directory is in no avenor project"
		if lock != nil {
			where = "nothing pins it in " + lock.File()
		}
		fmt.Fprintf(out, "%s was not pinned: %s\n", family, where)
		return nil
	}
	if err := lock.Write(); err != nil {
		return fmt.Errorf("plugin unpin: writing %s: %w", lock.File(), err)
	}
	fmt.Fprintf(out, "unpinned %s in %s\n", family, lock.File())
	return nil
}

// ListDir is the List of dir's project (ListProject), of the plugins found
// with getenv and installDir.
func ListDir(getenv func(string) string, installDir, dir string) (List, error) {
	lock, _, err := ProjectLock(dir, false)
	if err != nil {
		return List{}, err
	}
	return ListProject(NewFinder(getenv, installDir, nil), lock), nil
}

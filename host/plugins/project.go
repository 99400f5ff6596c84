package plugins

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/avenor-go/avenor/host/config"
)

// ProjectLock is the lock of the project holding dir: the nearest .avenor/
// upwards. With create, a directory in no project becomes one (created
// reports it; .avenor/ appears when the lock is written); without, nil
// means no project.
func ProjectLock(dir string, create bool) (lock *Lock, created bool, err error) {
	project, ok := config.FindProject(dir)
	if !ok {
		if !create {
			return nil, false, nil
		}
		project, created = dir, true
	}
	lock, err = ReadLock(project)
	return lock, created, err
}

// List is what `avenor plugin list` shows (--json prints it as it is).
type List struct {
	Project  string         `json:"project"`   // "" outside a project
	LockFile string         `json:"lock_file"` // "" when the project has none
	Plugins  []FamilyStatus `json:"plugins"`
}

// ListProject is the List of the project whose lock is lock (nil: none),
// of the plugins finder finds with that lock.
func ListProject(finder Finder, lock *Lock) List {
	finder.Lock = lock
	out := List{Plugins: finder.Status()}
	if lock != nil {
		out.Project = lock.Project
		if _, err := os.Stat(lock.File()); err == nil {
			out.LockFile = lock.File()
		}
	}
	return out
}

// WriteText prints l for a person: where the pins are, one line a binary
// (the one a run uses marked with why), then what is broken and its fix.
func (l List) WriteText(w io.Writer) {
	switch {
	case l.Project == "":
		fmt.Fprintln(w, "no project here (no .avenor/ in this directory or above): nothing is pinned")
	case l.LockFile == "":
		fmt.Fprintf(w, "project %s: nothing pinned\n", l.Project)
	default:
		fmt.Fprintf(w, "project %s: pins in %s\n", l.Project, l.LockFile)
	}
	if len(l.Plugins) == 0 {
		fmt.Fprintln(w, "no plugins installed or found; install one with `avenor plugin install <binary>`")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tVERSION\tUSED\tPATH")
	var problems []string
	for _, f := range l.Plugins {
		usedShown := false
		for _, v := range f.Installed {
			used := ""
			if f.Used != nil && f.Used.Path == v.Path {
				used, usedShown = "* "+f.Used.Why, true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Family, v.Version, used, v.Path)
		}
		if f.Used != nil && !usedShown {
			version := f.Used.Version
			if version == "" {
				version = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Family, version, "* "+f.Used.Why, f.Used.Path)
		}
		if f.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Family, "-", "! cannot run", "")
			problems = append(problems, f.Family+": "+f.Error)
		}
	}
	tw.Flush()
	for _, p := range problems {
		fmt.Fprintf(w, "\n%s\n", p)
	}
}

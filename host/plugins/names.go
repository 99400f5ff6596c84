package plugins

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// NamesTimeout bounds BackendNames: shell completion waits on it, so a
// plugin that does not describe itself in time is left out rather than
// holding up the user's <TAB>.
const NamesTimeout = 3 * time.Second

// BackendNames returns the backend names served by every plugin the finder
// finds, sorted, for shell completion. The plugins are asked at once (each
// launch and Describe costs a process start), a pinned one only after its
// hash is checked, exactly as a run would launch it; a plugin that fails to
// start or to answer within ctx and NamesTimeout is left out.
func (f Finder) BackendNames(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, NamesTimeout)
	defer cancel()
	all := f.All()
	names := make([][]string, len(all))
	var wg sync.WaitGroup
	for i, found := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names[i] = describeNames(ctx, found)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	var out []string
	for _, ns := range names {
		for _, n := range ns {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

func describeNames(ctx context.Context, found Found) []string {
	cfg := plugin.LaunchConfig{Path: found.Path, Logger: hclog.NewNullLogger(), Env: executableEnv(), StartTimeout: NamesTimeout}
	if found.Pin != nil {
		sc, err := secureConfig(found.Pin.Hash)
		if err != nil {
			return nil
		}
		cfg.SecureConfig = sc
	}
	c, err := plugin.Launch(ctx, cfg)
	if err != nil {
		return nil
	}
	defer c.Kill()
	return c.SortedBackendNames()
}

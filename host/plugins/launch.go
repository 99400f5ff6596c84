package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Launched is a running plugin and the backend asked of it.
type Launched struct {
	Client  *plugin.Client
	Backend runtime.Backend
	Found   Found
}

// Launch starts the plugin binary in found and checks that it serves
// backend. A pinned binary (found.Pin set) is copied into a private
// directory, the copy's bytes are checked against the pin, and the copy is
// what runs (sdk/plugin LaunchConfig.SecureConfig): a binary swapped in
// after the check never runs. A mismatch is a *PinError and nothing runs.
func Launch(ctx context.Context, found Found, backend string, logger hclog.Logger) (*Launched, error) {
	return LaunchWith(ctx, found, backend, LaunchOptions{Logger: logger})
}

// LaunchOptions are what one launch gives the plugin process besides its
// binary.
type LaunchOptions struct {
	// Logger receives the plugin's logs; nil: none.
	Logger hclog.Logger
	// Env ("KEY=value") is added to the plugin process's environment, over
	// what it inherits, and never to this process's: avenor stable's
	// linger window (plugin.LingerEnv) reaches its plugins this way only.
	Env []string
}

// LaunchWith is Launch with the plugin process's logger and extra
// environment.
func LaunchWith(ctx context.Context, found Found, backend string, o LaunchOptions) (*Launched, error) {
	env := append(executableEnv(), o.Env...)
	cfg := plugin.LaunchConfig{Path: found.Path, Logger: o.Logger, Env: env}
	if found.Pin != nil {
		sc, err := secureConfig(found.Pin.Hash)
		if err != nil {
			return nil, err
		}
		cfg.SecureConfig = sc
	}
	c, err := plugin.Launch(ctx, cfg)
	if err != nil {
		return nil, launchError(found, err)
	}
	b, ok := c.Backend(backend)
	if !ok {
		c.Kill()
		return nil, fmt.Errorf("plugin %s (%s) does not serve backend %q; it serves: %v", c.Info().Name, found.Path, backend, c.SortedBackendNames())
	}
	return &Launched{Client: c, Backend: b, Found: found}, nil
}

// Reattach connects to a plugin process an earlier avenor launched and that
// outlived it (it lingers, sdk/plugin), and checks that it serves backend.
func Reattach(ctx context.Context, info plugin.ReattachInfo, backend string, logger hclog.Logger) (*Launched, error) {
	c, err := plugin.Reattach(ctx, info, fmt.Sprintf("avenor-plugin (pid %d)", info.PID), logger)
	if err != nil {
		return nil, err
	}
	b, ok := c.Backend(backend)
	if !ok {
		c.Kill()
		return nil, fmt.Errorf("plugin pid %d does not serve backend %q", info.PID, backend)
	}
	return &Launched{Client: c, Backend: b}, nil
}

// ExecutableEnv names, in every plugin process, the avenor executable that
// launched it: plugins that hand a command line to their runtime (the
// claude-channel sidecar in .mcp.json) point it at avenor.
const ExecutableEnv = "AVENOR_EXECUTABLE"

func executableEnv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{ExecutableEnv + "=" + exe}
}

// secureConfig is a fresh SecureConfig for hash: its hash.Hash is used up
// by one check, so every launch gets its own.
func secureConfig(hash string) (*goplugin.SecureConfig, error) {
	sum, err := hex.DecodeString(strings.TrimPrefix(hash, "sha256:"))
	if err != nil || !validHash(hash) {
		return nil, fmt.Errorf("pinned hash %q is not \"sha256:\" and 64 hex digits", hash)
	}
	return &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()}, nil
}

// launchError turns what sdk/plugin reports into what the user must do.
func launchError(found Found, err error) error {
	if errors.Is(err, plugin.ErrChecksumMismatch) && found.Pin != nil {
		got, herr := FileHash(found.Path)
		if herr != nil {
			got = "unreadable (" + herr.Error() + ")"
		}
		return &PinError{Pin: *found.Pin, LockFile: found.LockFile, Binary: found.Path, Got: got, Err: ErrPinMismatch}
	}
	if ie := incompatible(found, err); ie != nil {
		return ie
	}
	return err
}

// ExplainLaunch turns a failure to launch the binary at path into what the
// user must do: a protocol refusal becomes an *IncompatibleError; anything
// else is returned as it is.
func ExplainLaunch(path string, err error) error {
	if ie := incompatible(Found{Path: path, Family: familyOfBinary(path)}, err); ie != nil {
		return ie
	}
	return err
}

// ErrIncompatible is wrapped by *IncompatibleError.
var ErrIncompatible = plugin.ErrIncompatible

// IncompatibleError is a plugin that speaks no protocol major this avenor
// speaks: the handshake refused it before any RPC. The fix is the user's:
// another plugin build, or another avenor.
type IncompatibleError struct {
	Found       Found
	PluginMajor int // 0 when the plugin's answer did not say
	HostMajors  []int
	Cause       error
}

func (e *IncompatibleError) Unwrap() []error { return []error{ErrIncompatible, e.Cause} }

func (e *IncompatibleError) Error() string {
	name := BinaryPrefix + e.Found.Family
	if e.Found.Family == "" {
		name = "the plugin"
	}
	host := make([]string, len(e.HostMajors))
	for i, m := range e.HostMajors {
		host[i] = strconv.Itoa(m)
	}
	speaks := "a plugin protocol this avenor does not speak"
	if e.PluginMajor > 0 {
		speaks = fmt.Sprintf("only plugin protocol %d", e.PluginMajor)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s speaks %s; this avenor speaks plugin protocol %s. ", name, e.Found.Path, speaks, strings.Join(host, ", "))
	if e.Found.Source == SourcePinned {
		fmt.Fprintf(&b, "It is pinned in %s. ", e.Found.LockFile)
	}
	fmt.Fprintf(&b, "Install a release of %s built for plugin protocol %s (`avenor plugin install <binary>`", name, host[len(host)-1])
	if e.Found.Family != "" {
		fmt.Fprintf(&b, ", then `avenor plugin use %s@<version>`", e.Found.Family)
	}
	b.WriteString(")")
	if e.PluginMajor > plugin.ProtocolVersion {
		fmt.Fprintf(&b, ", or upgrade avenor to a release that speaks plugin protocol %d", e.PluginMajor)
	} else if e.PluginMajor > 0 {
		fmt.Fprintf(&b, ", or use an older avenor that still speaks plugin protocol %d", e.PluginMajor)
	}
	return b.String()
}

// pluginMajorRE finds the major go-plugin reports for the plugin.
var pluginMajorRE = regexp.MustCompile(`(?i)plugin version:\s*(\d+)`)

// incompatible recognises a protocol refusal: sdk/plugin's ErrIncompatible,
// which sdk/plugin puts on go-plugin's own refusal too (the one place that
// reads go-plugin's text).
func incompatible(found Found, err error) *IncompatibleError {
	if !errors.Is(err, plugin.ErrIncompatible) {
		return nil
	}
	ie := &IncompatibleError{Found: found, HostMajors: []int{plugin.ProtocolVersion}, Cause: err}
	if m := pluginMajorRE.FindStringSubmatch(err.Error()); m != nil {
		ie.PluginMajor, _ = strconv.Atoi(m[1])
	}
	return ie
}

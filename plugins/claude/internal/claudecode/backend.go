package claudecode

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/procsession"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// StreamName is the stream-json backend's name.
const StreamName = "claude-stream"

// BinaryEnv overrides the claude binary (the "binary" backend option wins).
const BinaryEnv = "AVENOR_CLAUDE_BIN"

const installHint = "install it with: npm install -g @anthropic-ai/claude-code (or set the backend option binary, or " + BinaryEnv + ", to its path)"

// thinkingLevels are the --effort values (docs/backends.md#capability-matrix).
var thinkingLevels = []string{"low", "medium", "high", "xhigh", "max"}

// NewStreamBackend is claude-stream: `claude -p` with stream-json in and
// out, permissions over stdio, one process per session. Claude Code keeps
// every session on disk, so a fresh process resumes it by id.
func NewStreamBackend() runtime.Backend { return &streamBackend{} }

type streamBackend struct {
	// stopGrace and cancelWait shorten the waits in tests; zero means the
	// defaults.
	stopGrace, cancelWait time.Duration
}

func (b *streamBackend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name: StreamName,
		Description: "Claude Code headless: `claude -p --input-format stream-json --output-format stream-json " +
			"--permission-prompt-tool stdio`, one process per session, resumable by session id",
		Capabilities: procsession.Capabilities(append([]runtime.Capability{
			runtime.CapResume, runtime.CapPermissionRelay, runtime.CapModelSelection, runtime.CapPrewarm, runtime.CapQuestions, runtime.CapImages,
			runtime.CapModelListing, runtime.CapUsageReporting, runtime.CapCostReporting,
		}, launchCapabilities...)...).With(runtime.CapRateLimitReset, rateLimitSupport).With(runtime.CapCompaction, runtime.Supported),
		ResumeScope:    runtime.ResumeCrossProcess,
		ThinkingLevels: thinkingLevels,
		EventTypes:     slices.Concat(eventTypes, []runtime.EventType{runtime.EventUsageAccount}),
	}
}

func binary(options map[string]any, env map[string]string) string {
	return agentproc.ResolveBinary("claude", BinaryEnv, options, env)
}

// Check finds claude and makes sure it is Claude Code.
func (b *streamBackend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	bin := binary(req.Options, req.Env)
	r := runtime.Readiness{Binary: bin, Auth: "unknown"}
	path, version, err := claudeVersion(ctx, bin, agentproc.Environ(req.Env, nil))
	if err != nil {
		r.Message = err.Error()
		return r
	}
	r.Binary, r.Version, r.Ready = path, version, true
	r.Message = fmt.Sprintf("Claude Code %s found; authentication (ANTHROPIC_API_KEY or a login) is checked when a session starts", version)
	return r
}

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+\S*`)

// claudeVersion runs `<bin> --version` and requires it to say Claude Code:
// another program named claude must not be driven with flags it does not
// know.
func claudeVersion(ctx context.Context, bin string, env []string) (path, version string, err error) {
	path, out, err := agentproc.Version(ctx, StreamName, bin, env, installHint)
	if err != nil {
		return path, "", err
	}
	said := strings.TrimSpace(out)
	if !strings.Contains(said, "Claude Code") {
		return path, "", runtime.Errorf(runtime.FaultRuntime, "%s: %s is not Claude Code: `--version` says %q; %s", StreamName, path, runtime.Truncate(said, 200), installHint)
	}
	version = versionRE.FindString(said)
	if version == "" {
		version = runtime.Truncate(said, 100)
	}
	return path, version, nil
}

// Open starts `claude -p` for a new session (--session-id, chosen here so
// the id is known before the first turn) or a resumed one (--resume).
func (b *streamBackend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	if strings.TrimSpace(req.Dir) == "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: no working directory given", StreamName)
	}
	if err := runtime.CheckLaunch(b.Info(), req.PermissionMode, req.Launch); err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)
	}
	if req.ServerURL != "" {
		return nil, runtime.Errorf(runtime.FaultUser, "%s does not use a server URL (--server-url); point Claude Code at an API with ANTHROPIC_BASE_URL in [backends.%s].env", StreamName, StreamName)
	}
	if req.Thinking != "" && !contains(thinkingLevels, req.Thinking) {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: thinking level %q is not accepted; use one of %s", StreamName, req.Thinking, strings.Join(thinkingLevels, ", "))
	}
	env := agentproc.Environ(req.Env, nil)
	bin := binary(req.Options, req.Env)
	_, version, err := claudeVersion(ctx, bin, env)
	if err != nil {
		return nil, err
	}
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--include-partial-messages"}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.Agent != "" {
		args = append(args, "--agent", req.Agent)
	}
	if req.Thinking != "" {
		args = append(args, "--effort", req.Thinking)
	}
	launch, files, err := launchArgs(req)
	if err != nil {
		return nil, err
	}
	args = append(args, launch...)
	cfg := streamConfig{Backend: StreamName, Binary: bin, Version: version, Env: env, Dir: req.Dir, Questions: req.Questions,
		InstallHint: installHint, StopGrace: b.stopGrace, CancelWait: b.cancelWait}
	if id := strings.TrimSpace(req.ResumeSessionID); id != "" {
		if !uuidRE.MatchString(id) {
			files.Remove()
			return nil, runtime.Errorf(runtime.FaultUser, "%s: session %q: %v (Claude Code session ids are UUIDs)", StreamName, id, runtime.ErrSessionNotFound)
		}
		cfg.SessionID, cfg.Resume = id, true
		args = append(args, "--resume", id)
	} else {
		cfg.SessionID = newUUID()
		args = append(args, "--session-id", cfg.SessionID)
	}
	cfg.Args, cfg.launchFiles = args, files
	sess, err := openStream(ctx, cfg, host)
	if err != nil {
		files.Remove()
		return nil, err
	}
	return sess, nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

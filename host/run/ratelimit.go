package run

import (
	"context"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/loop"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Rate limits and quota windows (docs/unattended.md#rate-limits): the
// settings wait_on_rate_limit, max_rate_limit_resumes and report_usage
// (flags, config keys, spawn params), the capability check, and a
// supervised runtime's wait kept in its durable record.

// RateLimitSettings checks the rate-limit settings and returns the
// runner's RateLimit and ReportUsage; name turns a setting's key into
// what the user wrote. Without wait_on_rate_limit the zero RateLimit is
// returned and a rate-limited turn ends with its error as before.
func RateLimitSettings(s config.Settings, name func(string) string) (hostrt.RateLimit, bool, error) {
	if n := s.MaxRateLimitResumes; n < 0 || n > hostrt.MaxRateLimitResumes {
		return hostrt.RateLimit{}, false, fmt.Errorf("%s %d is out of range: 0 to %d", name("max_rate_limit_resumes"), n, hostrt.MaxRateLimitResumes)
	}
	// Any option of rate limits asks for the account's usage windows too.
	report := s.ReportUsage || s.WaitOnRateLimit
	if !s.WaitOnRateLimit {
		return hostrt.RateLimit{}, report, nil
	}
	return hostrt.RateLimit{Wait: true, MaxResumes: s.MaxRateLimitResumes}, report, nil
}

// RefusePhased refuses wait_on_rate_limit for a loop or team run: its
// phases are runs of their own, which do not wait (fail closed).
func RefusePhased(rl hostrt.RateLimit, phased bool, name func(string) string) error {
	if rl.Wait && phased {
		return fmt.Errorf("%s is not available for a loop or team run (its phases are runs of their own and do not wait); drop it, or run the prompt on its own", name("wait_on_rate_limit"))
	}
	return nil
}

// CheckRateLimit refuses --wait-on-rate-limit on a backend that does not
// declare rate_limit_reset: it could not say when to resume (fail closed).
func CheckRateLimit(info sdk.BackendInfo, rl hostrt.RateLimit, name func(string) string) error {
	if !rl.Wait || info.Capability(sdk.CapRateLimitReset) != sdk.Unsupported {
		return nil
	}
	return fmt.Errorf("backend %s cannot wait on a rate limit: it does not report when a rate limit lifts (capability %s); drop %s, or use a backend that declares it (avenor backends --json)",
		info.Name, sdk.CapRateLimitReset, name("wait_on_rate_limit"))
}

// checkSpawnRateLimit refuses, before anything of the spawn runs, a
// wait_on_rate_limit on a backend that cannot: the backend's plugin is
// started to describe itself and stopped again, only when it was asked.
func (sp Spawned) checkSpawnRateLimit(ctx context.Context) error {
	rl, _, err := RateLimitSettings(sp.Backend.Settings, spawnParam)
	if err != nil {
		return control.InvalidParams(err.Error())
	}
	if !rl.Wait || sp.Phased != nil {
		return err
	}
	info, err := describe(ctx, sp.Backend.Backend)
	if err != nil {
		return err
	}
	if err := CheckRateLimit(info, rl, spawnParam); err != nil {
		return fmt.Errorf("%w; nothing was started", err)
	}
	return nil
}

// checkSpawnCompaction refuses, before anything of the spawn runs, an
// auto_compact_pct out of range or with a loop or team file (-32602), and
// one on a backend that cannot compact: its plugin is started to describe
// itself and stopped again, only when it was asked.
func (sp Spawned) checkSpawnCompaction(ctx context.Context) error {
	pct, err := AutoCompactPct(sp.Backend.Settings, sp.Phased != nil, spawnParam)
	if err != nil {
		return control.InvalidParams(err.Error())
	}
	if pct == 0 {
		return nil
	}
	info, err := describe(ctx, sp.Backend.Backend)
	if err != nil {
		return err
	}
	if err := CheckCompaction(info, pct, spawnParam); err != nil {
		return fmt.Errorf("%w; nothing was started", err)
	}
	return nil
}

// validateRateLimit refuses a max_rate_limit_resumes out of range: -32602.
func (p *SpawnParams) validateRateLimit() error {
	if n := p.MaxRateLimitResumes; n != nil && (*n < 0 || *n > hostrt.MaxRateLimitResumes) {
		return control.InvalidParams(fmt.Sprintf("max_rate_limit_resumes %d is out of range: 0 to %d", *n, hostrt.MaxRateLimitResumes))
	}
	return nil
}

// rateLimitKeys adds the rate-limit params the spawn gave to its config
// keys.
func (p SpawnParams) rateLimitKeys(out map[string]any) {
	if p.WaitOnRateLimit != nil {
		out["wait_on_rate_limit"] = *p.WaitOnRateLimit
	}
	if p.MaxRateLimitResumes != nil {
		out["max_rate_limit_resumes"] = *p.MaxRateLimitResumes
	}
	if p.ReportUsage != nil {
		out["report_usage"] = *p.ReportUsage
	}
}

// entryRateLimit gives s, a run's layered settings, its direct-mode
// roster entry's rate-limit keys where the command line set none.
func entryRateLimit(k loop.RateLimitKeys, s *config.Settings, given func(string) bool) {
	if v := k.WaitOnRateLimit; v != nil && !given("wait_on_rate_limit") {
		s.WaitOnRateLimit = *v
	}
	if v := k.MaxRateLimitResumes; v != nil && !given("max_rate_limit_resumes") {
		s.MaxRateLimitResumes = *v
	}
}

// RateLimitRecord is a supervised runtime's rate-limit wait in its durable
// record: when the wait ends (before jitter), which resume follows it, and
// the prompt it sends again. A supervisor started after its predecessor
// died resumes the wait (Recover) instead of ending the turn.
type RateLimitRecord struct {
	UntilMS int64  `json:"until_ms"`
	Resume  int    `json:"resume"`
	Prompt  string `json:"prompt"`
}

// armRateLimit keeps the runner's waits in the runtime's record and, with
// restored (a recovered wait, read under life.mu by the caller), gives the
// run that takes the turn over the wait's end, count and prompt.
func (rt *Runtime) armRateLimit(o *hostrt.Options, restored *RateLimitRecord) {
	if !o.RateLimit.Wait || rt.life == nil {
		return
	}
	if w := restored; w != nil {
		o.RateLimit.Until, o.RateLimit.Used, o.Prompt = time.UnixMilli(w.UntilMS), w.Resume, w.Prompt
	}
	l := rt.life
	if y, ok := l.owner.(SlotYielder); ok {
		o.RateLimit.Yield = y.YieldSlot
	}
	o.RateLimit.OnWait = func(until time.Time, resume int, prompt string) {
		l.mu.Lock()
		if until.IsZero() {
			l.rateWait = nil
		} else {
			l.rateWait = &RateLimitRecord{UntilMS: until.UnixMilli(), Resume: resume, Prompt: prompt}
		}
		l.mu.Unlock()
		l.owner.Changed()
	}
}

// SlotYielder is an Owner whose runs give their executing slot back while
// they wait for a rate limit's reset (avenor stable's --max-runtimes).
type SlotYielder interface {
	// YieldSlot gives the run's slot back; reacquire takes one again,
	// waiting while none is free, or at once when ctx is done.
	YieldSlot() (reacquire func(ctx context.Context) error)
}

// addRateLimitFields adds to a list/status entry the wait of a running
// turn: waiting_reason and rate_limited_until, only while it waits.
func addRateLimitFields(e map[string]any, st control.Status) {
	if st.WaitingReason != "" {
		e["waiting_reason"], e["rate_limited_until"] = st.WaitingReason, st.RateLimitedUntil
	}
}

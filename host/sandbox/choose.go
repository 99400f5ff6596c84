package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/avenor-go/avenor/sdk/agentproc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Test and operations switches (docs/sandbox.md#switches), read from the
// host's environment.
const (
	// MechanismEnv forces one mechanism: bubblewrap (or bwrap) or
	// landlock. The run is refused when the forced one is unusable; it
	// never falls back to another.
	MechanismEnv = "AVENOR_SANDBOX_MECHANISM"
	// DisableLandlockEnv, set to 1, makes Landlock count as unusable.
	DisableLandlockEnv = "AVENOR_SANDBOX_DISABLE_LANDLOCK"
)

// Machine is what Choose and Mechanisms look at; a nil field is the real
// one (exec.LookPath, no environment, agentproc.LandlockABI).
type Machine struct {
	LookPath    func(string) (string, error)
	Getenv      func(string) string
	LandlockABI func() int
}

func (m Machine) withDefaults() Machine {
	if m.LookPath == nil {
		m.LookPath = exec.LookPath
	}
	if m.Getenv == nil {
		m.Getenv = func(string) string { return "" }
	}
	if m.LandlockABI == nil {
		m.LandlockABI = agentproc.LandlockABI
	}
	return m
}

// Choose is sb with the mechanism that enforces it on this machine
// (docs/sandbox.md#mechanisms): bubblewrap where it is usable (bwrap on
// PATH and a trial run works: user namespaces), else Landlock where the
// kernel enforces it and it can express sb. Neither is a *MissingError
// naming what each lacks and how to get it, before anything starts; a
// forced mechanism (MechanismEnv) is that one or the error. No sandbox
// is returned as it is.
func Choose(ctx context.Context, sb sdk.Sandbox, m Machine) (sdk.Sandbox, error) {
	if !sb.Active() {
		return sb, nil
	}
	m = m.withDefaults()
	forced, err := forcedMechanism(m.Getenv(MechanismEnv))
	if err != nil {
		return sdk.Sandbox{}, err
	}
	var tried []Unusable
	if forced != sdk.MechanismLandlock {
		sb.Mechanism = sdk.MechanismBubblewrap
		err := Check(ctx, sb, m.LookPath)
		if err == nil {
			return sb, nil
		}
		var missing *MissingError
		if !errors.As(err, &missing) {
			return sdk.Sandbox{}, err
		}
		tried = append(tried, missing.Tried...)
	}
	if forced != sdk.MechanismBubblewrap {
		sb.Mechanism = sdk.MechanismLandlock
		reason := landlockUnusable(sb, m)
		if reason == "" {
			return sb, nil
		}
		tried = append(tried, Unusable{Mechanism: sdk.MechanismLandlock, Reason: reason})
	}
	return sdk.Sandbox{}, &MissingError{Tried: tried}
}

// forcedMechanism reads MechanismEnv's value: "" forces none.
func forcedMechanism(v string) (string, error) {
	switch v {
	case "":
		return "", nil
	case sdk.MechanismBubblewrap, "bwrap":
		return sdk.MechanismBubblewrap, nil
	case sdk.MechanismLandlock:
		return sdk.MechanismLandlock, nil
	}
	return "", fmt.Errorf("%s=%q: valid: bubblewrap, landlock (a test and operations switch); unset it to let avenor choose", MechanismEnv, v)
}

// landlockUnusable is why Landlock cannot enforce sb here; "" is usable.
func landlockUnusable(sb sdk.Sandbox, m Machine) string {
	if m.Getenv(DisableLandlockEnv) == "1" {
		return "disabled by " + DisableLandlockEnv + "=1"
	}
	if m.LandlockABI() < 1 {
		return "this kernel does not enforce Landlock"
	}
	if err := agentproc.LandlockExpressible(sb); err != nil {
		return err.Error()
	}
	if p, _ := sdk.ParseNetProfile(sb.Network); p.Filtered() && m.LandlockABI() < agentproc.LandlockNetABI {
		return fmt.Sprintf("--sandbox-network %s needs Landlock ABI %d (Linux 6.7 or later) to restrict TCP connect; this kernel has %d", sb.Network, agentproc.LandlockNetABI, m.LandlockABI())
	}
	return ""
}

// Status is one mechanism as `avenor backends` shows it.
type Status struct {
	Mechanism string `json:"mechanism"`
	Usable    bool   `json:"usable"`
	// Detail is where it is (bwrap's path, Landlock's ABI) or why it is
	// unusable.
	Detail string `json:"detail"`
}

// Mechanisms are the mechanisms this machine has, in order of
// preference, each usable or not and why (DisableLandlockEnv counts).
func Mechanisms(ctx context.Context, m Machine) []Status {
	m = m.withDefaults()
	probe := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap}
	bw := Status{Mechanism: sdk.MechanismBubblewrap, Usable: true}
	if err := Check(ctx, probe, m.LookPath); err != nil {
		var missing *MissingError
		if errors.As(err, &missing) && len(missing.Tried) == 1 {
			bw.Usable, bw.Detail = false, missing.Tried[0].Reason
		} else {
			bw.Usable, bw.Detail = false, err.Error()
		}
	} else if p, err := m.LookPath(agentproc.BwrapBinary); err == nil {
		bw.Detail = p
	}
	probe.Mechanism = sdk.MechanismLandlock
	ll := Status{Mechanism: sdk.MechanismLandlock, Usable: true, Detail: "ABI " + strconv.Itoa(m.LandlockABI())}
	if reason := landlockUnusable(probe, m); reason != "" {
		ll.Usable, ll.Detail = false, reason
	}
	return []Status{bw, ll}
}

package sentinel

import (
	"strconv"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Stop reasons the exit-code map knows by name (docs/run.md#exit-codes and docs/events.md#sessionend):
// the sdk's constants under the names this package has always used.
const (
	StopEndTurn           = sdk.StopEndTurn
	StopRefusal           = sdk.StopRefusal
	StopMaxTokens         = sdk.StopMaxTokens
	StopMaxTurnRequests   = sdk.StopMaxTurnRequests
	StopBlocked           = sdk.StopBlocked
	StopBudgetReached     = sdk.StopBudgetReached
	StopTimeout           = sdk.StopTimeout
	StopProgressTimeout   = sdk.StopProgressTimeout
	StopCancelled         = sdk.StopCancelled
	StopCancelledForced   = sdk.StopCancelledForced
	StopError             = sdk.StopError
	StopSessionIDConflict = sdk.StopSessionConflict
)

// Process exit codes of docs/run.md#exit-codes.
const (
	ExitOK              = 0
	ExitFailure         = 1
	ExitRefusal         = 2
	ExitMaxTokens       = 3
	ExitMaxTurnRequests = 4
	ExitBlocked         = 5
	ExitTimeout         = 124
	ExitCancelled       = 130
)

// ExitCode maps a terminal stop reason to the process exit code.
//
// An empty stop reason is a clean end ("no explicit reason" in the contract).
// cancelled_forced is claude's name for a cancel that had to be forced; the
// contract's table names only cancelled, but both mean the run was cancelled,
// and a harness branching on 130 must see both the same way. Everything not
// named, including error and session_id_conflict, is the generic failure 1.
func ExitCode(stopReason sdk.StopReason) int {
	switch stopReason {
	case "", StopEndTurn:
		return ExitOK
	case StopRefusal:
		return ExitRefusal
	case StopMaxTokens:
		return ExitMaxTokens
	case StopMaxTurnRequests:
		return ExitMaxTurnRequests
	case StopBlocked, StopBudgetReached:
		return ExitBlocked
	case StopTimeout, StopProgressTimeout:
		return ExitTimeout
	case StopCancelled, StopCancelledForced:
		return ExitCancelled
	default:
		return ExitFailure
	}
}

// DefaultStopReason is the inverse map: the stop reason to report for an exit
// code when the run gave none. Codes without a canonical reason (1 and any
// code outside the table) return "", and the sentinel then writes exit_N.
func DefaultStopReason(exit int) sdk.StopReason {
	switch exit {
	case ExitOK:
		return StopEndTurn
	case ExitRefusal:
		return StopRefusal
	case ExitMaxTokens:
		return StopMaxTokens
	case ExitMaxTurnRequests:
		return StopMaxTurnRequests
	case ExitBlocked:
		return StopBlocked
	case ExitTimeout:
		return StopTimeout
	case ExitCancelled:
		return StopCancelled
	default:
		return ""
	}
}

// Retryable reports whether an attempt that ended this way may be retried
// under --max-retries (docs/run.md#retry). Only the generic failure retries; a
// session identity conflict is fatal because a retry could resume a session
// id the backend never confirmed.
func Retryable(exit int, stopReason sdk.StopReason) bool {
	return exit == ExitFailure && stopReason != StopSessionIDConflict
}

// Sentinel status lines (docs/run.md#sentinel), the first line of the file.
const (
	StatusDone    = "DONE"
	StatusTimeout = "TIMEOUT"
	StatusKilled  = "KILLED"
	StatusBlocked = "BLOCKED"
	StatusFailed  = "FAILED"
)

// Status returns the sentinel status line for an exit code.
func Status(exit int) string {
	switch exit {
	case ExitOK:
		return StatusDone
	case ExitTimeout:
		return StatusTimeout
	case ExitCancelled:
		return StatusKilled
	case ExitBlocked:
		return StatusBlocked
	default:
		return StatusFailed
	}
}

// sentinelStopReason is the STOP_REASON written when the record has none.
// It follows the sentinel table of docs/run.md#sentinel, not DefaultStopReason: a FAILED
// sentinel says exit_N even for 2, 3 and 4, because the writer of the
// original only knew the five statuses. Callers that want refusal etc. fill
// the record from DefaultStopReason first.
func sentinelStopReason(exit int) sdk.StopReason {
	switch Status(exit) {
	case StatusDone:
		return StopEndTurn
	case StatusTimeout:
		return StopTimeout
	case StatusKilled:
		return StopCancelled
	case StatusBlocked:
		return StopBlocked
	default:
		return sdk.StopReason("exit_" + strconv.Itoa(exit))
	}
}

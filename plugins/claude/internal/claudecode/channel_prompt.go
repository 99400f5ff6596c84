package claudecode

import (
	"context"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/plugins/claude/internal/channel"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Prompt pastes the prompt into the TUI and, once the channel is up,
// queues it as a continue control (docs/backends.md#claude-channel-plugin-claude-experimental; DeliveryOption chooses
// one of the two instead). The turn ends at
// avenor_finish (then at the transcript's turn end, or finishSettle
// later), or like a `claude` turn when Claude never calls it.
func (s *channelSession) Prompt(ctx context.Context, turn runtime.Turn) (runtime.TurnResult, error) {
	t, err := s.beginTurn(ctx)
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, err
	}
	cancel := t.Cancelled()
	// A finish that arrived between turns belongs to no turn.
	select {
	case <-s.finishes:
	default:
	}
	s.inTurn.Store(true)
	defer func() {
		s.inTurn.Store(false)
		s.endTurn(t)
	}()

	var finish *channel.FinishRequest
	var final string
	end := func(stop runtime.StopReason) runtime.TurnResult {
		r := runtime.TurnResult{StopReason: stop, Extra: map[string]any{"status": "done", "runtime_version": s.version}}
		if finish != nil {
			r.StopReason = finishStop(finish.Status)
			files := finish.FilesChanged
			if files == nil {
				files = []string{}
			}
			r.Extra["status"], r.Extra["summary"], r.Extra["files_changed"] = finish.Status, finish.Summary, files
			if final == "" {
				final = finish.Summary
			}
		}
		if final != "" {
			r.FinalOutput, r.HasFinalOutput = final, true
		}
		return r
	}
	if t.IsCancelled() { // cancelled while starting: nothing was sent
		return end(runtime.StopCancelled), nil
	}

	s.announce()
	s.tail.skipToEnd()
	channelUp := s.ready.Load() && s.channelOn
	ready := channelUp
	if s.ready.Load() && !s.channelOn && !s.warned {
		s.warned = true
		s.host.Emit(runtime.NewEvent(runtime.EventWarning, map[string]any{"session_id": s.id, "source": "channel",
			"message": "Claude Code connected the avenor channel server but showed no development-channel warning: channels are off for this account or build, so its notifications would be dropped; prompts are pasted only"}))
	}
	if !ready || s.delivery != deliverChannel {
		if err := s.typePrompt(ChannelName, turn.Text); err != nil {
			return end(runtime.StopError), err
		}
	}
	if ready && s.delivery != deliverTerminal {
		c, err := s.broker.Push(s.runID, channel.ControlContinue, map[string]string{"message": turn.Text}, "")
		if err != nil {
			return end(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "%s: queueing the prompt on the channel: %v", ChannelName, err)
		}
		s.host.Emit(runtime.NewEvent(EventPromptQueued, map[string]any{"session_id": s.id, "control_id": c.ID,
			"message_type": channel.ControlContinue, "delivery": "channel", "prompt_length": len([]rune(turn.Text))}))
	}
	submitted := time.Now()
	reEntered := false
	answered := false
	var idleSince, finishedAt time.Time
	var dlg dialog
	var dialogSince time.Time
	var relaysAt int64
	for {
		text, ended := s.followTranscript()
		if text != "" {
			final, answered = text, true
		}
		if ended {
			return end(runtime.StopEndTurn), nil
		}
		if finish != nil && time.Since(finishedAt) >= finishSettle {
			return end(runtime.StopEndTurn), nil
		}
		st := readScreen(s.term.screen())
		if !reEntered && time.Since(submitted) >= ptyReEnter {
			reEntered = true
			s.reEnter(turn.Text, st)
		}
		// With the channel up, Claude relays its permission prompts to the
		// channel (relayPermission) and the dialog on screen is left to
		// that answer. A dialog no relay follows within channelPermGrace
		// (Claude Code 2.1.332 relays only where its allow_channels policy
		// allows) is answered from the screen, as by the claude backend.
		switch {
		case st.permission && dialogSince.IsZero():
			dialogSince, relaysAt = time.Now(), s.relays.Load()
		case !st.permission:
			dialogSince = time.Time{}
		}
		fromScreen := !channelUp || (!dialogSince.IsZero() && time.Since(dialogSince) >= channelPermGrace && s.relays.Load() == relaysAt)
		if fromScreen || dlg.asked {
			if stop := s.answerDialog(ctx, cancel, st, &dlg); stop != "" {
				return end(stop), nil
			}
		}
		if st.idle() && (answered || dlg.rejected || finish != nil) {
			if idleSince.IsZero() {
				idleSince = time.Now()
			} else if time.Since(idleSince) >= ptyIdleSettle {
				return end(runtime.StopEndTurn), nil
			}
		} else {
			idleSince = time.Time{}
		}
		if s.term.done() {
			s.markDead(fmt.Errorf("claude exited (%v)", s.term.exitErr()))
			s.cleanup.removeEntry()
			return end(runtime.StopEndTurn), nil
		}
		select {
		case f := <-s.finishes:
			if finish == nil {
				finish, finishedAt = &f, time.Now()
			}
		case <-ctx.Done():
			return end(s.cancelTurn()), nil
		case <-cancel:
			return end(s.cancelTurn()), nil
		case <-time.After(ptyPoll):
		}
	}
}

// cancelTurn interrupts the TUI as the claude backend does (Esc Esc, 3 s,
// kill). No cancel control is sent: a channel message is a new prompt to
// Claude Code, which would start a turn to acknowledge it right after the
// interrupt and keep the TUI busy.
func (s *channelSession) cancelTurn() runtime.StopReason {
	stop := s.interrupt()
	if s.term.done() {
		s.cleanup.removeEntry()
	}
	return stop
}

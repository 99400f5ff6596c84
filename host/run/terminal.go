package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/avenor-go/avenor/host/liveview"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// answersInline says whether the run asks, at the terminal, the permission
// requests nothing else is set up to answer: stdin and stderr are a
// terminal, the live view is on, and the run has no other way to answer —
// no --control-socket, --http-debug, --permission-handler, --sentinel-file
// (its file handler), --auto-approve (flag or config), no --on-permission
// deny|fail, and stdin is not the prompt.
func (c *Command) answersInline(perms permission.Options, view *liveview.View, stderrTerminal bool) bool {
	stdin, _ := c.Stdin.(*os.File)
	return view.Mode() == liveview.TTY && stderrTerminal && liveview.IsTerminal(stdin) &&
		c.ControlSocket == "" && c.HTTPDebug == "" && c.PermissionHandler == "" && c.SentinelFile == "" &&
		!c.AutoApprove && !perms.AutoApprove && perms.FileBase == "" &&
		(perms.Unanswered == "" || perms.Unanswered == permission.UnansweredWait) && c.PromptFile != "-"
}

// askAtTerminal is the broker's last resolver of an inline run: the live
// view asks, the person's line on stdin answers (source "tty").
func askAtTerminal(view *liveview.View, stdin io.Reader, stderr io.Writer) func(context.Context, sdk.PermissionRequest) (permission.Answer, error) {
	lines := stdinLines(stdin)
	return func(ctx context.Context, req sdk.PermissionRequest) (permission.Answer, error) {
		if len(req.Options) == 0 {
			return permission.Answer{}, errors.New("no options to choose from")
		}
		id, err := view.Ask(ctx, req, lines())
		if errors.Is(err, io.EOF) {
			fmt.Fprint(stderr, unansweredNote(req, "", true))
		}
		if err != nil {
			return permission.Answer{}, err
		}
		return permission.Answer{Outcome: sdk.OutcomeSelected, OptionID: id}, nil
	}
}

// unansweredNote is permission.UnansweredNote; under a live view, which
// shows the request and its options just above, without repeating them.
func unansweredNote(req sdk.PermissionRequest, controlSocket string, viewShown bool) string {
	note := permission.UnansweredNote(req, controlSocket)
	if !viewShown {
		return note
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(note, "\n") {
		if !strings.HasPrefix(l, "  asks: ") && !strings.HasPrefix(l, "  options: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// MaxInlineLines bounds the lines read ahead of the question that takes
// them; the reader waits (it never drops what the person typed).
const MaxInlineLines = 16

// stdinLines returns the channel of stdin's lines, started on first use:
// one reader for the whole run, since a read of a terminal cannot be
// withdrawn. The channel closes at end of input. The reader ends with the
// process.
func stdinLines(r io.Reader) func() <-chan string {
	var once sync.Once
	ch := make(chan string, MaxInlineLines)
	return func() <-chan string {
		once.Do(func() {
			go func() {
				defer close(ch)
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					ch <- sc.Text()
				}
			}()
		})
		return ch
	}
}

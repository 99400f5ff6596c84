package run

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	hostrt "github.com/avenor-go/avenor/host/runner"
)

// FileLedger is a tree's spend ledger (spend_scope tree): a small JSON
// file, locked (flock) around each read and update, shared by the
// runtimes of the tree across processes and nested supervisors, as the
// tree budget's file is.
type FileLedger string

// ledgerFile is the ledger's content.
type ledgerFile struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
}

// maxLedgerBytes bounds what is read of a ledger file.
const maxLedgerBytes = 4096

// Add adds d's tokens and cost and returns the tree's total.
func (f FileLedger) Add(d hostrt.Spent) (hostrt.Spent, error) {
	return f.update(func(l *ledgerFile) bool {
		l.Tokens += d.Tokens
		l.USD += d.USD
		return d.Tokens != 0 || d.USD != 0
	})
}

// Total is the tree's total.
func (f FileLedger) Total() (hostrt.Spent, error) {
	return f.update(func(*ledgerFile) bool { return false })
}

// update reads the ledger under its lock, applies change and writes it
// back when change says it changed.
func (f FileLedger) update(change func(*ledgerFile) bool) (hostrt.Spent, error) {
	file, err := os.OpenFile(string(f), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return hostrt.Spent{}, fmt.Errorf("spend ledger: %w", err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return hostrt.Spent{}, fmt.Errorf("spend ledger: lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN) }()
	b, err := io.ReadAll(io.LimitReader(file, maxLedgerBytes))
	if err != nil {
		return hostrt.Spent{}, fmt.Errorf("spend ledger: %w", err)
	}
	var l ledgerFile
	if len(b) > 0 {
		if err := json.Unmarshal(b, &l); err != nil {
			return hostrt.Spent{}, fmt.Errorf("spend ledger %s: %w", string(f), err)
		}
	}
	if change(&l) {
		out, _ := json.Marshal(l)
		if _, err := file.WriteAt(out, 0); err != nil {
			return hostrt.Spent{}, fmt.Errorf("spend ledger: %w", err)
		}
		if err := file.Truncate(int64(len(out))); err != nil {
			return hostrt.Spent{}, fmt.Errorf("spend ledger: %w", err)
		}
	}
	return hostrt.Spent{Tokens: l.Tokens, USD: l.USD, Wall: time.Duration(0)}, nil
}

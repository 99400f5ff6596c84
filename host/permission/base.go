package permission

import (
	"errors"
	"strings"
)

// File names of the file protocol (docs/permission-handler.md#the-file-handler), relative to a base.
const (
	ReqSuffix      = ".req"
	ResponseSuffix = ".req.response"
)

// DerivePermBase is the permission file base of a sentinel path (contract
// docs/run.md#lifecycle): one trailing ".done" becomes ".perm"; anything else gets ".perm"
// appended (/tmp/x.done → /tmp/x.perm, /tmp/x → /tmp/x.perm,
// /tmp/foo.done.done → /tmp/foo.done.perm).
func DerivePermBase(sentinelPath string) string {
	if s, ok := strings.CutSuffix(sentinelPath, ".done"); ok {
		return s + ".perm"
	}
	return sentinelPath + ".perm"
}

// ParseHandler reads a --permission-handler value: only file:<path> is
// accepted, and it returns the path.
func ParseHandler(value string) (string, error) {
	path, ok := strings.CutPrefix(value, "file:")
	if !ok {
		return "", ErrHandlerScheme
	}
	if path == "" {
		return "", errors.New("--permission-handler file:<path> needs a path")
	}
	return path, nil
}

// FileBase is the effective file handler base of a run (docs/run.md#lifecycle):
// an explicit --permission-handler wins; otherwise, when a sentinel path is
// set and auto-approve is off, the base derived from the sentinel; otherwise
// none ("").
func FileBase(handler, sentinelPath string, autoApprove bool) (string, error) {
	if handler != "" {
		return ParseHandler(handler)
	}
	if sentinelPath != "" && !autoApprove {
		return DerivePermBase(sentinelPath), nil
	}
	return "", nil
}

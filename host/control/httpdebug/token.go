package httpdebug

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
)

// TokenHeader carries the token on every route (docs/control-protocol.md#http-debug).
const TokenHeader = "X-Avenor-Token"

// newToken is 16 random bytes in hex: 32 characters.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// requestToken is the token a request offers: the header, or on /events,
// where a browser's EventSource cannot set headers, ?token=.
func requestToken(r *http.Request) string {
	if t := r.Header.Get(TokenHeader); t != "" || r.URL.Path != "/events" {
		return t
	}
	return r.URL.Query().Get("token")
}

func tokenMatches(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// writeTokenFile writes token and a newline to path, 0600, atomically: a
// reader sees the whole token or the previous file, never half of one. The
// parent directory is created 0700 if missing.
func writeTokenFile(path, token string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("http debug token file %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp") // created 0600
	if err != nil {
		return fmt.Errorf("http debug token file %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.WriteString(token + "\n")
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("http debug token file %s: %w", path, err)
	}
	return nil
}

// removeTokenFile removes path if it still holds token: another avenor may
// have been given the same path since.
func removeTokenFile(path, token string) error {
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(bytes.TrimSpace(b), []byte(token)) {
		return nil
	}
	return os.Remove(path)
}

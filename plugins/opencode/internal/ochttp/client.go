package ochttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxResponseBytes bounds a JSON answer of the server (a message with all
// its parts can be large).
const maxResponseBytes = 64 << 20

var (
	// errNotFound is a 404 from the server.
	errNotFound = errors.New("not found")
	// errUnauthorized is a 401 from the server.
	errUnauthorized = errors.New("401 unauthorized")
	// errBadAnswer is a 2xx answer that is not the JSON asked for.
	errBadAnswer = errors.New("bad JSON answer")
)

// statusError is any other answer outside 2xx.
type statusError struct {
	code int
	text string // the body's first line
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.text) }

// client speaks to one OpenCode server: base URL, basic auth, and the
// ?directory= of docs/backends.md#opencode-http-plugin-opencode on every call.
type client struct {
	base      *url.URL // without user info
	user      string
	pass      string
	hasAuth   bool
	directory string // "" sends none
	http      *http.Client
}

// newClient parses rawURL; user:pass@ in it wins over password (from
// OPENCODE_SERVER_PASSWORD) and user (OPENCODE_SERVER_USERNAME, default
// "opencode").
func newClient(rawURL, user, password, directory string) (*client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("server URL %q is not an http(s) URL", rawURL)
	}
	c := &client{directory: directory, http: &http.Client{}}
	if u.User != nil {
		c.user = u.User.Username()
		c.pass, _ = u.User.Password()
		c.hasAuth = true
		u.User = nil
	} else if password != "" {
		if user == "" {
			user = "opencode"
		}
		c.user, c.pass, c.hasAuth = user, password, true
	}
	c.base = u
	return c, nil
}

// fresh is a copy of c whose every request opens a new connection: a
// connection accepted by a server that is still starting may never be
// answered, and must not be reused by the next try.
func (c *client) fresh() *client {
	f := *c
	f.http = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	return &f
}

// String is the server URL without credentials.
func (c *client) String() string { return c.base.String() }

func (c *client) url(path string) string {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	if c.directory != "" {
		u.RawQuery = url.Values{"directory": {c.directory}}.Encode()
	}
	return u.String()
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.hasAuth {
		req.SetBasicAuth(c.user, c.pass)
	}
	return req, nil
}

// do sends a JSON request and decodes a JSON answer into out (nil: discard).
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s %s: %w", method, path, errNotFound)
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s %s: %w: give the server's credentials as user:pass@ in the URL or in OPENCODE_SERVER_PASSWORD", method, path, errUnauthorized)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s %s: %w", method, path, &statusError{code: resp.StatusCode, text: firstLine(string(b))})
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w: %v", method, path, errBadAnswer, err)
	}
	return nil
}

// events opens GET /event.
func (c *client) events(ctx context.Context) (*http.Response, error) {
	req, err := c.request(ctx, http.MethodGet, "/event", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		return nil, fmt.Errorf("GET /event: HTTP %d", resp.StatusCode)
	}
	return resp, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

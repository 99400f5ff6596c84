package client

import "context"

// Observe tells the server this connection only watches: it will never
// answer a permission request, so the run gives its requests to its other
// resolvers (a file handler) rather than holding them for it (contract
// docs/permission-handler.md#precedence's "connected control client"). A read-only viewer calls it first.
// A server older than the method answers CodeMethodNotFound.
func (c *Client) Observe(ctx context.Context) error {
	return c.Call(ctx, "observe", nil, nil)
}

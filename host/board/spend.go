package board

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/avenor-go/avenor/client"
)

// setBudgetBody is POST /api/set-budget's body: set_budget's params and
// the socket (docs/unattended.md#spend-limits).
type setBudgetBody struct {
	Socket string `json:"socket"`
	client.SetBudgetParams
}

// handleSetBudget raises (or lowers) a runtime's spend limits and, with
// resume, continues the runtime a limit paused: the board's "raise limit"
// button.
func (s *Server) handleSetBudget(w http.ResponseWriter, r *http.Request) {
	var b setBudgetBody
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, "invalid json body: "+err.Error())
		return
	}
	if b.RuntimeID == "" {
		writeError(w, http.StatusBadRequest, "missing runtime_id in the body")
		return
	}
	s.withSocket(w, r, b.Socket, func(ctx context.Context, c *client.Client) (any, error) {
		return c.SetBudget(ctx, b.SetBudgetParams)
	})
}

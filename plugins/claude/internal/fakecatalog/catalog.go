package fakecatalog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Answer plays what `avenor backends --models` asks Claude Code
// 2.1.332: `claude auth status` (logged in with an API key) and a
// `claude -p --no-session-persistence` whose stream-json initialize answer
// lists models. It reports whether args were one of those.
func Answer(args []string) bool {
	switch {
	case len(args) == 2 && args[0] == "auth" && args[1] == "status":
		fmt.Println(`{"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty", "apiKeySource": "ANTHROPIC_API_KEY"}`)
		return true
	case slices.Contains(args, "-p") && slices.Contains(args, "--no-session-persistence"):
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var req struct {
				Type      string `json:"type"`
				RequestID string `json:"request_id"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || req.Type != "control_request" {
				continue
			}
			b, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "success", "request_id": req.RequestID,
				"response": map[string]any{"models": []map[string]any{
					{"value": "default", "displayName": "Default (recommended)"}, {"value": "sonnet", "displayName": "Sonnet"},
				}},
			}})
			fmt.Println(string(b))
		}
		return true
	}
	return false
}

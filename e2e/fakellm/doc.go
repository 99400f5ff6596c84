// Package fakellm is a fake LLM HTTP server for the real-runtime tests
// (`make e2e`): the agent CLIs (opencode, gemini, later codex, pi, claude)
// are pointed at it instead of a provider, so they run offline and a test
// decides every model reply.
//
// The server listens on 127.0.0.1:0 and speaks several wire formats, one
// file each:
//
//   - OpenAI Chat Completions (openai_chat.go): POST .../chat/completions,
//     streaming SSE and not; GET .../models. opencode and pi use it.
//   - Gemini (gemini.go): POST /v1beta/models/<model>:streamGenerateContent
//     (SSE with ?alt=sse), :generateContent, :countTokens. gemini-cli uses it.
//
// OpenAI Responses (codex) and Anthropic Messages (claude) are added the
// same way: a type implementing dialect, listed in dialects (server.go).
//
// Each request is parsed into one API-neutral Request (model, messages,
// tools, response schema) and recorded, auth values redacted, so a test can
// assert what the runtime sent. A Script decides the Reply to each request
// that offers tools; requests offering none (title generation and other side
// calls) go to Config.Side, which answers a short text, or JSON shaped from
// the requested response schema. A Reply is text, tool calls, a slow stream,
// or an HTTP error.
//
// This is test support code: nothing in the product imports it.
package fakellm

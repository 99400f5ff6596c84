// Package fakecatalog is what the fake Claude Code CLIs of the tests
// (fakeclaude, fakechannelclaude) answer when `avenor backends --models`
// asks them for their auth state and models, as Claude Code 2.1.332 does.
package fakecatalog

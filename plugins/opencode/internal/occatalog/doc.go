// Package occatalog answers `avenor backends --models` for the OpenCode
// backends: the models `opencode models` lists and the credentials
// `opencode auth list` counts, each a bounded one-shot command, their
// output parsed here (it is outside input) and shared by opencode-acp and
// opencode-http for a short while so one listing asks OpenCode once.
package occatalog

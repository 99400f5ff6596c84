// Package nearest finds the name a typo meant: the "did you mean" of a
// mistyped command, flag or backend, as git, gh and kubectl answer one.
// The command line (commands and flags) and host/plugins (an unknown
// backend) share it, so every suggestion follows one rule.
package nearest

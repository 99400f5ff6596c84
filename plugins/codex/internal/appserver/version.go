package appserver

// Version is the plugin's version, which the client reports to codex in
// initialize; the plugin's main sets it from its own (release builds set
// that with -ldflags "-X main.Version=1.2.0").
var Version = "0.1.0"

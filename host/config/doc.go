// Package config owns avenor's run settings and where they come from: the
// XDG directories avenor uses (config, installed plugins, per-plugin state),
// finding the project (the nearest directory holding .avenor/), and layering
// the settings into one typed [Settings] value.
//
// The layers, lowest first, are:
//
//  1. built-in defaults (see [Keys]);
//  2. the user file, $XDG_CONFIG_HOME/avenor/config.toml (~/.config/avenor/config.toml);
//  3. the project file, <project>/.avenor/config.toml;
//  4. the environment: AVENOR_ plus the upper-case key, for an explicit
//     allow-list of keys only, because other AVENOR_* variables mean other
//     things (AVENOR_PLUGIN_PATH, AVENOR_OPENCODE_URL, ...);
//  5. flags the user set explicitly.
//
// [Load] reads them (it never reads the process environment itself: callers
// pass it in [Sources]) and reports, in a [Provenance], which layer set each
// key. Per-backend tables, [backends.<name>], come from files only and are
// merged key by key across the user and project files.
//
// The command layer (cmd/) and the plugin manager (host/plugins) import this
// package; it imports nothing of avenor's.
package config

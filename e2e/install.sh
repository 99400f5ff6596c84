#!/usr/bin/env bash
# Installs the real agent CLIs the e2e tests drive, at pinned versions, from
# npm into a cache per package@version:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/avenor-e2e/npm/<pkg>@<ver>
# An install that is already there is reused without touching the network.
#
# Prints one NAME=PATH line per CLI on stdout (the environment the e2e tests
# read), progress on stderr. Exit codes:
#   0  every CLI is installed
#   1  an install failed (a real failure: CI must go red)
#   3  a CLI is missing and `npm ping` fails: the registry is unreachable, so
#      the caller prints a loud SKIP instead of failing
#
# Usage: e2e/install.sh            (the pinned set below)
#        e2e/install.sh VAR=pkg@ver:bin ...
set -euo pipefail

# The pinned set: environment variable = package@version : bin name.
# Versions as verified in shared/reference/real-runtimes.md.
PINNED=(
  "AVENOR_E2E_OPENCODE=opencode-ai@1.18.33:opencode"
  "AVENOR_E2E_GEMINI=@google/gemini-cli@0.61.0:gemini"
  "AVENOR_E2E_CODEX=@openai/codex@0.171.0:codex"
  "AVENOR_E2E_CLAUDE=@anthropic-ai/claude-code@2.1.332:claude"
  "AVENOR_E2E_PI=@mariozechner/pi-coding-agent@0.73.1:pi"
)
if [ $# -gt 0 ]; then PINNED=("$@"); fi

for tool in npm node; do
  if ! command -v "$tool" >/dev/null; then
    echo "e2e/install: $tool is not on PATH; install Node.js 20+ with npm (e.g. apt-get install nodejs npm, or nodesource)" >&2
    exit 1
  fi
done

cache="${XDG_CACHE_HOME:-$HOME/.cache}/avenor-e2e/npm"
mkdir -p "$cache"

log() { echo "e2e/install: $*" >&2; }

# spec → package@version (strip "VAR=" and ":bin").
pkgver() { local s="${1#*=}"; echo "${s%:*}"; }

pinged=""
ping_registry() {
  if [ -z "$pinged" ]; then
    if out=$(timeout 60 npm ping --fetch-retries=1 --fetch-timeout=20000 2>&1 </dev/null); then
      pinged=ok
    else
      why=$(echo "$out" | grep -Eo 'code [A-Z_]+|request to [^ ]+ failed' | sort -u | tr '\n' ' ')
      pinged="failed: ${why:-$(echo "$out" | head -n 2 | tr '\n' ' ')}"
    fi
  fi
  [ "$pinged" = ok ]
}

for spec in "${PINNED[@]}"; do
  var="${spec%%=*}"
  pv="$(pkgver "$spec")"
  bin="${spec##*:}"
  dir="$cache/$pv"
  exe="$dir/node_modules/.bin/$bin"
  if [ -f "$dir/.installed" ] && [ -x "$exe" ]; then
    log "$pv: cached in $dir"
  else
    if ! ping_registry; then
      echo "e2e/install: SKIP: the npm registry $(npm config get registry) is unreachable (npm ping $pinged); cannot install $pv" >&2
      exit 3
    fi
    log "$pv: installing into $dir"
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$dir.tmp"
    start=$(date +%s)
    # --prefix keeps npm from walking up to a package.json above the cache;
    # optional dependencies carry the platform binaries, so they stay on.
    if ! npm install --prefix "$dir.tmp" --no-audit --no-fund --no-save --loglevel=error "$pv" </dev/null >&2; then
      log "$pv: npm install failed"
      rm -rf "$dir.tmp"
      exit 1
    fi
    mv "$dir.tmp" "$dir"
    if [ ! -x "$exe" ]; then
      log "$pv: installed, but $exe is missing"
      exit 1
    fi
    # A launcher whose platform binary did not install fails here, not in a test.
    if ! ver=$(HOME="$dir.home" timeout 120 "$exe" --version </dev/null 2>&1); then
      log "$pv: $exe --version failed: $ver"
      rm -rf "$dir.home"
      exit 1
    fi
    rm -rf "$dir.home"
    log "$pv: $bin --version says $ver"
    touch "$dir/.installed"
    log "$pv: installed in $(( $(date +%s) - start )) s"
  fi
  echo "$var=$exe"
done

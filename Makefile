# avenor — build, run, test.
#   make run    builds everything and runs a prompt through avenor and the echo plugin
#   make test   every module's tests with -race
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
TOOLS := $(CURDIR)/.tools
VERSION ?= 0.1.0-dev
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.Version=$(VERSION) -X main.Commit=$(COMMIT)
PREFIX ?= /usr/local

# Plugin modules join the workspace as they appear: plugins/<name>/go.mod.
PLUGIN_MODULES := $(patsubst %/go.mod,%,$(wildcard plugins/*/go.mod))
MODULES := . sdk $(PLUGIN_MODULES)
# What `make install` and the release archives ship: avenor, the echo example
# (the backend of `make run`) and every plugin module. Not the scripted test
# plugin.
SHIPPED := avenor avenor-plugin-echo $(patsubst plugins/%,avenor-plugin-%,$(PLUGIN_MODULES))

# Pinned tools (`make tools` installs them into .tools/ through the Go module proxy).
BUF_VERSION            := v1.74.0
PROTOC_GEN_GO_VERSION  := v1.36.11
PROTOC_GEN_GRPC_VERSION := v1.6.1
STATICCHECK_VERSION    := v0.8.2
# Pinned release tool for `make release` (built from the module proxy into
# .tools once; about 6 minutes on 2 cores).
GORELEASER_VERSION := v2.17.0

.PHONY: all build install cross release run test test-short e2e bench reliability fuzz tools proto proto-check lint clean docs

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/avenor ./cmd/avenor
	cd sdk && $(GO) build -o $(BIN)/avenor-plugin-echo ./examples/echo/cmd/avenor-plugin-echo
	cd sdk && $(GO) build -o $(BIN)/avenor-plugin-scripted ./plugintest/scripted/cmd/avenor-plugin-scripted
	@for m in $(PLUGIN_MODULES); do n=$$(basename $$m); \
		echo "cd $$m && $(GO) build -o $(BIN)/avenor-plugin-$$n ."; \
		(cd $$m && $(GO) build -o $(BIN)/avenor-plugin-$$n .) || exit 1; done

# Installs avenor and its plugins side by side (avenor finds plugins next to itself).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(addprefix $(BIN)/,$(SHIPPED)) $(DESTDIR)$(PREFIX)/bin/

# Every module, tests included (the e2e and reliability ones too), type-checks
# for macOS, where the release ships binaries: Linux-only calls (Pdeathsig, SO_PEERCRED, prctl) must
# sit behind build tags with a fallback. make release builds the shipped
# binaries for darwin too.
CROSS ?= darwin/arm64
cross:
	@for p in $(CROSS); do for m in $(MODULES); do \
		echo "cd $$m && GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet -tags 'e2e reliability' ./..."; \
		(cd $$m && GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet -tags 'e2e reliability' ./...) || exit 1; done; done

# The release: dist/avenor_<VERSION>_<os>_<arch>.tar.gz for linux
# and darwin on amd64 and arm64, stripped static binaries, SHA256SUMS and
# install.sh (.goreleaser.yaml), then checks them (internal/release): each
# archive holds exactly $(SHIPPED), stripped; install.sh installs the host's
# archive into a temporary prefix and refuses a tampered one.
release:
	@mkdir -p $(TOOLS)
	@$(TOOLS)/goreleaser --version 2>/dev/null | grep -q 'GitVersion: *$(GORELEASER_VERSION)$$' || { \
		echo "GOBIN=$(TOOLS) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)"; \
		GOBIN=$(TOOLS) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION); }
	VERSION=$(VERSION) COMMIT=$(COMMIT) $(TOOLS)/goreleaser release --snapshot --clean
	cp install.sh dist/install.sh
	AVENOR_RELEASE_DIST=$(CURDIR)/dist AVENOR_RELEASE_VERSION=$(VERSION) \
		$(GO) test -count=1 -timeout 10m -run '^TestRelease' ./internal/release/

# The main job on the bundled example backend: a real prompt through avenor and
# the echo plugin, then the sentinel. On a terminal avenor's live view shows the
# run (stderr) and the event log is named, not dumped; off a terminal (CI, a
# pipe) the raw NDJSON events are printed as well.
run: build
	@out=$$(mktemp -d); \
	$(BIN)/avenor --backend echo --dir "$$out" --prompt "hello from make run" \
		--on-event "$$out/events.ndjson" --sentinel-file "$$out/run.done"; code=$$?; \
	if [ -t 1 ] && [ -t 2 ]; then \
		echo "--- events: $$out/events.ndjson ($$(wc -l <"$$out/events.ndjson") NDJSON lines; retold: bin/avenor watch $$out/events.ndjson)"; \
	else echo "--- events ($$out/events.ndjson)"; cat "$$out/events.ndjson"; fi; \
	echo "--- sentinel ($$out/run.done)"; cat "$$out/run.done"; \
	echo "--- exit code $$code"; exit $$code

# Every module's tests with the race detector; the host tests build and drive
# the real binaries.
test: build
	$(GO) vet ./... && (cd sdk && $(GO) vet ./...)
	AVENOR_TEST_BIN=$(BIN) $(GO) test -race -count=1 ./...
	cd sdk && $(GO) test -race -count=1 ./...
	@for m in $(PLUGIN_MODULES); do (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done
	@# The sdk (with its examples) and every plugin module also build, tests
	@# included, outside the workspace against only what their go.mod says, so
	@# drift between the sdk and a plugin cannot hide behind go.work. A plugin
	@# module points at the unpublished sdk with a replace (../../sdk).
	@for m in sdk $(PLUGIN_MODULES); do echo "cd $$m && GOWORK=off $(GO) build ./... && GOWORK=off $(GO) test -count=1 -run '^$$' ./..."; \
		(cd $$m && GOWORK=off $(GO) build ./... && GOWORK=off $(GO) test -count=1 -run '^$$' ./... >/dev/null) || exit 1; done

test-short:
	$(GO) test -short ./... && (cd sdk && $(GO) test -short ./...)

# Real runtimes: installs the pinned agent CLIs from npm into the user
# cache (e2e/install.sh, reused across runs) and drives them through the built
# avenor, offline against the fake LLM in e2e/fakellm. Only an unreachable npm
# registry turns this into a loud SKIP; any install or test failure fails.
e2e: build
	@# The board in headless Chromium (hosttest/board_browser_test.go, tag browser): .ci/run
	@# installs Debian's chromium; AVENOR_REQUIRE_BROWSER makes a missing one fail, not skip.
	AVENOR_TEST_BIN=$(BIN) AVENOR_REQUIRE_BROWSER=1 $(GO) test -tags browser -count=1 -timeout 10m -run '^TestBrowser' -v ./hosttest/
	@clis=$$(e2e/install.sh); rc=$$?; \
	if [ $$rc -eq 3 ]; then \
		echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'; \
		echo '!!! SKIP make e2e: the npm registry is unreachable (npm ping failed, see above);'; \
		echo '!!! the real runtimes were NOT tested.'; \
		echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'; exit 0; fi; \
	[ $$rc -eq 0 ] || { echo "make e2e: e2e/install.sh failed (exit $$rc)"; exit $$rc; }; \
	while IFS='=' read -r k v; do [ -n "$$k" ] && export "$$k=$$v"; done <<< "$$clis"; \
	echo "AVENOR_TEST_BIN=$(BIN) $(GO) test -tags e2e -count=1 -timeout 25m -v ./e2e/..."; \
	AVENOR_TEST_BIN=$(BIN) $(GO) test -tags e2e -count=1 -timeout 25m -v ./e2e/...

# Regenerates docs/cli.md, docs/man/, docs/completion/ and the marked sections
# of the hand-written pages (capability matrix, config keys, event tables) from
# the command tree, host/config, host/event and the built plugins' Describe.
docs: build
	$(BIN)/avenor docs --src docs --plugin-dir $(BIN)

# Every benchmark in bench/ once (bench/RESULTS.md records them), then the real
# runtime's overhead: one opencode-acp prompt through avenor against the
# same prompt driven directly over ACP, and spawn → first agent event under avenor stable with a warm
# pool against without, fake LLM, median of 10 each (e2e TestTimingOpencode, TestTimingWarmOpencode). Its CLIs
# come from e2e/install.sh (cached in ~/.cache/avenor-e2e); only opencode's and gemini's pins are
# installed (the e2e harness needs both set); an unreachable npm registry is a loud SKIP. All output
# goes to bench/out.txt.
bench: build
	set -o pipefail; AVENOR_TEST_BIN=$(BIN) $(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 20m ./bench/ | tee bench/out.txt
	@set -o pipefail; pins=$$(grep -oE '"AVENOR_E2E_(OPENCODE|GEMINI)=[^"]+"' e2e/install.sh | tr -d '"'); \
	[ $$(wc -w <<< "$$pins") -eq 2 ] || { echo "make bench: e2e/install.sh has no AVENOR_E2E_OPENCODE/GEMINI pins to install"; exit 1; }; \
	clis=$$(e2e/install.sh $$pins); rc=$$?; \
	if [ $$rc -eq 3 ]; then \
		echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'; \
		echo '!!! SKIP make bench real-runtime overhead: the npm registry is unreachable'; \
		echo '!!! (npm ping failed, see above); TestTimingOpencode was NOT run.'; \
		echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'; exit 0; fi; \
	[ $$rc -eq 0 ] || { echo "make bench: e2e/install.sh failed (exit $$rc)"; exit $$rc; }; \
	while IFS='=' read -r k v; do [ -n "$$k" ] && export "$$k=$$v"; done <<< "$$clis"; \
	echo "AVENOR_TEST_BIN=$(BIN) AVENOR_E2E_TIMING_ROUNDS=10 $(GO) test -tags e2e -count=1 -run '^TestTiming(Opencode|WarmOpencode|SandboxOpencode)$$' -v ./e2e/"; \
	AVENOR_TEST_BIN=$(BIN) AVENOR_E2E_TIMING_ROUNDS=10 $(GO) test -tags e2e -count=1 -run '^TestTiming(Opencode|WarmOpencode|SandboxOpencode)$$' -v -timeout 20m ./e2e/ | tee -a bench/out.txt

# The reliability suite (hosttest/reliability_*_test.go, build tag reliability): crash
# matrix, soak, security, bad input. Bounded for CI; the full run is e.g.
# RELIABILITY_TRIALS=100 RELIABILITY_SOAK_RUNS=1000 RELIABILITY_SOAK_SPAWNS=200.
# RELIABILITY_SEED replays a failed run's random choices.
RELIABILITY_TRIALS ?= 20
reliability: build
	AVENOR_TEST_BIN=$(BIN) RELIABILITY_TRIALS=$(RELIABILITY_TRIALS) $(GO) test -tags reliability -count=1 -timeout 30m -run 'Reliability|CrashMatrix|Soak|BadInput|BadRuntimeOutput|StablePluginKilledDuringPermission|ControlSocketModes|HTTPDebugRefusesNonLoopback|HTTPDebugRequiresToken|PinnedPluginWrongHash|SecretsAcrossFailures' ./hosttest/

# Fuzzing: every Fuzz* target of every module, FUZZTIME each, one
# after another — the long runs, outside CI. A failing input is written to
# the package's testdata/fuzz/<FuzzName>/: fix the bug and commit it as a
# seed; `make test` (CI) replays every committed seed. FUZZMINIMIZETIME bounds
# the minimization of each new input (go's default, 60s, stalls short runs);
# FUZZFLAGS passes more flags, e.g. FUZZFLAGS=-parallel=1 on a shared machine.
FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 2s
FUZZFLAGS ?=
fuzz:
	@failed=""; for m in $(MODULES); do \
		for d in $$(cd $$m && $(GO) list -f '{{.Dir}}' ./...); do \
			for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$d/*_test.go 2>/dev/null | cut -d' ' -f2); do \
				echo "cd $${d#$(CURDIR)/} && $(GO) test -run '^$$' -fuzz '^$$f$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $(FUZZFLAGS) ."; \
				(cd $$d && $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $(FUZZFLAGS) .) \
					|| failed="$$failed $${d#$(CURDIR)/}:$$f"; \
			done; done; done; \
	if [ -n "$$failed" ]; then echo "make fuzz: failing targets:$$failed"; exit 1; fi

tools:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GRPC_VERSION)
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

proto: tools
	cd sdk && $(TOOLS)/buf generate

# The wire contract's discipline: buf lint; no breaking change against protocol
# v1 as it shipped (sdk/proto-baseline, a copy never edited); the committed
# generated code is what the pinned generators make of the proto.
proto-check: tools
	cd sdk && $(TOOLS)/buf lint
	cd sdk && $(TOOLS)/buf breaking proto --against proto-baseline/v1.binpb
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && (cd sdk && $(TOOLS)/buf generate --output "$$tmp") && \
		diff -r "$$tmp/internal/runtimepb" sdk/internal/runtimepb || \
		{ echo "sdk/internal/runtimepb is not what the proto generates: run make proto and commit it"; exit 1; }

# go vet and staticcheck (pinned; staticcheck.conf) in every module, and gofmt.
lint: tools
	@for m in $(MODULES); do echo "vet + staticcheck: $$m"; \
		(cd $$m && $(GO) vet ./... && $(TOOLS)/staticcheck ./...) || exit 1; done
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v /internal/runtimepb/))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

clean:
	rm -rf $(BIN) dist

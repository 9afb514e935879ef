# host/opencode/opencode.mk — the OpenCode adapter (included by the Makefile).
#
#   make opencode            $(BUILD)/opencode/: ocbg_opencode.node + ocbg.js (+ ocbg.so)
#   make install-opencode    into $(XDG_CONFIG_HOME)/opencode/plugin (default ~/.config/...),
#                            or PROJECT=dir: into dir/.opencode/plugin; the TUI panel beside it
#                            (opencode/ocbg-tui, listed in tui.json)
#   make check-tui-state     the TUI panel's state logic under node
#   make e2e-tui             the TUI panel in the real TUI, under tmux
#   make e2e                 real OpenCode (pinned, installed with npm into $(BUILD)/opencode/npm)
#                            with a scripted fake model; see host/opencode/NOTES.md
#   make e2e-compare         ocbg against OpenCode's own background mode (figures: plain folder, small and large project)
#   make e2e-compare-tui     the same in the plain TUI, whose plugins get OpenCode's in-process client (figures)
#   make e2e-bashperm-record OpenCode's own bash permission questions for the corpus, as a fixture
#   make check-opencode      the adapter against its stub plugin, under node and OpenCode's Bun
#   make package             $(BUILD)/ocbg-$(VERSION).tgz: the npm package (OpenCode installs it by name)

OC_DIR        := $(BUILD)/opencode
OC_NPM        := $(OC_DIR)/npm
OPENCODE_VERSION   ?= 1.18.33
NODE_API_HEADERS_VERSION ?= 1.9.0
# zod: the version @opencode-ai/plugin $(OPENCODE_VERSION) depends on, shipped beside ocbg.js.
# jsonc-parser: the JSONC reader OpenCode $(OPENCODE_VERSION) reads its config files with
# (ocbg_options.mjs reads them the same way), shipped beside ocbg.js too. Each is
# pinned by version and by its tarball's integrity (npm's sha512), checked after the install.
ZOD_VERSION   ?= 4.1.8
ZOD_INTEGRITY := sha512-5R1P+WwQqmmMIEACyzSvo4JXHY5WiAFHRMg+zBZKgKS+Q1viRa0C1hmUKtHltoIFKtIdki3pRxkmpP74jnNYHQ==
JSONC_PARSER_VERSION   ?= 3.3.1
JSONC_PARSER_INTEGRITY := sha512-HUgH65KyejrUFPvHFPbqOY0rsFip3Bo5wb4ngvdi1EpCYWUQDC5V+Y7mZws+DLkr4M//zQJoanu1SP+87Dv1oQ==
OC_NPM_STAMP  := $(OC_NPM)/.stamp-$(OPENCODE_VERSION)-$(NODE_API_HEADERS_VERSION)-jsonc-$(JSONC_PARSER_VERSION)
OC_HDR_STAMP  := $(OC_NPM)/.stamp-headers-$(NODE_API_HEADERS_VERSION)-zod-$(ZOD_VERSION)-jsonc-$(JSONC_PARSER_VERSION)
OC_BIN        := $(OC_NPM)/node_modules/opencode-linux-x64/bin/opencode
OC_NAPI_INC   := $(OC_NPM)/node_modules/node-api-headers/include
OC_ADDON      := $(OC_DIR)/ocbg_opencode.node
OC_STUB_DIR   := $(OC_DIR)/stub
NPM           ?= npm
NODE          ?= node
XDG_CONFIG_HOME ?= $(HOME)/.config
PROJECT       ?=
OC_PLUGIN_DIR := $(if $(PROJECT),$(PROJECT)/.opencode/plugin,$(XDG_CONFIG_HOME)/opencode/plugin)
# The TUI entry: outside the scanned plugin/ folder (OpenCode would load it as a
# server plugin), listed by its absolute path in tui.json.
OC_TUI_DIR    := $(if $(PROJECT),$(abspath $(PROJECT))/.opencode/ocbg-tui,$(XDG_CONFIG_HOME)/opencode/ocbg-tui)
OC_TUI_JSON   := $(if $(PROJECT),$(abspath $(PROJECT))/tui.json,$(XDG_CONFIG_HOME)/opencode/tui.json)
OC_TUI_SRC    := host/opencode/tui/ocbg_tui.js host/opencode/tui/panel_state.mjs

.PHONY: opencode opencode-npm install-opencode uninstall-opencode check-opencode e2e

# Pinned packages from the npm registry into the build tree: Node-API headers
# for the addon, zod and jsonc-parser (shipped with it), and OpenCode itself
# (with @opencode-ai/plugin) for e2e. The first three (small) are all that
# building and installing need.
# oc_integrity: fails unless the installed NAME's lock entry has INTEGRITY.
oc_integrity = $(NODE) -e 'const [n, want] = process.argv.slice(1), got = require("$(abspath $(OC_NPM))/node_modules/.package-lock.json") \
    .packages["node_modules/" + n]?.integrity; if (got !== want) { console.error(n + ": integrity " + got + \
    ", pinned " + want); process.exit(1); }' $(1) $(2)
OC_SHIPPED := zod@$(ZOD_VERSION) jsonc-parser@$(JSONC_PARSER_VERSION)
$(OC_HDR_STAMP):
	@mkdir -p $(OC_NPM)
	@test -f $(OC_NPM)/package.json || echo '{"private":true}' > $(OC_NPM)/package.json
	cd $(OC_NPM) && $(NPM) install --no-audit --no-fund --loglevel=error node-api-headers@$(NODE_API_HEADERS_VERSION) \
	    $(OC_SHIPPED)
	@$(call oc_integrity,zod,$(ZOD_INTEGRITY)) && $(call oc_integrity,jsonc-parser,$(JSONC_PARSER_INTEGRITY))
	@touch $@

$(OC_NPM_STAMP):
	@mkdir -p $(OC_NPM)
	@test -f $(OC_NPM)/package.json || echo '{"private":true}' > $(OC_NPM)/package.json
	cd $(OC_NPM) && $(NPM) install --no-audit --no-fund --loglevel=error \
	    node-api-headers@$(NODE_API_HEADERS_VERSION) opencode-ai@$(OPENCODE_VERSION) \
	    @opencode-ai/plugin@$(OPENCODE_VERSION) $(OC_SHIPPED)
	@$(call oc_integrity,zod,$(ZOD_INTEGRITY)) && $(call oc_integrity,jsonc-parser,$(JSONC_PARSER_INTEGRITY))
	@touch $@

opencode-npm: $(OC_NPM_STAMP) ## the pinned OpenCode (for the e2e suites), from npm

# The addon, one object per host/opencode/*.c (test/ holds the stub). Every
# object depends on every header there: the files share adapter.h.
OC_SRC        := $(sort $(wildcard host/opencode/*.c))
OC_HDR        := $(sort $(wildcard host/opencode/*.h))
OC_OBJ        := $(OC_SRC:host/opencode/%.c=$(OC_DIR)/obj/%.o)

$(OC_OBJ): $(OC_DIR)/obj/%.o: host/opencode/%.c $(OC_HDR) include/ocp.h $(OC_HDR_STAMP) | $(LIBS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -fPIC -pthread $(SAN) $(CFLAGS) -D_GNU_SOURCE -Iinclude \
	    -isystem $(OC_NAPI_INC) -isystem $(TS_DIR)/include -fvisibility=hidden -c $< -o $@

# napi_* symbols are left undefined, resolved by the process that loads the
# addon (Bun inside OpenCode, or node). cJSON is compiled in ($(LIB_A)).
$(OC_ADDON): $(OC_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -fPIC -pthread $(SAN) $(CFLAGS) -shared -o $@ $(OC_OBJ) $(LIB_A) -ldl -lpthread

$(OC_DIR)/ocbg.js $(OC_DIR)/ocbg_options.mjs: $(OC_DIR)/%: host/opencode/%
	@mkdir -p $(dir $@)
	cp $< $@

$(OC_DIR)/ocbg_tui.js $(OC_DIR)/panel_state.mjs: $(OC_DIR)/%: host/opencode/tui/%
	@mkdir -p $(dir $@)
	cp $< $@

# zod and jsonc-parser beside ocbg.js (their imports find node_modules/ first).
OC_ZOD := $(OC_DIR)/node_modules/zod/package.json
OC_JSONC := $(OC_DIR)/node_modules/jsonc-parser/package.json
$(OC_ZOD) $(OC_JSONC): $(OC_DIR)/node_modules/%/package.json: $(OC_HDR_STAMP)
	rm -rf $(OC_DIR)/node_modules/$* && mkdir -p $(OC_DIR)/node_modules
	cp -a $(OC_NPM)/node_modules/$* $(OC_DIR)/node_modules/$*
	@touch $@

$(OC_DIR)/ocbg.so: $(BUILD)/ocbg.so
	@mkdir -p $(dir $@)
	cp $< $@

OC_FILES := $(OC_DIR)/ocbg.js $(OC_DIR)/ocbg_options.mjs $(OC_ADDON) $(OC_DIR)/ocbg.so
OC_TUI_FILES := $(OC_DIR)/ocbg_tui.js $(OC_DIR)/panel_state.mjs
opencode: $(OC_FILES) $(OC_TUI_FILES) $(OC_ZOD) $(OC_JSONC) ## build/opencode/: the adapter, ocbg.js, ocbg.so, the TUI panel

# Only ocbg.js is a .js directly in the folder: OpenCode loads every
# plugin/*.{ts,js} as a plugin (node_modules/ is not scanned).
install-opencode: opencode ## into ~/.config/opencode/plugin (PROJECT=dir: its .opencode/plugin)
	install -d $(DESTDIR)$(OC_PLUGIN_DIR) $(DESTDIR)$(OC_PLUGIN_DIR)/node_modules
	install -m 644 $(OC_DIR)/ocbg.js $(OC_DIR)/ocbg_options.mjs $(DESTDIR)$(OC_PLUGIN_DIR)/
	install -m 755 $(OC_ADDON) $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg_opencode.node
	install -m 755 $(OC_DIR)/ocbg.so $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.so
	for m in zod jsonc-parser; do rm -rf $(DESTDIR)$(OC_PLUGIN_DIR)/node_modules/$$m && \
	  cp -R $(OC_DIR)/node_modules/$$m $(DESTDIR)$(OC_PLUGIN_DIR)/node_modules/$$m || exit 1; done
	install -d $(DESTDIR)$(OC_TUI_DIR)
	install -m 644 $(OC_TUI_FILES) $(DESTDIR)$(OC_TUI_DIR)/
	$(NODE) host/opencode/tui/tui_config.mjs $(DESTDIR)$(OC_TUI_JSON) $(OC_TUI_DIR)/ocbg_tui.js
	@echo "ocbg: installed into $(DESTDIR)$(OC_PLUGIN_DIR) (the TUI panel: $(DESTDIR)$(OC_TUI_DIR))"

uninstall-opencode: ## remove what install-opencode put
	rm -f $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.js $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg_options.mjs \
	    $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg_opencode.node $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.so
	rm -rf $(DESTDIR)$(OC_PLUGIN_DIR)/node_modules/zod $(DESTDIR)$(OC_PLUGIN_DIR)/node_modules/jsonc-parser
	-rmdir $(DESTDIR)$(OC_PLUGIN_DIR)/node_modules 2>/dev/null
	rm -f $(DESTDIR)$(OC_TUI_DIR)/ocbg_tui.js $(DESTDIR)$(OC_TUI_DIR)/panel_state.mjs
	-rmdir $(DESTDIR)$(OC_TUI_DIR) 2>/dev/null
	$(NODE) host/opencode/tui/tui_config.mjs --remove $(DESTDIR)$(OC_TUI_JSON) $(OC_TUI_DIR)/ocbg_tui.js

# The stub plugin, installed as ocbg.so beside a copy of the addon.
OC_STUB_SRC := host/opencode/test/stub_plugin.c host/opencode/test/stub_dirs.c host/opencode/test/stub_ui.c
$(OC_STUB_DIR)/ocbg.so: $(OC_STUB_SRC) host/opencode/test/stub_dirs.h host/opencode/test/stub_ui.h include/ocp.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -fPIC -pthread $(SAN) $(CFLAGS) -D_GNU_SOURCE -Iinclude -isystem $(TS_DIR)/include \
	    -fvisibility=hidden -shared -Wl,-z,defs -o $@ $(OC_STUB_SRC) $(LIB_A) -lpthread

$(OC_STUB_DIR)/ocbg_opencode.node: $(OC_ADDON)
	@mkdir -p $(dir $@)
	cp $< $@

$(OC_STUB_DIR)/ocbg.js $(OC_STUB_DIR)/ocbg_options.mjs: $(OC_STUB_DIR)/%: host/opencode/%
	@mkdir -p $(dir $@)
	cp $< $@

# node_modules: @opencode-ai/plugin (zod) as OpenCode's config dir would have it,
# and jsonc-parser (ocbg_options.mjs).
$(OC_STUB_DIR)/node_modules: $(OC_NPM_STAMP)
	@mkdir -p $(dir $@)
	ln -sfn ../npm/node_modules $@

OC_STUB := $(OC_STUB_DIR)/ocbg.so $(OC_STUB_DIR)/ocbg_opencode.node $(OC_STUB_DIR)/ocbg.js \
    $(OC_STUB_DIR)/ocbg_options.mjs $(OC_STUB_DIR)/node_modules

# The adapter with its stub plugin and a fake SDK client, no server: under node
# and under the Bun inside OpenCode (BUN_BE_BUN=1).
# XDG_DATA_HOME: a fresh directory, where the adapter creates the data_dir.
OC_HARNESS_DATA := $(OC_DIR)/harness-data
check-opencode: $(OC_STUB) $(OC_NPM_STAMP) ## the adapter with a stub plugin, under node and Bun
	rm -rf $(OC_HARNESS_DATA) && mkdir -p $(OC_HARNESS_DATA)/node $(OC_HARNESS_DATA)/bun
	XDG_DATA_HOME=$(abspath $(OC_HARNESS_DATA))/node timeout -k 5 120 $(NODE) host/opencode/test/harness.mjs \
	    $(abspath $(OC_STUB_DIR))/ocbg.js
	XDG_DATA_HOME=$(abspath $(OC_HARNESS_DATA))/bun BUN_BE_BUN=1 timeout -k 5 120 $(OC_BIN) \
	    host/opencode/test/harness.mjs $(abspath $(OC_STUB_DIR))/ocbg.js
	$(MAKE) --no-print-directory check-tui-state

# The TUI panel's state logic (parsing, texts, rules), no terminal.
.PHONY: check-tui-state
check-tui-state: ## the TUI panel's state logic under node
	timeout -k 5 60 $(NODE) host/opencode/test/tui_state.mjs

# The npm package: host/opencode/package/package.mk.
include host/opencode/package/package.mk

# End to end: real `opencode serve`, fake model. e2e.mjs: ocbg installed into a
# project with install-opencode, the stub plugin listed with options.
# e2e_config.mjs: ocbg as users install it, each in its own HOME: the package
# (make package) by name from a fake npm registry, a source install in the
# scanned ~/.config/opencode/plugin with options in opencode.json, a bad option.
# e2e_bash_perm.mjs: ocbg's Bash asks OpenCode what OpenCode's own bash asks, for
# every line of host/opencode/test/bash_corpus.json, and refuses what a deny rule
# makes it refuse; OpenCode's side also against tests/fixtures/bash_permissions.json.
# E2E_ONLY=stub|ocbg (e2e.mjs only), config (e2e_config.mjs only), bashperm
# (e2e_bash_perm.mjs only) or worktree (e2e_worktree.mjs only); E2E_CASES=name,name runs only those scenario
# functions of e2e.mjs (exported by host/opencode/test/e2e/*.mjs).
E2E_TIMEOUT ?= 480
E2E_BASHPERM_TIMEOUT ?= 360
BASHPERM_CORPUS  := host/opencode/test/bash_corpus.json
BASHPERM_FIXTURE := tests/fixtures/bash_permissions.json
OC_BASHPERM_ARGS = --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) --ocbg-dir $(abspath $(OC_DIR)) \
    --work $(abspath $(OC_E2E))/bashperm --corpus $(BASHPERM_CORPUS)
E2E_ONLY ?=
E2E_CASES ?=
OC_E2E := $(OC_DIR)/e2e-run
OC_E2E_SCANNED := $(abspath $(OC_E2E))/config/scanned/home
e2e: $(OC_STUB) opencode $(OC_NPM_STAMP) $(OC_PKG) ## real OpenCode with a fake model (E2E_ONLY=stub|ocbg|config|bashperm|worktree)
	rm -rf $(OC_E2E)
	$(MAKE) --no-print-directory install-opencode PROJECT=$(abspath $(OC_E2E))/project
	$(MAKE) --no-print-directory install-opencode XDG_CONFIG_HOME=$(OC_E2E_SCANNED)/.config
	@rc=0; \
	if [ "$(E2E_ONLY)" != config ] && [ "$(E2E_ONLY)" != bashperm ] && [ "$(E2E_ONLY)" != worktree ]; then \
	  timeout -k 10 $(E2E_TIMEOUT) $(NODE) host/opencode/test/e2e.mjs \
	    --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) \
	    --stub-dir $(abspath $(OC_STUB_DIR)) --work $(abspath $(OC_E2E)) $(if $(E2E_ONLY),--only $(E2E_ONLY)) \
	    $(if $(E2E_CASES),--cases $(E2E_CASES)) || rc=1; \
	fi; \
	if [ -z "$(E2E_CASES)" ] && { [ -z "$(E2E_ONLY)" ] || [ "$(E2E_ONLY)" = config ]; }; then \
	  timeout -k 10 300 $(NODE) host/opencode/test/e2e_config.mjs --opencode $(abspath $(OC_BIN)) \
	    --package $(abspath $(OC_PKG)) --scanned-home $(OC_E2E_SCANNED) --work $(abspath $(OC_E2E))/config || rc=1; \
	fi; \
	if [ -z "$(E2E_CASES)" ] && { [ -z "$(E2E_ONLY)" ] || [ "$(E2E_ONLY)" = bashperm ]; }; then \
	  timeout -k 10 $(E2E_BASHPERM_TIMEOUT) $(NODE) host/opencode/test/e2e_bash_perm.mjs $(OC_BASHPERM_ARGS) \
	    --fixture $(BASHPERM_FIXTURE) || rc=1; \
	fi; \
	if [ -z "$(E2E_CASES)" ] && { [ -z "$(E2E_ONLY)" ] || [ "$(E2E_ONLY)" = worktree ]; }; then \
	  mkdir -p $(OC_E2E)/worktree && timeout -k 10 300 $(NODE) host/opencode/test/e2e_worktree.mjs \
	    --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) --ocbg-dir $(abspath $(OC_DIR)) \
	    --work $(abspath $(OC_E2E))/worktree || rc=1; \
	fi; \
	exit $$rc

# The TUI panel in the real TUI: OpenCode under tmux (its own socket), the
# panel installed by install-opencode PROJECT=..., the server part's side of the
# channel played by test/fake_view_plugin.js; asserts on the screen's text.
# Then the package (make package) by name from a fake registry in opencode.json
# and tui.json: both entries load.
OC_E2E_TUI := $(OC_DIR)/e2e-tui
# The whole suite: about 95 s at load 2, 205 s at load 7.5 (179 checks).
E2E_TUI_TIMEOUT ?= 480
.PHONY: e2e-tui
e2e-tui: opencode $(OC_NPM_STAMP) $(OC_PKG) ## the TUI panel in the real TUI under tmux (needs tmux)
	@command -v tmux >/dev/null || { echo "e2e-tui: needs tmux"; exit 1; }
	rm -rf $(OC_E2E_TUI)
	$(MAKE) --no-print-directory install-opencode PROJECT=$(abspath $(OC_E2E_TUI))/project
	timeout -k 10 $(E2E_TUI_TIMEOUT) $(NODE) host/opencode/test/e2e_tui.mjs --opencode $(abspath $(OC_BIN)) \
	    --npm-dir $(abspath $(OC_NPM)) --project $(abspath $(OC_E2E_TUI))/project --work $(abspath $(OC_E2E_TUI)) \
	    --package $(abspath $(OC_PKG))

# Records OpenCode's own answers for the corpus into $(BASHPERM_FIXTURE) (the C
# unit test reads it): after a corpus change, or a new pinned OpenCode.
.PHONY: e2e-bashperm-record
e2e-bashperm-record: opencode $(OC_NPM_STAMP) ## re-record tests/fixtures/bash_permissions.json from OpenCode
	@mkdir -p $(dir $(BASHPERM_FIXTURE))
	timeout -k 10 $(E2E_BASHPERM_TIMEOUT) $(NODE) host/opencode/test/e2e_bash_perm.mjs $(OC_BASHPERM_ARGS) \
	    --record $(BASHPERM_FIXTURE)

# ocbg against OpenCode's own background sub-agents (OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS),
# same fake model: parent model calls and the last child's idle → parent's wake latency for
# batches of 3 and 20 (CMP_BATCHES3, CMP_BATCHES20 per side), with the wake's hops inside the
# server (host/opencode/test/wake_trace.js) and the load average, printed as `name: value unit`
# lines (figures, not a pass/fail verdict), in a plain folder (12 files, no git repository: no
# snapshot), a small project (12 files) and a large one (CMP_LARGE_FILES files, whose snapshot
# takes a few hundred ms), made at run time (CMP_PROJECT: a list of plain, small, large).
# ~12 minutes on the shared 2-core machine, most of it the large project.
CMP_BATCHES3 ?= 10
CMP_BATCHES20 ?= 3
CMP_BATCHES20_LARGE ?= 1
CMP_PROJECT ?= plain,small,large
CMP_LARGE_FILES ?= 100000
CMP_TIMEOUT ?= 1200
OC_CMP := $(OC_DIR)/e2e-compare
.PHONY: e2e-compare
e2e-compare: opencode $(OC_NPM_STAMP) ## ocbg against OpenCode's own background mode (figures; ~12 min)
	timeout -k 10 $(CMP_TIMEOUT) $(NODE) host/opencode/test/e2e_compare.mjs \
	    --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) --ocbg-dir $(abspath $(OC_DIR)) \
	    --work $(abspath $(OC_CMP)) --batches3 $(CMP_BATCHES3) --batches20 $(CMP_BATCHES20) \
	    --batches20-large $(CMP_BATCHES20_LARGE) --project $(CMP_PROJECT) --large-files $(CMP_LARGE_FILES)

# The same gated batches of 3 in the plain TUI under tmux (no --port: the plugins' SDK client is
# OpenCode's in-process one, not HTTP), in a plain folder and a small git project (CMP_TUI_PROJECT),
# CMP_BATCHES3 per side: `cmptui_*` lines (host/opencode/test/e2e_compare_tui.mjs). ~6 minutes.
CMP_TUI_PROJECT ?= plain,small
OC_CMP_TUI := $(OC_DIR)/e2e-compare-tui
.PHONY: e2e-compare-tui
e2e-compare-tui: opencode $(OC_NPM_STAMP) ## the wake in the plain TUI (in-process client), ocbg against OpenCode's own (figures)
	@command -v tmux >/dev/null || { echo "e2e-compare-tui: needs tmux"; exit 1; }
	timeout -k 10 $(CMP_TIMEOUT) $(NODE) host/opencode/test/e2e_compare_tui.mjs \
	    --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) --ocbg-dir $(abspath $(OC_DIR)) \
	    --work $(abspath $(OC_CMP_TUI)) --batches3 $(CMP_BATCHES3) --project $(CMP_TUI_PROJECT)

# OpenCode's own pinned binary inside a bare Debian 11 (bullseye) root (glibc
# 2.31, no compiler, no libcjson, no libsqlite3: build-aux/bare-root, the roots
# make check-bare uses, $(BARE_ROOTS) of tests/bare/bare.mk), ocbg installed by
# name from the fake registry (make package's tarball): it loads, a background
# command and a sub-agent run to their notices (host/opencode/test/e2e_bare.mjs).
# Needs root (debootstrap, chroot, unshare). arm64: OpenCode's linux-arm64
# binary (npm pack opencode-linux-arm64) in the arm64 root, through qemu-user.
E2E_BARE_TIMEOUT ?= 600
E2E_BARE_ARM64_TIMEOUT ?= 1800
# The registry reachable here has opencode-linux-arm64 only up to 1.18.18 (no
# 1.18.33): the arm64 run uses that one, the package's engines.opencode widened
# to admit it in a repacked copy (--engines).
OC_ARM64_VERSION ?= 1.18.18
OC_BIN_arm64    := $(OC_NPM)/arm64-$(OC_ARM64_VERSION)/package/bin/opencode
.PHONY: e2e-bare e2e-bare-arm64
e2e-bare: $(OC_NPM_STAMP) $(OC_PKG) ## OpenCode + the package in a bare Debian 11 amd64 root (root)
	sh build-aux/bare-root amd64 $(BARE_ROOTS)/bullseye-amd64
	timeout -k 10 $(E2E_BARE_TIMEOUT) $(NODE) host/opencode/test/e2e_bare.mjs --root $(BARE_ROOTS)/bullseye-amd64 \
	    --opencode $(abspath $(OC_BIN)) --package $(abspath $(OC_PKG)) --arch x64

$(OC_BIN_arm64): $(OC_NPM_STAMP)
	rm -rf $(OC_NPM)/arm64-$(OC_ARM64_VERSION) && mkdir -p $(OC_NPM)/arm64-$(OC_ARM64_VERSION)
	cd $(OC_NPM)/arm64-$(OC_ARM64_VERSION) && $(NPM) pack --silent opencode-linux-arm64@$(OC_ARM64_VERSION) >/dev/null && \
	    tar -xzf opencode-linux-arm64-$(OC_ARM64_VERSION).tgz && rm opencode-linux-arm64-$(OC_ARM64_VERSION).tgz
	@test -x $@ && touch $@

e2e-bare-arm64: $(OC_BIN_arm64) $(OC_PKG) ## the same in a bare Debian 11 arm64 root, through qemu-user (root)
	sh build-aux/bare-root arm64 $(BARE_ROOTS)/bullseye-arm64
	timeout -k 10 $(E2E_BARE_ARM64_TIMEOUT) $(NODE) host/opencode/test/e2e_bare.mjs --root $(BARE_ROOTS)/bullseye-arm64 \
	    --opencode $(abspath $(OC_BIN_arm64)) --package $(abspath $(OC_PKG)) --arch arm64 \
	    $(if $(filter-out $(OPENCODE_VERSION),$(OC_ARM64_VERSION)),--engines ">=$(OC_ARM64_VERSION) <2")

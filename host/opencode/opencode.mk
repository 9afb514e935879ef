# host/opencode/opencode.mk — the OpenCode adapter (included by the Makefile).
#
#   make opencode            $(BUILD)/opencode/: ocbg_opencode.node + ocbg.js (+ ocbg.so)
#   make install-opencode    into $(XDG_CONFIG_HOME)/opencode/plugin (default ~/.config/...),
#                            or PROJECT=dir: into dir/.opencode/plugin
#   make e2e                 real OpenCode (pinned, installed with npm into $(BUILD)/opencode/npm)
#                            with a scripted fake model; see host/opencode/NOTES.md
#   make e2e-compare         ocbg against OpenCode's own background mode (figures)
#   make check-opencode      the adapter against its stub plugin, under node and OpenCode's Bun

OC_DIR        := $(BUILD)/opencode
OC_NPM        := $(OC_DIR)/npm
OPENCODE_VERSION   ?= 1.18.33
NODE_API_HEADERS_VERSION ?= 1.9.0
OC_NPM_STAMP  := $(OC_NPM)/.stamp-$(OPENCODE_VERSION)-$(NODE_API_HEADERS_VERSION)
OC_HDR_STAMP  := $(OC_NPM)/.stamp-headers-$(NODE_API_HEADERS_VERSION)
OC_BIN        := $(OC_NPM)/node_modules/opencode-linux-x64/bin/opencode
OC_NAPI_INC   := $(OC_NPM)/node_modules/node-api-headers/include
OC_ADDON      := $(OC_DIR)/ocbg_opencode.node
OC_STUB_DIR   := $(OC_DIR)/stub
NPM           ?= npm
NODE          ?= node
XDG_CONFIG_HOME ?= $(HOME)/.config
PROJECT       ?=
OC_PLUGIN_DIR := $(if $(PROJECT),$(PROJECT)/.opencode/plugin,$(XDG_CONFIG_HOME)/opencode/plugin)

.PHONY: opencode opencode-npm install-opencode uninstall-opencode check-opencode e2e

# Pinned packages from the npm registry into the build tree: Node-API headers
# for the addon, and OpenCode itself (with @opencode-ai/plugin) for e2e.
# The headers alone (small) are all that building and installing need.
$(OC_HDR_STAMP):
	@mkdir -p $(OC_NPM)
	@test -f $(OC_NPM)/package.json || echo '{"private":true}' > $(OC_NPM)/package.json
	cd $(OC_NPM) && $(NPM) install --no-audit --no-fund --loglevel=error node-api-headers@$(NODE_API_HEADERS_VERSION)
	@touch $@

$(OC_NPM_STAMP):
	@mkdir -p $(OC_NPM)
	@test -f $(OC_NPM)/package.json || echo '{"private":true}' > $(OC_NPM)/package.json
	cd $(OC_NPM) && $(NPM) install --no-audit --no-fund --loglevel=error \
	    node-api-headers@$(NODE_API_HEADERS_VERSION) opencode-ai@$(OPENCODE_VERSION) \
	    @opencode-ai/plugin@$(OPENCODE_VERSION)
	@touch $@

opencode-npm: $(OC_NPM_STAMP)

# The addon, one object per host/opencode/*.c (test/ holds the stub). Every
# object depends on every header there: the files share adapter.h.
OC_SRC        := $(sort $(wildcard host/opencode/*.c))
OC_HDR        := $(sort $(wildcard host/opencode/*.h))
OC_OBJ        := $(OC_SRC:host/opencode/%.c=$(OC_DIR)/obj/%.o)

$(OC_OBJ): $(OC_DIR)/obj/%.o: host/opencode/%.c $(OC_HDR) include/ocp.h $(OC_HDR_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -fPIC -pthread $(SAN) $(CFLAGS) -D_GNU_SOURCE -Iinclude \
	    -isystem $(OC_NAPI_INC) -fvisibility=hidden -c $< -o $@

# napi_* symbols are left undefined, resolved by the process that loads the
# addon (Bun inside OpenCode, or node).
$(OC_ADDON): $(OC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -fPIC -pthread $(SAN) $(CFLAGS) -shared -o $@ $(OC_OBJ) -lcjson -ldl -lpthread

$(OC_DIR)/ocbg.js: host/opencode/ocbg.js
	@mkdir -p $(dir $@)
	cp $< $@

$(OC_DIR)/ocbg.so: $(BUILD)/ocbg.so
	@mkdir -p $(dir $@)
	cp $< $@

opencode: $(OC_ADDON) $(OC_DIR)/ocbg.js $(OC_DIR)/ocbg.so

install-opencode: opencode
	install -d $(DESTDIR)$(OC_PLUGIN_DIR)
	install -m 644 $(OC_DIR)/ocbg.js $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.js
	install -m 755 $(OC_ADDON) $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg_opencode.node
	install -m 755 $(OC_DIR)/ocbg.so $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.so
	@echo "ocbg: installed into $(DESTDIR)$(OC_PLUGIN_DIR)"

uninstall-opencode:
	rm -f $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.js $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg_opencode.node \
	    $(DESTDIR)$(OC_PLUGIN_DIR)/ocbg.so

# The stub plugin, installed as ocbg.so beside a copy of the addon.
$(OC_STUB_DIR)/ocbg.so: host/opencode/test/stub_plugin.c include/ocp.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -fPIC -pthread $(SAN) $(CFLAGS) -D_GNU_SOURCE -Iinclude \
	    -fvisibility=hidden -shared -Wl,-z,defs -o $@ $< -lcjson -lpthread

$(OC_STUB_DIR)/ocbg_opencode.node: $(OC_ADDON)
	@mkdir -p $(dir $@)
	cp $< $@

$(OC_STUB_DIR)/ocbg.js: host/opencode/ocbg.js
	@mkdir -p $(dir $@)
	cp $< $@

# node_modules: @opencode-ai/plugin (zod) as OpenCode's config dir would have it.
$(OC_STUB_DIR)/node_modules: $(OC_NPM_STAMP)
	@mkdir -p $(dir $@)
	ln -sfn ../npm/node_modules $@

OC_STUB := $(OC_STUB_DIR)/ocbg.so $(OC_STUB_DIR)/ocbg_opencode.node $(OC_STUB_DIR)/ocbg.js \
    $(OC_STUB_DIR)/node_modules

# The adapter with its stub plugin and a fake SDK client, no server: under node
# and under the Bun inside OpenCode (BUN_BE_BUN=1).
# XDG_DATA_HOME: a fresh directory, where the adapter creates the data_dir.
OC_HARNESS_DATA := $(OC_DIR)/harness-data
check-opencode: $(OC_STUB) $(OC_NPM_STAMP)
	rm -rf $(OC_HARNESS_DATA) && mkdir -p $(OC_HARNESS_DATA)/node $(OC_HARNESS_DATA)/bun
	XDG_DATA_HOME=$(abspath $(OC_HARNESS_DATA))/node timeout -k 5 120 $(NODE) host/opencode/test/harness.mjs \
	    $(abspath $(OC_STUB_DIR))/ocbg.js
	XDG_DATA_HOME=$(abspath $(OC_HARNESS_DATA))/bun BUN_BE_BUN=1 timeout -k 5 120 $(OC_BIN) \
	    host/opencode/test/harness.mjs $(abspath $(OC_STUB_DIR))/ocbg.js

# End to end: real `opencode serve`, fake model, ocbg installed into a project
# with install-opencode, the stub plugin listed with options. E2E_ONLY=stub|ocbg;
# E2E_CASES=name,name runs only those scenario functions of e2e.mjs.
E2E_TIMEOUT ?= 480
E2E_ONLY ?=
E2E_CASES ?=
OC_E2E := $(OC_DIR)/e2e-run
e2e: $(OC_STUB) opencode $(OC_NPM_STAMP)
	rm -rf $(OC_E2E)
	$(MAKE) --no-print-directory install-opencode PROJECT=$(abspath $(OC_E2E))/project
	timeout -k 10 $(E2E_TIMEOUT) $(NODE) host/opencode/test/e2e.mjs \
	    --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) \
	    --stub-dir $(abspath $(OC_STUB_DIR)) --work $(abspath $(OC_E2E)) $(if $(E2E_ONLY),--only $(E2E_ONLY)) \
	    $(if $(E2E_CASES),--cases $(E2E_CASES))

# ocbg against OpenCode's own background sub-agents (OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS),
# same fake model: parent model calls and the last child's idle → parent's wake latency for
# batches of 3 and 20, printed as `name: value unit` lines (figures, not a pass/fail verdict).
CMP_BATCHES3 ?= 12
CMP_BATCHES20 ?= 3
CMP_TIMEOUT ?= 900
OC_CMP := $(OC_DIR)/e2e-compare
.PHONY: e2e-compare
e2e-compare: opencode $(OC_NPM_STAMP)
	timeout -k 10 $(CMP_TIMEOUT) $(NODE) host/opencode/test/e2e_compare.mjs \
	    --opencode $(abspath $(OC_BIN)) --npm-dir $(abspath $(OC_NPM)) --ocbg-dir $(abspath $(OC_DIR)) \
	    --work $(abspath $(OC_CMP)) --batches3 $(CMP_BATCHES3) --batches20 $(CMP_BATCHES20)

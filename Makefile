# ocbg — background tasks for coding agents. Plain GNU make.
# `make help` lists the targets (from the `##` comments beside them).
# Plain `make` only builds; installing missing system packages (apt-get, as
# root) is the `deps` step, which `make check`, `make demo` and .ci/run call.

VERSION   := 0.1.0
PREFIX    ?= /usr/local
LIBDIR    ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PLUGINDIR ?= $(LIBDIR)/ocp/plugins
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

CC      ?= cc
BUILD   ?= build
SAN     ?=
OPT     ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wwrite-strings
CFLAGS  ?=
# The plugin sees only the ABI, its own tree (plugin/) and the top-level
# folders by name ("hooks/events.h", "fork/fork.h"): no -I into hooks/, fork/,
# host/ or tests/. The simulated host, the tests and the benches add theirs.
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Iplugin -I. -isystem $(TS_DIR)/include
$(BUILD)/obj/host/%.o $(BUILD)/obj/tests/%.o $(BUILD)/obj/bench/%.o: CPPFLAGS += -Ihost/sim -Ihost/sim/host -Itests
ALL_CFLAGS = -std=c11 $(OPT) $(WARN) -fPIC -pthread $(SAN) $(CFLAGS)
# cJSON and SQLite are compiled in (build-aux/fetch-libs: pinned sources, see
# LIB_A below): ocbg.so needs nothing but the C library.
LDLIBS  += $(LIB_A) -lpthread -ldl -lm

# Every plugin source: entry and engine, event hooks, fork processing.
PLUGIN_SRC := $(sort $(wildcard plugin/*.c plugin/*/*.c base/*.c hooks/*.c fork/*.c))
# tree-sitter's runtime and its bash grammar, the pinned C sources OpenCode's own
# bash tool parses with (build-aux/fetch-tree-sitter; fetched once, shared by
# every BUILD), compiled into the plugin: ops/bash_asks.c reads command lines
# with them.
TS_DIR     := build/third_party
TS_STAMP   := $(TS_DIR)/.stamp-ts0.25.1-bash0.25.0
TS_OBJ     := $(BUILD)/obj/third_party/ts_runtime.o $(BUILD)/obj/third_party/ts_bash_parser.o \
              $(BUILD)/obj/third_party/ts_bash_scanner.o
PLUGIN_OBJ := $(PLUGIN_SRC:%.c=$(BUILD)/obj/%.o) $(TS_OBJ)
# The simulated host (library part; demo.c has the demo's main).
SIM_SRC    := $(filter-out host/sim/host/demo.c,$(sort $(wildcard host/sim/*/*.c)))
SIM_OBJ    := $(SIM_SRC:%.c=$(BUILD)/obj/%.o)
TAP_OBJ    := $(BUILD)/obj/tests/tap.o $(BUILD)/obj/tests/testlib.o $(BUILD)/obj/tests/shelltest.o $(BUILD)/obj/tests/simtest.o \
              $(BUILD)/obj/tests/storetest.o $(BUILD)/obj/tests/wtref.o
# Each tests/test_NAME.c becomes $(BUILD)/tests/NAME.t.
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
TESTS      := $(TEST_SRC:tests/test_%.c=$(BUILD)/tests/%.t)
# Small plugins used only by tests: tests/plugins/NAME.c -> $(BUILD)/test-plugins/NAME/NAME.so
TPLUG_SRC  := $(sort $(wildcard tests/plugins/*.c))
TPLUGS     := $(foreach p,$(TPLUG_SRC:tests/plugins/%.c=%),$(BUILD)/test-plugins/$(p)/$(p).so)
BENCH_SRC  := $(sort $(wildcard bench/*.c))
BENCHES    := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all deps deps-check help format format-check check check-layout demo check-asan check-tsan check-valgrind bench bench-host-cost \
        check-sanitizers check-install static-check compile-commands \
        install uninstall clean
.DEFAULT_GOAL := all
.SECONDEXPANSION:
# Keep intermediate objects (tests, benches): no rebuilds, no rm lines.
.SECONDARY:

all: deps-check $(BUILD)/ocbg.so ## build/ocbg.so, the plugin (installs nothing)

# Installs libcjson-dev (and the other build needs) when root, else names them.
# deps-check only names what is missing (plain `make` installs nothing).
deps-check:
	@sh build-aux/ensure-deps --check

deps: ## install what the build needs with apt-get when root (else name it)
	@sh build-aux/ensure-deps

$(BUILD)/obj/%.o: %.c | deps-check $(LIBS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -fvisibility=hidden -c $< -o $@

$(TS_STAMP):
	@sh build-aux/fetch-tree-sitter $(TS_DIR)

# Their own warnings are theirs: built without -Werror and the strict set.
TS_CFLAGS = -std=c11 $(OPT) -fPIC -pthread $(SAN) $(CFLAGS) -fvisibility=hidden -D_DEFAULT_SOURCE -w
$(BUILD)/obj/third_party/ts_runtime.o: $(TS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TS_CFLAGS) -I$(TS_DIR)/tree-sitter/src -I$(TS_DIR)/tree-sitter/include \
	    -c $(TS_DIR)/tree-sitter/src/lib.c -o $@
$(BUILD)/obj/third_party/ts_bash_%.o: $(TS_STAMP) plugin/ops/bash_chars.h
	@mkdir -p $(dir $@)
	$(CC) $(TS_CFLAGS) -I$(TS_DIR)/tree-sitter-bash/src $(if $(filter scanner,$*),-Iplugin -DOCBG_IN_TS_SCANNER \
	    -include ops/bash_chars.h) -c $(TS_DIR)/tree-sitter-bash/src/$*.c -o $@
$(BUILD)/obj/plugin/ops/bash_asks.o: $(TS_STAMP)
# A face words what an operation returns: the engine's headers #error in it
# (base/face_guard.h), so the boundary is the compiler's.
$(BUILD)/obj/plugin/face/%.o: CPPFLAGS += -DOCBG_FACE
$(BUILD)/obj/plugin/ops/bash_asks.o: CPPFLAGS += -isystem $(TS_DIR)/tree-sitter/include

# cJSON and SQLite, from the pinned sources build-aux/fetch-libs lays out in
# $(TS_DIR) (fetched once, shared by every BUILD), as one archive every link
# takes only what it uses from. Compiled without the sanitizers and without
# CFLAGS, as the system's libraries were (the fuzzers do not explore SQLite),
# with hidden symbols. SQLite: thread-safe (ocbg opens each connection
# NOMUTEX and keeps it to one thread at a time), no extension loading, no
# shared cache, no JSON functions (ocbg's SQL uses none), WAL commits that sync
# at checkpoints only (store.c sets synchronous=NORMAL too). cJSON at -O3: its
# parse of the 10 MB history took 13.9 ms (best of 30) against 15.1 at -O2 and
# 14.4 for Debian's libcjson 1.7.15 (-O2), which ocbg linked before.
LIBS_STAMP := $(TS_DIR)/.stamp-cjson1.7.19-sqlite3520000
LIB_A      := $(BUILD)/libthirdparty.a
LIB_CFLAGS  = -std=c11 $(OPT) -fPIC -pthread -fvisibility=hidden -D_DEFAULT_SOURCE -w
SQLITE_DEFS := -DSQLITE_THREADSAFE=1 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_SHARED_CACHE -DSQLITE_OMIT_JSON \
               -DSQLITE_OMIT_DEPRECATED -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 -DSQLITE_DEFAULT_FOREIGN_KEYS=0
$(LIBS_STAMP):
	@sh build-aux/fetch-libs $(TS_DIR)
$(BUILD)/obj/third_party/cjson.o: $(LIBS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -O3 -I$(TS_DIR)/include/cjson -c $(TS_DIR)/cjson/cJSON.c -o $@
$(BUILD)/obj/third_party/sqlite3.o: $(LIBS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) $(SQLITE_DEFS) -I$(TS_DIR)/include -c $(TS_DIR)/sqlite/sqlite3.c -o $@
$(LIB_A): $(BUILD)/obj/third_party/cjson.o $(BUILD)/obj/third_party/sqlite3.o
	@rm -f $@
	ar rcs $@ $^
# Every program and library linked with $(LDLIBS).
$(BUILD)/ocbg.so $(TESTS) $(TPLUGS) $(BUILD)/ocbg-demo $(BENCHES): $(LIB_A)

# Only ocp_plugin_entry is exported (-fvisibility=hidden plus a version script);
# -z defs refuses a library with an unresolved symbol.
$(BUILD)/ocbg.so: $(PLUGIN_OBJ) plugin/ocbg.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-z,defs -Wl,--version-script=plugin/ocbg.map \
	    -o $@ $(PLUGIN_OBJ) $(LDLIBS)

# Plugin internals for unit tests (linked statically into test binaries).
$(BUILD)/libocbg-internal.a: $(PLUGIN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libsimhost.a: $(SIM_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%.t: $(BUILD)/obj/tests/test_%.o $(TAP_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(TAP_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a $(LDLIBS)

# Programs the tests run (tests/tools/NAME.c -> $(BUILD)/test-tools/NAME).
TTOOLS := $(patsubst tests/tools/%.c,$(BUILD)/test-tools/%,$(sort $(wildcard tests/tools/*.c)))
$(BUILD)/test-tools/%: $(BUILD)/obj/tests/tools/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

$(BUILD)/test-plugins/%.so: $(BUILD)/obj/tests/plugins/$$(notdir $$*).o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-z,defs -o $@ $< $(LDLIBS)

$(BUILD)/ocbg-demo: $(BUILD)/obj/host/sim/host/demo.o $(BUILD)/libsimhost.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS)
# It checks its reports against the tests' reference (tests/wtref.c) and uses their shell lines.
$(BUILD)/bench/bench_worktree_report: $(TAP_OBJ)

# The tests find the plugin and the test plugins through these variables.
TEST_ENV = OCBG_PLUGIN_DIR=$(abspath $(BUILD)/plugin-dir) OCBG_BUILD=$(abspath $(BUILD))
PROVE ?= prove
PROVE_FLAGS ?= -f

# The plugin directory the simulated host loads: only ocbg.so in it.
$(BUILD)/plugin-dir/ocbg.so: $(BUILD)/ocbg.so
	@mkdir -p $(dir $@)
	cp $< $@

check: deps $(BUILD)/ocbg.so $(BUILD)/plugin-dir/ocbg.so $(TPLUGS) $(TTOOLS) $(TESTS) $(BUILD)/layout-check ## the tests (prove), after the layout, lock and face checks
	$(LAYOUT_FIXTURES)
	$(LAYOUT_RUN)
	$(LAYOUT_TEST_RUN)
	@sh build-aux/lock-check
	@CC="$(CC)" sh build-aux/face-check
	$(TEST_ENV) $(PROVE) $(PROVE_FLAGS) $(TESTS)

# The layout checker: file and function lengths, dependency cycles, layers
# (see build-aux/layout-check.c); its tests run it on tests/layout/fixtures/.
$(BUILD)/layout-check: build-aux/layout-check.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -D_GNU_SOURCE $(CFLAGS) -o $@ $<

LAYOUT_FIXTURES = LAYOUT_CHECK=$(abspath $(BUILD)/layout-check) $(PROVE) tests/layout/check-fixtures
# The real tree: sizes, cycles, and layers. The plugin (the ABI, plugin/, hooks/,
# fork/) and the simulated host (host/sim/, a folder a layer), by build-aux/layers;
# then the OpenCode addon with its test stub (host/opencode/), a program of its
# own, by build-aux/layers-opencode (a layer a line of modules). include/ocp.h
# carries the ABI's whole contract, as sqlite3.h does: its length is no warning.
LAYOUT_PATHS = include base fork hooks plugin host/sim
LAYOUT_RUN = $(BUILD)/layout-check --layers build-aux/layers -I include -I plugin -I . -I host/sim -I host/sim/host \
             --allow-long include/ocp.h $(LAYOUT_PATHS) && $(BUILD)/layout-check --layers build-aux/layers-opencode -I include host/opencode

# The tests, with test-sized limits (a test reads top to bottom, so it may be
# longer than plugin code); not tests/layout/fixtures, the checker's own bad
# inputs.
LAYOUT_TEST_PATHS = $(wildcard tests/*.c tests/*.h) tests/plugins tests/reliability
LAYOUT_TEST_RUN = $(BUILD)/layout-check --max-file-lines 800 --max-function-lines 120 -I tests -I include -I plugin \
                  -I . -I host/sim -I host/sim/host $(LAYOUT_TEST_PATHS)

check-layout: $(BUILD)/layout-check ## the layout checker on its fixtures, then on the tree and the tests
	$(LAYOUT_FIXTURES)
	$(LAYOUT_RUN)
	$(LAYOUT_TEST_RUN)


demo: deps $(BUILD)/plugin-dir/ocbg.so $(BUILD)/ocbg-demo ## run the demo: ocbg.so in the simulated host
	$(BUILD)/ocbg-demo $(BUILD)/plugin-dir

SAN_ASAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_TSAN := -fsanitize=thread

check-asan: ## the suite under AddressSanitizer + UBSan (build/asan)
	$(MAKE) check BUILD=build/asan SAN="$(SAN_ASAN)" OPT="-O1 -g" \
	    TEST_ENV="$(TEST_ENV) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OCBG_BUILD=$(abspath build/asan) OCBG_PLUGIN_DIR=$(abspath build/asan/plugin-dir) OCBG_TEST_TIMEOUT_SCALE=3"

check-tsan: ## the suite under ThreadSanitizer (build/tsan)
	$(MAKE) check BUILD=build/tsan SAN="$(SAN_TSAN)" OPT="-O1 -g" \
	    TEST_ENV="$(TEST_ENV) TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OCBG_BUILD=$(abspath build/tsan) OCBG_PLUGIN_DIR=$(abspath build/tsan/plugin-dir) OCBG_TEST_TIMEOUT_SCALE=5"

# --fair-sched: valgrind runs one thread at a time; without it a test thread
# waiting on a condition starves the plugin threads it waits for.
VALGRIND ?= valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
check-valgrind: ## the suite under valgrind memcheck (build/valgrind)
	$(MAKE) check BUILD=build/valgrind OPT="-O1 -g" PROVE_FLAGS="-f --exec '$(VALGRIND)'" \
	    TEST_ENV="$(TEST_ENV) OCBG_UNDER_VALGRIND=1 OCBG_BUILD=$(abspath build/valgrind) OCBG_PLUGIN_DIR=$(abspath build/valgrind/plugin-dir) OCBG_TEST_TIMEOUT_SCALE=30"

bench: deps $(BUILD)/plugin-dir/ocbg.so $(BENCHES) ## benchmarks: `name: value unit` lines
	@for b in $(BENCHES); do OCBG_PLUGIN_DIR=$(abspath $(BUILD)/plugin-dir) $$b || exit 1; done
	@$(MAKE) --no-print-directory bench-host-cost

# What ocbg costs OpenCode's event loop, in the adapter (needs node and npm for
# the adapter's headers; under OpenCode's own Bun too when make e2e installed it).
BENCH_HISTORY ?= ../shared/bench-data/history10mb.json.gz
bench-host-cost: opencode ## what ocbg costs OpenCode's event loop (node, Bun)
	@timeout 300 $(NODE) bench/bench_host_cost.mjs $(abspath $(OC_DIR))/ocbg.js $(abspath $(BENCH_HISTORY)) 2>/dev/null
	@if [ -x $(OC_BIN) ]; then BUN_BE_BUN=1 timeout 300 $(OC_BIN) bench/bench_host_cost.mjs \
	    $(abspath $(OC_DIR))/ocbg.js $(abspath $(BENCH_HISTORY)) 2>/dev/null; fi

# The .pc file is written at install time so that it always carries this
# install's PREFIX and directories.
install: all ## ocp.h, ocbg.so and the .pc file; PREFIX=/usr/local, DESTDIR
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 include/ocp.h $(DESTDIR)$(INCLUDEDIR)/ocp.h
	install -m 755 $(BUILD)/ocbg.so $(DESTDIR)$(PLUGINDIR)/ocbg.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@PLUGINDIR@|$(PLUGINDIR)|g' -e 's|@VERSION@|$(VERSION)|g' pkgconfig/opencode-plugin.pc.in \
	    > $(DESTDIR)$(PKGCONFIGDIR)/opencode-plugin.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/opencode-plugin.pc

# What CI runs beyond make check, a target each, so that .ci/run names them
# rather than repeating their lists (check-reliability: tests/reliability/).
# Sequential: each one uses both cores.
check-sanitizers: ## the suite under ASan+UBSan, TSan and valgrind, in turn
	$(MAKE) --no-print-directory check-asan
	$(MAKE) --no-print-directory check-tsan
	$(MAKE) --no-print-directory check-valgrind

check-install: ## install into a staging directory and find it with pkg-config
	@stage=$$(mktemp -d) && \
	$(MAKE) --no-print-directory install DESTDIR="$$stage" PREFIX=/usr >/dev/null && \
	test -f "$$stage/usr/include/ocp.h" && test -f "$$stage/usr/lib/ocp/plugins/ocbg.so" && \
	test -f "$$stage/usr/lib/pkgconfig/opencode-plugin.pc" && \
	PKG_CONFIG_SYSROOT_DIR="$$stage" PKG_CONFIG_PATH="$$stage/usr/lib/pkgconfig" \
	    pkg-config --variable=plugindir opencode-plugin && rm -rf "$$stage"

uninstall: ## remove what install put
	rm -f $(DESTDIR)$(INCLUDEDIR)/ocp.h $(DESTDIR)$(PLUGINDIR)/ocbg.so \
	    $(DESTDIR)$(PKGCONFIGDIR)/opencode-plugin.pc
	-rmdir $(DESTDIR)$(PLUGINDIR) 2>/dev/null

clean: ## remove build/
	rm -rf build

# The OpenCode adapter and its end-to-end suite (host/opencode/).
include host/opencode/opencode.mk

# Reliability: check-faults, chaos, fuzz, stress (tests/reliability/).
include tests/reliability/reliability.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The C style (.clang-format): the plugin, the ABI, the simulated host, the
# OpenCode adapter, the tests and benchmarks. clang-format is Debian's clang-format package.
FORMAT_FILES = $(sort $(wildcard include/*.h base/*.[ch] plugin/*.c plugin/*/*.[ch] hooks/*.[ch] fork/*.[ch] host/sim/*/*.[ch] \
                 host/opencode/*.[ch] $(FORMAT_TEST_FILES)))
# The tests, benchmarks and build tools too; not tests/layout/fixtures/, whose
# deliberately bad files the layout checker's tests count line by line.
FORMAT_TEST_FILES = tests/*.[ch] tests/bare/*.[ch] tests/plugins/*.c tests/reliability/*.[ch] \
                    tests/reliability/fuzz/*.[ch] tests/tools/*.c bench/*.[ch] build-aux/*.c
format: ## reformat the C sources in place (.clang-format)
	clang-format -i $(FORMAT_FILES)
format-check: ## fail when a C source differs from .clang-format's style
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: $(words $(FORMAT_FILES)) files follow .clang-format"

# Static checks (.ci/run runs them after format-check). cppcheck (Debian's) on
# the C of plugin/, hooks/, fork/ and host/: the warning and portability rules,
# with the build's includes; what it flags wrongly is in
# build-aux/cppcheck-suppressions, each with its reason. shellcheck (Debian's)
# on every shell script (a #! sh or bash line) in build-aux/, tests/ and .ci/.
CPPCHECK_FLAGS = --enable=warning,portability --std=c11 -D_GNU_SOURCE -Iinclude -Iplugin -I. -Ihost/sim -Ihost/sim/host \
                 -I$(TS_DIR)/include -I$(OC_NAPI_INC) --suppress='*:$(TS_DIR)/*' --suppress='*:$(OC_NPM)/*' \
                 --suppressions-list=build-aux/cppcheck-suppressions --error-exitcode=1 --quiet
static-check: $(LIBS_STAMP) $(OC_HDR_STAMP) ## cppcheck on plugin/ hooks/ fork/ host/, shellcheck on the shell scripts
	@cppcheck $(CPPCHECK_FLAGS) -j2 base plugin hooks fork host && echo "static-check: cppcheck finds nothing in base/ plugin/ hooks/ fork/ host/"
	@scripts=$$(find build-aux tests .ci -type f ! -path '*/corpus/*' ! -path '*/fixtures/*' \
	    -exec sh -c 'head -n 1 "$$1" | grep -qE "^#!.*[/ ](ba|da)?sh( |\$$)"' _ {} \; -print | LC_ALL=C sort) && \
	    shellcheck $$scripts && echo "static-check: shellcheck finds nothing in" $$scripts

# compile_commands.json (for clangd, clang-tidy, cppcheck --project): the
# compile lines make itself runs for the plugin, the simulated host, the tests,
# the benches and the OpenCode addon, read from make -nB (build-aux/compile-commands).
compile-commands: ## write compile_commands.json from the build's own compile lines
	@sh build-aux/compile-commands all $(TESTS) $(TPLUGS) $(BENCHES) $(OC_ADDON) > compile_commands.json.tmp && \
	    mv compile_commands.json.tmp compile_commands.json

# Every target with a `## what it does` comment, from this file and the .mk
# files it includes.
help: ## this list
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort -u | \
	    awk -F':.*## ' '{ printf "  make %-22s %s\n", $$1, $$2 }'

# Bare machines: the package in Debian 11 roots (tests/bare/); last, to see package.mk's compilers.
include tests/bare/bare.mk

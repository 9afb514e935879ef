# tests/reliability/reliability.mk — faults, chaos, fuzzing, stress,
# shutdown under load, bad input. Included by the main Makefile.
#
#   make check-faults   fault sweep + shutdown under load + bad input table (ASan+UBSan, build/asan)
#   make check-chaos    the scenario under event chaos, many seeds (ASan+UBSan)
#   make check-crash    the host SIGKILLed and restarted on its journal and ocbg's store (ASan+UBSan)
#   make stress         threads x random tool calls x thousands of tasks (SAN=tsan: ThreadSanitizer)
#   make check-stress-tsan   the same under ThreadSanitizer (build/tsan)
#   make fuzz           libFuzzer targets (clang, build/fuzz), FUZZ_SECONDS per target
#   make fuzz-long      every target to FUZZ_LONG_EXECS (1 million) executions each
#   make fuzz-merge     the new inputs of the runs that add coverage into the corpus
#   make check-reliability   all of the above with CI budgets

REL_DIR  := tests/reliability
REL_LIB_SRC := $(REL_DIR)/rel.c $(REL_DIR)/scenario.c
REL_LIB_OBJ := $(REL_LIB_SRC:%.c=$(BUILD)/obj/%.o)
REL_PROGS := faults chaos shutdown badinput stress crash
REL_BINS := $(REL_PROGS:%=$(BUILD)/reliability/%)

REL_ENV = OCBG_PLUGIN_DIR=$(abspath $(BUILD)/plugin-dir) OCBG_BUILD=$(abspath $(BUILD))

$(BUILD)/reliability/%: $(BUILD)/obj/$(REL_DIR)/%.o $(REL_LIB_OBJ) $(TAP_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(REL_LIB_OBJ) $(TAP_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a $(LDLIBS)

# The crash test has its two lives in a file of their own.
$(BUILD)/reliability/crash: $(BUILD)/obj/$(REL_DIR)/crash.o $(BUILD)/obj/$(REL_DIR)/crash_lives.o $(REL_LIB_OBJ) \
                            $(TAP_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a $(LDLIBS)

.PHONY: check-crash check-crash-run

# The fault sweep alone is linked with the SQLite calls of the plugin's store
# wrapped (sqlfault.c): it fails the n-th call of each (the plugin linked in,
# its sources untouched).
SQLFAULT_WRAP := sqlite3_open_v2 sqlite3_exec sqlite3_prepare_v2 sqlite3_prepare_v3 sqlite3_step \
                 sqlite3_bind_text sqlite3_bind_int64 sqlite3_bind_int sqlite3_bind_double sqlite3_bind_null \
                 store_open store_load store_write store_close
SQLFAULT_OBJ := $(BUILD)/obj/$(REL_DIR)/sqlfault.o

$(BUILD)/reliability/faults: $(BUILD)/obj/$(REL_DIR)/faults.o $(SQLFAULT_OBJ) $(REL_LIB_OBJ) $(TAP_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SQLFAULT_WRAP:%=-Wl,--wrap=%) -o $@ $< $(SQLFAULT_OBJ) $(REL_LIB_OBJ) $(TAP_OBJ) \
	    $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a $(LDLIBS)

.PHONY: rel-build check-faults check-faults-run check-chaos check-chaos-run stress check-stress-tsan \
        fuzz check-reliability

rel-build: deps $(BUILD)/ocbg.so $(BUILD)/plugin-dir/ocbg.so $(REL_BINS)

REL_ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
               OCBG_TEST_TIMEOUT_SCALE=3

# The sweep and the checks that go with it, under AddressSanitizer + UBSan.
check-faults: ## every host call and SQLite call failed in turn (ASan)
	$(MAKE) check-faults-run BUILD=build/asan SAN="$(SAN_ASAN)" OPT="-O1 -g"

# All three run; the target fails if any failed.
check-faults-run: rel-build
	@rc=0; for t in badinput shutdown faults; do \
	    echo "== $$t"; \
	    $(REL_ENV) $(REL_ASAN_ENV) $(BUILD)/reliability/$$t || rc=1; \
	done; exit $$rc

CHAOS_SEEDS ?= 100
check-chaos: ## events dropped, duplicated, delayed, reordered (ASan; CHAOS_SEEDS)
	$(MAKE) check-chaos-run BUILD=build/asan SAN="$(SAN_ASAN)" OPT="-O1 -g"

check-chaos-run: rel-build
	$(REL_ENV) $(REL_ASAN_ENV) REL_CHAOS_SEEDS=$(CHAOS_SEEDS) $(BUILD)/reliability/chaos

# Per seed, life 1 is killed (SIGKILL) at a seed-chosen moment and life 2
# restarts on the same journal and database (see crash.c). CRASH_SEEDS=n.
CRASH_SEEDS ?= 100
check-crash: ## the host killed and restarted mid-task (ASan; CRASH_SEEDS)
	$(MAKE) check-crash-run BUILD=build/asan SAN="$(SAN_ASAN)" OPT="-O1 -g"

check-crash-run: rel-build
	$(REL_ENV) $(REL_ASAN_ENV) CRASH_SEEDS=$(CRASH_SEEDS) $(BUILD)/reliability/crash

STRESS_THREADS ?= 8
STRESS_OPS ?= 1500
stress: rel-build ## many threads calling every tool at once
	$(REL_ENV) REL_STRESS_THREADS=$(STRESS_THREADS) REL_STRESS_OPS=$(STRESS_OPS) \
	    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OCBG_TEST_TIMEOUT_SCALE=5 $(BUILD)/reliability/stress

# Under ThreadSanitizer (fewer operations: it runs 5-15x slower).
STRESS_TSAN_OPS ?= 1000
check-stress-tsan: ## the stress run under ThreadSanitizer
	$(MAKE) stress BUILD=build/tsan SAN="$(SAN_TSAN)" OPT="-O1 -g" STRESS_OPS=$(STRESS_TSAN_OPS)

# ---- fuzzing: clang libFuzzer, the plugin's objects built by clang with
# coverage (build/fuzz; binaries, logs, the runs' corpus and artifacts in
# build/fuzz/fuzz/). FUZZ_SECONDS per target. A crash lands in
# build/fuzz/fuzz/artifacts/; copy it to tests/reliability/regress/TARGET/
# and it is replayed by every `make fuzz` (and `make fuzz-regress`) from then
# on, as is tests/reliability/corpus/TARGET/ (see fuzz-merge).
FUZZ_TARGETS := tool_args events fork options store_load bash_asks ui_request worktree_report
FUZZ_SECONDS ?= 30
SAN_FUZZ := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_COMMON_OBJ := $(BUILD)/obj/$(REL_DIR)/fuzz/fuzz_common.o
# Every target's libFuzzer flags (-timeout: seconds an input may take), then
# each one's own (FUZZ_FLAGS_<target>; a flag given twice: the last counts).
FUZZ_FLAGS := -timeout=20 -rss_limit_mb=3072 -max_len=16384
# bash_asks reads a line in linear time (its parse stops at 250 ms of CPU):
# an input slower than this many seconds is a failure.
FUZZ_BASH_ASKS_TIMEOUT ?= 2
FUZZ_FLAGS_bash_asks := -timeout=$(FUZZ_BASH_ASKS_TIMEOUT)
# The targets that keep a world between inputs (a host, a plugin instance)
# allocate in one input what a later one frees, and libFuzzer's leak check
# after such an input is a scan of the whole heap: tool_args ran 1,000
# inputs/s with it, 10,000 without. They check for leaks themselves each
# time their world is torn down (fuzz_common.h fz_leak_check).
FUZZ_FLAGS_tool_args := -detect_leaks=0
FUZZ_FLAGS_events := -detect_leaks=0
FUZZ_FLAGS_options := -detect_leaks=0
FUZZ_FLAGS_ui_request := -detect_leaks=0
FUZZ_RUN = sh $(REL_DIR)/fuzz/fuzz_run.sh run $(BUILD) $(REL_DIR)

$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/$(REL_DIR)/fuzz/fuzz_%.o $(FUZZ_COMMON_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a $(LDLIBS)

# The panel's channel: the adapter's pure half of it too.
$(BUILD)/fuzz/fuzz_ui_request: $(BUILD)/obj/host/opencode/ui_reply.o

# tree-sitter's runtime without comparison tracing: its comparisons are of
# parse-table states and symbols, not of input bytes (the bash lexer and
# scanner keep theirs), and tracing them cost bash_asks a third of its speed.
build/fuzz/obj/third_party/ts_runtime.o: CFLAGS += -fno-sanitize-coverage=trace-cmp

.PHONY: fuzz-run fuzz-regress fuzz-regress-run
fuzz: ## libFuzzer targets (clang), FUZZ_SECONDS each
	$(MAKE) fuzz-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

fuzz-regress: ## replay the seed corpus and saved crashes
	$(MAKE) fuzz-regress-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

# Replay the seed corpus and every saved crash once.
fuzz-regress-run: deps $(FUZZ_BINS)
	@rc=0; $(foreach t,$(FUZZ_TARGETS),sh $(REL_DIR)/fuzz/fuzz_run.sh regress $(BUILD) $(REL_DIR) $(t) \
	    $(FUZZ_FLAGS) $(FUZZ_FLAGS_$(t)) || rc=1;) exit $$rc

# Every target in turn; fails when one failed.
fuzz-run: fuzz-regress-run
	@rc=0; $(foreach t,$(FUZZ_TARGETS),$(FUZZ_RUN) $(t) -max_total_time=$(FUZZ_SECONDS) \
	    $(FUZZ_FLAGS) $(FUZZ_FLAGS_$(t)) || rc=1;) exit $$rc

# Every target to FUZZ_LONG_EXECS executions of its own (-runs=; not in CI),
# one after another (make -j2 fuzz-long: two at once), then each one's
# result; fails when one crashed or ran fewer. FUZZ_TARGETS=name: that one.
# Measured times: docs/testing.md.
FUZZ_LONG_EXECS ?= 1000000
.PHONY: fuzz-long fuzz-long-run
fuzz-long: ## every fuzz target to FUZZ_LONG_EXECS (1 million) executions each (not in CI)
	$(MAKE) fuzz-long-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

fuzz-long-run: $(FUZZ_TARGETS:%=fuzz-long/%)
	@echo "== fuzz-long: $(FUZZ_LONG_EXECS) executions per target"
	@sh $(REL_DIR)/fuzz/fuzz_run.sh summary $(BUILD) $(FUZZ_TARGETS)

# A target's failure is in its result, which fuzz-long-run reads: the others run on.
fuzz-long/%: fuzz-regress-run
	-@$(FUZZ_RUN) $* -runs=$(FUZZ_LONG_EXECS) $(FUZZ_FLAGS) $(FUZZ_FLAGS_$*)

# The inputs the runs found (build/fuzz/fuzz/corpus/TARGET) that add coverage
# (edges) to the corpus kept in the tree (tests/reliability/corpus/TARGET),
# found by libFuzzer's -merge=1 among those of at most FUZZ_MERGE_MAX_BYTES,
# copied into it, those that add the most first, until it holds
# FUZZ_MERGE_MAX_FILES; review and commit them.
FUZZ_MERGE_MAX_BYTES ?= 512
FUZZ_MERGE_MAX_FILES ?= 200
.PHONY: fuzz-merge fuzz-merge-run
fuzz-merge: ## add the fuzz runs' inputs that add coverage to tests/reliability/corpus
	$(MAKE) fuzz-merge-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

fuzz-merge-run: deps $(FUZZ_BINS)
	@$(foreach t,$(FUZZ_TARGETS),sh $(REL_DIR)/fuzz/fuzz_run.sh merge $(BUILD) $(REL_DIR) $(t) \
	    $(FUZZ_MERGE_MAX_BYTES) $(FUZZ_MERGE_MAX_FILES) $(FUZZ_FLAGS_$(t)) &&) true

# Everything, with CI budgets (the fuzz part: about 3.5 minutes on 2 cores).
CI_FUZZ_SECONDS ?= 20
check-reliability: ## faults, chaos, crash and restart, stress (and TSan), fuzz (CI budgets)
	$(MAKE) check-faults
	$(MAKE) check-chaos
	$(MAKE) check-crash
	$(MAKE) stress
	$(MAKE) check-stress-tsan
	$(MAKE) fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS)

# cJSON and SQLite, compiled in (the Makefile's LIB_A, in LDLIBS).
$(REL_BINS) $(FUZZ_BINS): $(LIB_A)

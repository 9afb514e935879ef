# tests/reliability/reliability.mk — faults, chaos, fuzzing, stress,
# shutdown under load, bad input. Included by the main Makefile.
#
#   make check-faults   fault sweep + shutdown under load + bad input table (ASan+UBSan, build/asan)
#   make check-chaos    the scenario under event chaos, many seeds (ASan+UBSan)
#   make check-crash    the host SIGKILLed and restarted on its journal and ocbg's store (ASan+UBSan)
#   make stress         threads x random tool calls x thousands of tasks (SAN=tsan: ThreadSanitizer)
#   make check-stress-tsan   the same under ThreadSanitizer (build/tsan)
#   make fuzz           libFuzzer targets (clang, build/fuzz), FUZZ_SECONDS per target
#   make fuzz-long      every target until FUZZ_LONG_EXECS (10 million) executions in all
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
# coverage (build/fuzz). FUZZ_SECONDS per target. A crash lands in
# build/fuzz/artifacts/; copy it to tests/reliability/regress/TARGET/ and it
# is replayed by every `make fuzz` (and `make fuzz-regress`) from then on.
FUZZ_TARGETS := tool_args events fork options store_load bash_asks
FUZZ_SECONDS ?= 30
# Seconds an input may take. bash_asks reads a line in linear time (its parse
# stops at 250 ms of CPU): an input slower than this is a failure.
FUZZ_BASH_ASKS_TIMEOUT ?= 2
SAN_FUZZ := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_COMMON_OBJ := $(BUILD)/obj/$(REL_DIR)/fuzz/fuzz_common.o
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/$(REL_DIR)/fuzz/fuzz_%.o $(FUZZ_COMMON_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_COMMON_OBJ) $(BUILD)/libsimhost.a $(BUILD)/libocbg-internal.a $(LDLIBS)

.PHONY: fuzz-run fuzz-regress fuzz-regress-run
fuzz: ## libFuzzer targets (clang), FUZZ_SECONDS each
	$(MAKE) fuzz-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

fuzz-regress: ## replay the seed corpus and saved crashes
	$(MAKE) fuzz-regress-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

# Replay the seed corpus and every saved crash once.
fuzz-regress-run: deps $(FUZZ_BINS)
	@rc=0; for t in $(FUZZ_TARGETS); do \
	    files=$$(find $(REL_DIR)/corpus/$$t $(REL_DIR)/regress/$$t -type f 2>/dev/null | sort); \
	    [ -n "$$files" ] || continue; \
	    $(FUZZ_ENV) $(BUILD)/fuzz/fuzz_$$t -runs=1 $$files > $(BUILD)/fuzz/$$t.regress.log 2>&1 \
	        && echo "fuzz_regress: $$t $$(echo $$files | wc -w) inputs ok" \
	        || { rc=1; echo "fuzz_regress: $$t FAILED"; tail -40 $(BUILD)/fuzz/$$t.regress.log; }; \
	done; exit $$rc

fuzz-run: fuzz-regress-run
	@rc=0; for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(BUILD)/fuzz/corpus/$$t $(BUILD)/fuzz/artifacts; \
	    log=$(BUILD)/fuzz/$$t.log; \
	    $(FUZZ_ENV) $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -timeout=$$([ $$t = bash_asks ] && echo $(FUZZ_BASH_ASKS_TIMEOUT) || echo 20) \
	        -rss_limit_mb=3072 -max_len=16384 -artifact_prefix=$(abspath $(BUILD)/fuzz/artifacts)/$$t- \
	        $(BUILD)/fuzz/corpus/$$t $(REL_DIR)/corpus/$$t > $$log 2>&1 || { rc=1; tail -60 $$log; }; \
	    echo "fuzz_execs: $$t $$(sed -n 's/^stat::number_of_executed_units: *//p' $$log)"; \
	done; exit $$rc

# Every target until FUZZ_LONG_EXECS executions in all (not in CI): -runs=
# per target in proportion to its weight, its speed in execs/s (ASan+UBSan,
# 2 cores; fork's from short runs: it slows to about 6,000/s as its corpus
# grows, so it runs longest). About 45 minutes on 2 cores (docs/testing.md).
FUZZ_LONG_EXECS ?= 10000000
FUZZ_LONG_WEIGHTS ?= tool_args:260 events:2000 fork:35000 options:270 store_load:790 bash_asks:2000
.PHONY: fuzz-long fuzz-long-run
fuzz-long: ## every fuzz target to FUZZ_LONG_EXECS executions (not in CI)
	$(MAKE) fuzz-long-run BUILD=build/fuzz CC=clang SAN="$(SAN_FUZZ)" OPT="-O1 -g"

fuzz-long-run: fuzz-regress-run
	sh $(REL_DIR)/fuzz/fuzz_long.sh $(BUILD) $(REL_DIR) $(FUZZ_LONG_EXECS) "$(FUZZ_LONG_WEIGHTS)"

# Everything, with CI budgets (about 4 minutes on 2 cores).
CI_FUZZ_SECONDS ?= 20
check-reliability: ## faults, chaos, crash and restart, stress (and TSan), fuzz (CI budgets)
	$(MAKE) check-faults
	$(MAKE) check-chaos
	$(MAKE) check-crash
	$(MAKE) stress
	$(MAKE) check-stress-tsan
	$(MAKE) fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS)

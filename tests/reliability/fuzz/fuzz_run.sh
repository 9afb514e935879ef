#!/bin/sh
# fuzz_run.sh — one libFuzzer target at a time, for tests/reliability/
# reliability.mk (make fuzz, fuzz-long, fuzz-regress, fuzz-merge). FLAGs are
# libFuzzer's, the target's own last (FUZZ_FLAGS_<target>). BUILD is the
# make's BUILD (build/fuzz): the binaries are BUILD/fuzz/fuzz_TARGET.
#
#   fuzz_run.sh run BUILD REL_DIR TARGET BUDGET [FLAG...]
#       BUDGET: -max_total_time=S (make fuzz) or -runs=N (make fuzz-long:
#       then fewer than N executions is a failure). The target's corpus is
#       BUILD/fuzz/corpus/TARGET (new inputs go there) with REL_DIR/corpus/
#       TARGET as seeds; a crash goes to BUILD/fuzz/artifacts/TARGET-*.
#       Prints "ok fuzz: TARGET N executions in S s (R/s), C inputs in its
#       corpus" (or FAILED … and why, after the log's end) and keeps that
#       line in BUILD/fuzz/TARGET.result. Returns 0, or 1 when it failed.
#   fuzz_run.sh summary BUILD TARGET...
#       Every target's result line; returns 1 when one failed or has none.
#   fuzz_run.sh regress BUILD REL_DIR TARGET [FLAG...]
#       Every input of REL_DIR/corpus/TARGET and REL_DIR/regress/TARGET (saved
#       crashes) run once. Returns 1 when one fails.
#   fuzz_run.sh merge BUILD REL_DIR TARGET MAX_BYTES MAX_FILES [FLAG...]
#       The inputs of BUILD/fuzz/corpus/TARGET of at most MAX_BYTES that add
#       an edge to REL_DIR/corpus/TARGET (libFuzzer -merge=1 -use_counters=0:
#       edges, not how often each is taken) are copied into it, those that
#       add the most first, until it holds MAX_FILES.
set -u

sanitized() {
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$@"
}

run() {
    build=$1 rel=$2 t=$3 budget=$4
    shift 4
    corpus=$build/fuzz/corpus/$t
    mkdir -p "$corpus" "$build/fuzz/artifacts"
    artifacts=$(cd "$build/fuzz/artifacts" && pwd)
    log=$build/fuzz/$t.log
    rm -f "$build/fuzz/$t.result"
    t0=$(date +%s)
    sanitized "$build/fuzz/fuzz_$t" "$budget" -print_final_stats=1 "$@" -artifact_prefix="$artifacts/$t-" \
        "$corpus" "$rel/corpus/$t" > "$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    n=${n:-0}
    line="fuzz: $t $n executions in ${secs}s ($((n / (secs > 0 ? secs : 1)))/s), $(find "$corpus" -type f | wc -l) inputs in its corpus"
    why=
    [ $rc -eq 0 ] || why="exit status $rc, see $log"
    case $budget in
    -runs=*) [ "$n" -ge "${budget#-runs=}" ] || why="${why:+$why; }fewer than ${budget#-runs=} executions" ;;
    esac
    if [ -n "$why" ]; then
        tail -60 "$log"
        line="FAILED $line: $why"
    else
        line="ok $line"
    fi
    echo "$line" | tee "$build/fuzz/$t.result"
    [ -z "$why" ]
}

summary() {
    build=$1
    shift
    rc=0
    for t in "$@"; do
        if [ -f "$build/fuzz/$t.result" ]; then
            cat "$build/fuzz/$t.result"
            grep -q '^ok ' "$build/fuzz/$t.result" || rc=1
        else
            echo "FAILED fuzz: $t did not run"
            rc=1
        fi
    done
    return $rc
}

regress() {
    build=$1 rel=$2 t=$3
    shift 3
    files=$(find "$rel/corpus/$t" "$rel/regress/$t" -type f 2>/dev/null | sort)
    [ -n "$files" ] || return 0
    # shellcheck disable=SC2086 # a file an argument (the names have no space)
    if sanitized "$build/fuzz/fuzz_$t" -runs=1 "$@" $files > "$build/fuzz/$t.regress.log" 2>&1; then
        echo "fuzz_regress: $t $(echo "$files" | wc -l) inputs ok"
        return 0
    fi
    echo "fuzz_regress: $t FAILED"
    tail -40 "$build/fuzz/$t.regress.log"
    return 1
}

merge() {
    build=$1 rel=$2 t=$3 max=$4 cap=$5
    shift 5
    work=$build/fuzz/merge/$t
    kept=$rel/corpus/$t
    rm -rf "$work"
    mkdir -p "$work/in" "$work/out" "$kept" "$build/fuzz/corpus/$t"
    find "$build/fuzz/corpus/$t" -type f -size -$((max + 1))c -exec cp {} "$work/in/" \;
    find "$kept" -type f -exec cp {} "$work/out/" \;
    before=$(find "$kept" -type f | wc -l)
    if ! sanitized "$build/fuzz/fuzz_$t" -merge=1 -use_counters=0 -max_len="$max" -merge_control_file="$work/control" \
        "$@" "$work/out" "$work/in" > "$build/fuzz/$t.merge.log" 2>&1; then
        echo "fuzz_merge: $t FAILED"
        tail -30 "$build/fuzz/$t.merge.log"
        return 1
    fi
    # The control file: the number of inputs, how many of them the kept
    # corpus's (run first), their paths, then per input "FT i f…", the
    # features it added to those of the inputs before it. The new inputs
    # that added any, most first, until the corpus has cap.
    room=$((cap > before ? cap - before : 0))
    awk 'NR == 1 { n = $1 } NR == 2 { old = $1 } NR > 2 && NR <= n + 2 { path[NR - 3] = $0 }
         $1 == "FT" && $2 >= old && NF > 2 { print NF - 2, path[$2] }' "$work/control" |
        sort -rn | head -n "$room" | while read -r _ f; do cp "$f" "$kept/"; done
    echo "fuzz_merge: $t $before -> $(find "$kept" -type f | wc -l) inputs ($(find "$work/out" -type f | wc -l) would cover all the runs found)"
}

case ${1:-} in
run | summary | regress | merge)
    mode=$1
    shift
    $mode "$@"
    ;;
*)
    echo "usage: fuzz_run.sh run|summary|regress|merge ... (see its first lines)" >&2
    exit 2
    ;;
esac

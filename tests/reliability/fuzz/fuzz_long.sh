#!/bin/sh
# fuzz_long.sh — every fuzz target, until TOTAL executions in all (make
# fuzz-long; not in CI). Each target gets -runs= in proportion to its speed
# (WEIGHTS: target:execs_per_second as measured on a 2-core machine), so
# that a fast target gets more of them. Prints each target's executions,
# speed and time, then the total; fails if a target fails or the total falls
# short.
#
#   fuzz_long.sh BUILD_DIR REL_DIR TOTAL "t1:w1 t2:w2 …"
set -u
build=$1 rel=$2 total=$3 weights=$4

sum=0
for tw in $weights; do sum=$((sum + ${tw#*:})); done

start=$(date +%s)
rc=0 done_total=0
for tw in $weights; do
    t=${tw%%:*} w=${tw#*:}
    runs=$(( (total * w + sum - 1) / sum ))
    mkdir -p "$build/fuzz/corpus/$t" "$build/fuzz/artifacts"
    log=$build/fuzz/$t.long.log
    t0=$(date +%s)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/fuzz/fuzz_$t" -runs="$runs" -print_final_stats=1 -timeout="$([ "$t" = bash_asks ] && echo 2 || echo 20)" \
        -rss_limit_mb=3072 -max_len=16384 \
        -artifact_prefix="$(cd "$build/fuzz/artifacts" && pwd)/$t-" \
        "$build/fuzz/corpus/$t" "$rel/corpus/$t" > "$log" 2>&1 || { rc=1; tail -60 "$log"; }
    secs=$(( $(date +%s) - t0 ))
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    n=${n:-0}
    done_total=$((done_total + n))
    echo "fuzz_long: $t $n executions in ${secs}s ($(( n / (secs > 0 ? secs : 1) ))/s)"
done
secs=$(( $(date +%s) - start ))
echo "fuzz_long_total_execs: $done_total"
echo "fuzz_long_seconds: $secs"
[ "$done_total" -ge "$total" ] || { echo "fuzz_long: $done_total executions, fewer than $total"; rc=1; }
exit $rc

#!/usr/bin/env bash
# Fuzz the model, the vfio-user server and the runner's readers with cargo fuzz (libFuzzer).
#
#   ci/fuzz.sh [--time SECONDS] [--runs N] [--jobs N] [--nice N] [TARGET...]
#
# Each target runs on its corpus (fuzz/corpus/TARGET, kept in the repository) for SECONDS of
# wall time (default 30) or N executions, whichever ends first, one after the other (--jobs N:
# that many at a time), at the lowest CPU priority (--nice N: another). A crash, a broken
# invariant, a timeout of one input (10 s) or more memory than 2 GiB fails the run: the input is
# left in fuzz/artifacts/TARGET/ and the command that replays it is printed. Every target's last lines
# (executions, coverage, corpus size) go to fuzz/logs/TARGET.log and a summary is printed.
#
# The model targets (hwrm, roce_*) bring their machine up once and run every input on a copy
# restored to that state (fuzz/src/snapshot.rs). Before each fuzzes, its corpus is replayed with
# BNXT_FUZZ_CHECK_RESTORE=1: every input runs on a machine built afresh and on a restored copy,
# and the two must end in the same state and memory (log: fuzz/logs/TARGET.restore.log). A short
# pass (--time under 600) replays a sample of a large corpus: every regression and seed, and an
# even spread of the rest, BNXT_FUZZ_RESTORE_SAMPLE (300) inputs in all; a long one, every input.
#
# The machine's toolchain is stable Rust; libFuzzer's instrumentation needs the flags of a
# nightly one (-Zsanitizer), which stable accepts with RUSTC_BOOTSTRAP=1 (see docs/fuzzing.md).
# cargo-fuzz 0.13.2 comes from crates.io (installed here when missing: `cargo install --locked`).
#
#   ci/fuzz.sh                      # the short pass CI runs: every target, 30 s each
#   ci/fuzz.sh --time 3600 hwrm     # a long campaign of one target
#   ci/fuzz.sh --minimize hwrm      # minimise a target's corpus (cargo fuzz cmin)
set -euo pipefail
cd "$(dirname "$0")/.."

time_per=30 runs=0 jobs=1 minimize=0 niceness=19
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_per=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --nice) niceness=$2; shift 2 ;;
    --minimize) minimize=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(hwrm roce_cmdq roce_wqe roce_rx vfio_user streams scenario_check scenario_run readers qemu_trace)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

if ! cargo fuzz --version > /dev/null 2>&1; then
  echo "== installing cargo-fuzz 0.13.2 (crates.io)"
  cargo install --locked cargo-fuzz@0.13.2
fi
export RUSTC_BOOTSTRAP=1
cd fuzz
echo "== cargo fuzz build -O (AddressSanitizer, debug assertions)"
nice -n "$niceness" cargo fuzz build -O --debug-assertions

mkdir -p logs

# How many of a model target's kept inputs a short pass replays on fresh and restored machines.
restore_sample=${BNXT_FUZZ_RESTORE_SAMPLE:-300}

# Copy to DIR every regression and seed input of CORPUS and, of the rest (by name, so the same
# ones every time), an even spread making N in all.
sample() {
  local from=$1 to=$2 n=$3
  cp "$from"/regress-* "$from"/seed-* "$to"/ 2>/dev/null || true
  local have rest
  have=$(ls "$to" | wc -l)
  rest=$(ls "$from" | grep -v -e '^regress-' -e '^seed-' | wc -l)
  [ "$rest" -gt 0 ] || return 0
  local want=$(( n > have ? n - have : 0 ))
  ls "$from" | grep -v -e '^regress-' -e '^seed-' | sort \
    | awk -v rest="$rest" -v want="$want" 'want > 0 && int(NR * want / rest) != int((NR - 1) * want / rest)' \
    | while read -r f; do cp "$from/$f" "$to/"; done
}

run_one() {
  local t=$1
  mkdir -p "corpus/$t" "artifacts/$t"
  if [ "$minimize" = 1 ]; then
    # Inputs that found a fault and the seeds stay, whether or not they add coverage.
    local keep
    keep=$(mktemp -d)
    cp "corpus/$t"/regress-* "corpus/$t"/seed-* "$keep"/ 2>/dev/null || true
    nice -n "$niceness" cargo fuzz cmin -O --debug-assertions "$t" "corpus/$t" > "logs/$t.cmin.log" 2>&1
    cp "$keep"/* "corpus/$t"/ 2>/dev/null || true
    rm -rf "$keep"
    echo "$t: corpus minimised to $(ls "corpus/$t" | wc -l) inputs"
    return 0
  fi
  case "$t" in
    hwrm|roce_*)
      # Nothing of one input may reach the next: kept inputs, each on a fresh and a restored
      # machine. A fresh machine under AddressSanitizer takes a few inputs a second, so a short
      # pass checks a sample of a large corpus (every regression and seed, and an even spread of
      # the rest, the same one every time: `sample` below); a long campaign checks them all.
      local checked="corpus/$t" sample_dir=""
      local total
      total=$(ls "corpus/$t" | wc -l)
      if [ "$time_per" -lt 600 ] && [ "$total" -gt "$restore_sample" ]; then
        sample_dir=$(mktemp -d)
        sample "corpus/$t" "$sample_dir" "$restore_sample"
        checked=$sample_dir
      fi
      local ok=1
      BNXT_FUZZ_CHECK_RESTORE=1 nice -n "$niceness" cargo fuzz run -O --debug-assertions "$t" "$checked" -- \
           -runs=0 -timeout=60 -rss_limit_mb=2048 > "logs/$t.restore.log" 2>&1 || ok=0
      local n
      n=$(ls "$checked" | wc -l)
      [ -n "$sample_dir" ] && rm -rf "$sample_dir"
      if [ "$ok" = 0 ]; then
        echo "$t: FAILED: a restored machine ran an input unlike a fresh one (log: fuzz/logs/$t.restore.log)"
        grep -E 'panicked|restored machine|ERROR: libFuzzer|SUMMARY|Test unit written' "logs/$t.restore.log" | head -20 || true
        return 1
      fi
      echo "$t: $n of the corpus's $total inputs ran alike on fresh and restored machines"
      ;;
  esac
  local flags=(-max_total_time="$time_per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
  [ "$runs" -gt 0 ] && flags+=(-runs="$runs")
  # Seeds outside the kept corpus (the suite's scenario files for the scenario targets) are read
  # but new inputs go to corpus/TARGET only.
  local seeds=()
  case "$t" in scenario_*) seeds=(seeds/scenarios) ;; esac
  if nice -n "$niceness" cargo fuzz run -O --debug-assertions "$t" "corpus/$t" "${seeds[@]}" -- "${flags[@]}" \
       > "logs/$t.log" 2>&1; then
    local execs cov
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "logs/$t.log" | tail -1 | grep -o '[0-9]*' || echo "?")
    echo "$t: ok, $execs executions, coverage $cov edges, corpus $(ls "corpus/$t" | wc -l)"
  else
    echo "$t: FAILED (log: fuzz/logs/$t.log)"
    grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written' "logs/$t.log" | head -20 || true
    ls "artifacts/$t" | sed "s|^|  replay: cd fuzz \&\& RUSTC_BOOTSTRAP=1 cargo fuzz run -O --debug-assertions $t artifacts/$t/|"
    return 1
  fi
}

# Seeds for the scenario targets: the suite's files and the refused ones of the fixtures.
mkdir -p seeds/scenarios
find ../scenarios ../fixtures/bad-scenarios -name '*.yaml' -exec cp {} seeds/scenarios/ \; 2>/dev/null || true

failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$jobs" -gt 1 ]; then
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n || failed=1; running=$((running - 1)); fi
  else
    run_one "$t" || failed=1
  fi
done
while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
exit $failed

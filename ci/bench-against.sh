#!/usr/bin/env bash
# The `roce` bench of this tree against the same bench at another revision, run alternately.
#
#   ci/bench-against.sh [--rounds N] [--args "SECS TRIALS"] [--figure small|large] REV
#
# Builds the bench here and at REV (a detached worktree under target/bench-against/, with its own
# target directory, kept for the next run), then runs ROUNDS rounds of REV, here, here, REV
# (A B B A: a drift of the machine's speed within a round cancels). Each run is one process of
# `roce -- SECS TRIALS FIGURE`; the figure read is the 64-byte message rate (`small`, M messages
# a second) or the 1 MiB rate as a fraction of memcpy measured in the same run (`large`).
#
# Printed: each round's four figures, then the median over rounds of here/REV (each round's two
# sums divided), in how many rounds here was ahead, and the ratio of the two builds' upper
# quartiles. On a shared or noisy machine the rates of one binary spread widely from minute to
# minute; the medians of the per-round ratios and the upper quartiles are what to compare, and
# a difference smaller than their disagreement is noise.
set -euo pipefail

rounds=20 args="1 1" figure=small
while [ $# -gt 1 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --args) args=$2; shift 2 ;;
    --figure) figure=$2; shift 2 ;;
    *) echo "bench-against: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: $0 [--rounds N] [--args \"SECS TRIALS\"] [--figure small|large] REV" >&2; exit 2; }
case $figure in small|large) ;; *) echo "bench-against: --figure is small or large, not $figure" >&2; exit 2 ;; esac
case $rounds in ''|*[!0-9]*|0) echo "bench-against: --rounds is a positive number, not $rounds" >&2; exit 2 ;; esac

root=$(git rev-parse --show-toplevel)
cd "$root"
rev=$(git rev-parse --verify "$1^{commit}") || { echo "bench-against: $1 is not a revision here" >&2; exit 2; }
base="$root/target/bench-against"
mkdir -p "$base"
tree="$base/tree-${rev:0:12}"

# The bench's executable, built in directory $1 with target directory $2.
build() {
  (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench -p bnxt-rig --bench roce --no-run --message-format=json) |
    python3 -c '
import json, sys
paths = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "roce"]
if not paths:
    sys.exit("bench-against: no roce bench was built")
print(paths[-1])'
}

git worktree prune
if [ ! -d "$tree" ]; then
  git worktree add --detach "$tree" "$rev" >/dev/null
fi
echo "== building the bench at ${rev:0:12} (in $tree)" >&2
before=$(build "$tree" "$base/target-${rev:0:12}")
echo "== building the bench here" >&2
after=$(build "$root" "${CARGO_TARGET_DIR:-$root/target}")

# One run of bench $1 from directory $2: the figure.
run() {
  (cd "$2/scenarios" && "$1" $args "$figure") | python3 -c '
import re, sys
figure = sys.argv[1]
for line in sys.stdin:
    if figure == "small" and line.startswith("64-byte SENDs"):
        print(re.search(r"([0-9.]+) M messages/s", line).group(1)); break
    if figure == "large" and line.startswith("1 MiB SENDs"):
        print(re.search(r"= ([0-9.]+) of memcpy", line).group(1)); break
else:
    sys.exit("bench-against: the bench printed no " + figure + " figure")' "$figure"
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
echo "round  ${rev:0:12}  here  here  ${rev:0:12}"
for i in $(seq 1 "$rounds"); do
  a1=$(run "$before" "$tree"); b1=$(run "$after" "$root"); b2=$(run "$after" "$root"); a2=$(run "$before" "$tree")
  echo "$i $a1 $b1 $b2 $a2" | tee -a "$results"
done
python3 - "$results" "${rev:0:12}" <<'EOF'
import statistics, sys
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1])]
ratios = [(r[1] + r[2]) / (r[0] + r[3]) for r in rows]
old = sorted(x for r in rows for x in (r[0], r[3]))
new = sorted(x for r in rows for x in (r[1], r[2]))
upper = lambda xs: xs[(3 * len(xs)) // 4]
print(f"here / {sys.argv[2]}: median of rounds {statistics.median(ratios):.3f}, "
      f"ahead in {sum(x > 1 for x in ratios)} of {len(ratios)}, "
      f"upper quartiles {upper(new):.3f} / {upper(old):.3f} = {upper(new) / upper(old):.3f}")
EOF

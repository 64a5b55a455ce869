#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Instructions per data-path call of this tree's libmlx4 and of the
# distribution's mlx4 provider, side by side, on the simulator.
#
# Each operation runs in bench/mlx4-bench under callgrind, collecting only
# inside its bench_<op> wrapper; the total is divided by the calls made.
# The wrapper's own call and return are part of every figure alike.
#
# Usage (from the build directory): bench/run.sh [ITERATIONS]
set -e

iters=${1:-4096}
top=$(pwd)
sim=$top/sim/mlx4sim
bench=$top/bench/mlx4-bench
out=${BENCH_OUT:-$top/bench/out}

command -v valgrind >/dev/null || { echo "bench: valgrind not found"; exit 77; }
[ -x "$sim" ] || { echo "bench: $sim not built"; exit 77; }
[ -x "$bench" ] || { echo "bench: $bench not built (make)"; exit 1; }
mkdir -p "$out"

# measure PROVIDER OP: prints instructions per call
measure() {
	file=$out/callgrind.$1.$2
	log=$out/$1.$2.log
	if ! "$sim" run --provider="$1" -- valgrind --tool=callgrind \
		--callgrind-out-file="$file" --toggle-collect="bench_$2" \
		"$bench" "$2" "$iters" >"$log" 2>&1; then
		echo "bench: $1 $2 failed, see $log" >&2
		echo "-"
		return
	fi
	calls=$(awk '/^calls / { print $2 }' "$log")
	awk -v calls="$calls" '/^(totals|summary):/ { ir = $2 }
		END { printf "%.1f\n", ir / calls }' "$file"
}

printf '%-18s %10s %10s %8s %8s\n' "instructions/call" libmlx4 debian ratio target
for op in post_recv post_send post_send_inline poll_cq_empty poll_cq_one; do
	ours=$(measure project "$op")
	theirs=$(measure system "$op")
	case $op in
	post_recv)		target='<=57' ;;
	post_send)		target='<=107' ;;
	post_send_inline)	target='<=202' ;;
	poll_cq_empty)		target='<=38' ;;
	*)			target=- ;;
	esac
	ratio=$(awk -v a="$ours" -v b="$theirs" \
		'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a / b; else print "-" }')
	printf '%-18s %10s %10s %8s %8s\n' "$op" "$ours" "$theirs" "$ratio" \
		"$target"
done

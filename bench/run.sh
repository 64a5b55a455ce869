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
# poll_cq_batch is per CQE (polls for 16 receive completions).
# The wr_ and lazy_ phases do the same work through the extended verbs
# (ibv_wr_*, ibv_start_poll), which the distribution's provider lacks or
# which its users do not take for speed: each is compared with the
# distribution's classic call for that work (wr_send with post_send).
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

# The goals (issue 26): 0.45 of Debian's instructions over all phases
# (geometric mean of the ratios), and no phase above 0.60.
phases='post_recv post_send post_send_inline post_send_write post_send_ud
	poll_cq_empty poll_cq_one poll_cq_batch
	wr_send:post_send wr_send_inline:post_send_inline
	wr_rdma_write:post_send_write wr_send_ud:post_send_ud
	lazy_poll_empty:poll_cq_empty lazy_poll_one:poll_cq_one
	lazy_poll_batch:poll_cq_batch'
printf '%-18s %10s %10s %8s\n' "instructions/call" libmlx4 debian ratio
ratios=
for phase in $phases; do
	op=${phase%%:*}
	classic=${phase#*:}
	ours=$(measure project "$op")
	# The distribution's figure for that work, measured once.
	eval "theirs=\${debian_$classic:-}"
	if [ -z "$theirs" ]; then
		theirs=$(measure system "$classic")
		eval "debian_$classic=\$theirs"
	fi
	ratio=$(awk -v a="$ours" -v b="$theirs" \
		'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a / b; else print "-" }')
	over=
	[ "$ratio" != - ] && awk -v r="$ratio" 'BEGIN { exit !(r > 0.60) }' &&
		over='  above 0.60'
	printf '%-18s %10s %10s %8s%s\n' "$op" "$ours" "$theirs" "$ratio" "$over"
	ratios="$ratios $ratio"
done
echo "$ratios" | awk '{
	n = 0; sum = 0
	for (i = 1; i <= NF; i++) if ($i != "-") { n++; sum += log($i) }
	if (n) printf "geometric mean of the ratios: %.3f (goal <= 0.45), %d phases\n", exp(sum / n), n
}'

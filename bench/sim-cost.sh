#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The simulator daemon's own instructions a message, for each provider:
# mlx4simd runs under valgrind's callgrind, collecting only inside the
# entry points of a pass that do data-path work, while perftest runs
# between two processes on it.  Instruction counts, not times: they hold
# from run to run (within a few percent: how passes batch moves them).
#
# Usage (from the build directory): bench/sim-cost.sh [SCALE]
#   SCALE divides the message counts (default 1: ib_send_bw -s 64
#   -n 20000, ib_send_lat -s 2 -n 5000, ib_write_bw -s 65536 -n 2000).
#   PROVIDERS="project system" (default) picks the providers, and
#   TOOLS="send_bw send_lat write_bw" (default) the runs;
#   RUNS=N prints the median of N runs of each (default 1: the figures
#   move a few percent from run to run, with how the daemon's passes
#   batch and whether the sender met receiver-not-ready);
#   SIM_COST_OUT=DIR keeps callgrind's files there (default: removed).
# Exits 77 without valgrind or perftest.  Prints figures; checks nothing.

scale=${1:-1}
runs=${RUNS:-1}
tools=${TOOLS:-send_bw send_lat write_bw}
top=$(pwd)
daemon=$top/sim/mlx4simd
preload=$top/sim/.libs/libmlx4sim.so
providers=${PROVIDERS:-project system}

command -v valgrind >/dev/null ||
	{ echo "sim-cost: valgrind not found"; exit 77; }
command -v callgrind_annotate >/dev/null ||
	{ echo "sim-cost: callgrind_annotate (valgrind) not found"; exit 77; }
command -v ib_send_bw >/dev/null ||
	{ echo "sim-cost: perftest (ib_send_bw) not found"; exit 77; }
[ -x "$daemon" ] && [ -f "$preload" ] ||
	{ echo "sim-cost: $daemon not built (make)"; exit 77; }

out=${SIM_COST_OUT:-}
[ -n "$out" ] || { out=$(mktemp -d "${TMPDIR:-/tmp}/sim-cost.XXXXXX") &&
	trap 'rm -rf "$out"' EXIT; }
mkdir -p "$out"
port=$(( ($$ % 1000) + 24000 ))

# The entry points of a pass that reach the data path; none calls another
# (callgrind's toggles would cancel).  doorbells_scan runs each busy send
# queue (req_run: WQEs, the responder, completions); ctx_doorbells the
# same before a command; req_run_waiting the queues waiting on a timer
# (RNR); cq_settle writes the CQE batches.
entries='doorbells_scan ctx_doorbells req_run_waiting cq_settle'

# start_daemon FILE: mlx4simd under callgrind, its output to FILE; sets
# $dir and $daemon_pid.
start_daemon() {
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mlx4sim.XXXXXX")
	toggles=
	for e in $entries; do
		toggles="$toggles --toggle-collect=$e"
	done
	valgrind --tool=callgrind --callgrind-out-file="$1" $toggles \
		"$daemon" --dir "$dir" --hcas 1 --ports 2 --link-layer ib \
		--cqe-size 64 --model cx3pro --sm builtin \
		</dev/null >/dev/null 2>"$1.log" &
	daemon_pid=$!
	while [ ! -e "$dir/ready" ]; do
		kill -0 $daemon_pid 2>/dev/null ||
			{ cat "$1.log" >&2; echo "sim-cost: no daemon" >&2; exit 1; }
		sleep 0.1
	done
}

# The daemon ends when asked (SIGTERM), writing callgrind's file.
stop_daemon() {
	kill -TERM $daemon_pid
	wait $daemon_pid
	rm -rf "$dir"
}

# listening PORT: wait (30 s at most) for a TCP socket listening there,
# as perftest's server does before its client may connect.
listening() {
	hex=$(printf ':%04X ' "$1")
	for i in $(seq 300); do
		grep -q "$hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 \
			2>/dev/null && return
		sleep 0.1
	done
}

# perftest PROVIDER TOOL ARGS...: a server and a client on the daemon.
perftest() {
	provider=$1
	shift
	port=$((port + 1))
	(
		export MLX4SIM_DIR="$dir" SYSFS_PATH="$dir/sys"
		export LD_PRELOAD="$preload"
		if [ "$provider" = project ]; then
			export RDMAV_DRIVERS="$top/src/libmlx4"
			export LD_LIBRARY_PATH="$top/src/.libs"
		fi
		timeout 600 "$@" -p $port >"$out/server.log" 2>&1 &
		server=$!
		listening $port
		timeout 600 "$@" -p $port localhost >"$out/client.log" 2>&1
		status=$?
		# A client that found no server leaves it waiting.
		[ $status -eq 0 ] || kill $server 2>/dev/null
		wait $server
		exit $status
	)
}

# measure PROVIDER MESSAGES NAME TOOL ARGS...: prints the instructions a
# message over all entry points, and inside req_run alone (its largest
# line: callgrind_annotate splits a function that recursion reaches).
measure() {
	provider=$1 messages=$2 name=$3
	shift 3
	file=$out/callgrind.$name.$provider
	start_daemon "$file"
	perftest "$provider" "$@" ||
		echo "sim-cost: $provider $* failed (see $out/client.log)" >&2
	stop_daemon
	total=$(awk '/^(totals|summary):/ { print $2 }' "$file")
	req=$(callgrind_annotate --inclusive=yes --auto=no --threshold=100 \
		"$file" 2>/dev/null |
		awk '/:req_run( \[|$)/ { gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0 }
			END { print m + 0 }')
	awk -v t="$total" -v r="$req" -v n="$messages" \
		'BEGIN { printf "%.0f %.0f\n", t / n, r / n }'
}

# median PROVIDER MESSAGES NAME TOOL ARGS...: measure's figures, the
# median of $runs runs, column by column.
median() {
	for i in $(seq "$runs"); do
		measure "$@"
	done >"$out/runs"
	for column in 1 2; do
		cut -d' ' -f$column "$out/runs" | sort -n |
			awk '{ v[NR] = $1 } END { printf " %10s", v[int((NR + 1) / 2)] }'
	done
}

bw=$((20000 / scale)) lat=$((5000 / scale)) write=$((2000 / scale))
echo "mlx4simd instructions a message (callgrind, median of $runs; all: $entries; req_run: inclusive)"
printf '%-28s %-8s %10s %10s\n' "" provider all req_run
for provider in $providers; do
	# ib_send_lat's messages go both ways: two a round trip.
	for tool in $tools; do
		case $tool in
		send_bw) n=$bw what="ib_send_bw -s 64 -n $bw" ;;
		send_lat) n=$((2 * lat)) what="ib_send_lat -s 2 -n $lat" ;;
		write_bw) n=$write what="ib_write_bw -s 65536 -n $write" ;;
		*) echo "sim-cost: no tool $tool" >&2; exit 2 ;;
		esac
		printf '%-28s %-8s%s\n' "$what" $provider \
			"$(median $provider $n $tool ib_$tool ${what#ib_$tool})"
	done
done

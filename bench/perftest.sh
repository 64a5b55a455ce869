#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Figures of the simulated fabric, with our provider and the
# distribution's in the same run: the ib_send_lat 2-byte median latency,
# the ib_send_bw 64-byte message rate and the daemon's CPU time a message
# in it (over the whole run, and with the set-up apart: the CPU time of a
# run of 1,000 messages taken away), the ib_write_bw 64 KiB bandwidth
# (each the median of RUNS runs), and the daemon's CPU use while idle.
#
# Usage: bench/perftest.sh [RUNS [ib|eth]]   (from a built tree; default 3
# runs, InfiniBand ports; eth: the same over RoCE, GID 0)
# With BASE=DIR (another built tree, say the one before a change), each
# run is one of this tree's and one of DIR's, taking turns, and both are
# printed: A/B figures from the same minutes of the machine.
# Prints figures; it checks nothing.

runs=${1:-3}
link=${2:-ib}
case $link in
ib) gid= ;;
eth) gid="-x 0" ;;
*) echo "usage: $0 [RUNS [ib|eth]]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
trees="$top"
[ -n "$BASE" ] && trees="$top $(cd "$BASE" && pwd)"
out=$(mktemp -d "${TMPDIR:-/tmp}/mlx4-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
port=$(( ($$ % 1000) + 23000 ))
rate_msgs=100000
setup_msgs=1000

# run TOOL ARGS...: server and client on the running simulator; the
# client's output in $out/client.
run() {
	port=$((port + 1))
	timeout 300 "$@" -p $port >"$out/server" 2>&1 &
	server=$!
	sleep 0.5
	timeout 300 "$@" -p $port localhost >"$out/client" 2>&1
	wait $server
}

# The result line of a perftest report (the line after its header).
result() {
	sed -n '/#bytes/{n;p;q}' "$out/client"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# daemon_cpu CMD...: run CMD; the daemon's CPU time meanwhile, in ms, to
# $out/cpu_ms: perf stat's task-clock where perf runs, else the clock
# ticks of /proc/PID/stat (10 ms each, mostly).
daemon_cpu() {
	pid=$(cat "$MLX4SIM_DIR/pid")
	if [ -n "$perf" ]; then
		perf stat -x, -e task-clock -p "$pid" -o "$out/perf" &
		stat=$!
		sleep 0.2
		"$@"
		kill -INT $stat
		wait $stat
		awk -F, '/task-clock/ { print $1 }' "$out/perf" >"$out/cpu_ms"
		return
	fi
	t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	"$@"
	t1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
		'BEGIN { print t * 1000 / hz }' >"$out/cpu_ms"
}
perf=
perf stat -e task-clock true >/dev/null 2>&1 && perf=perf

# measure TREE TAG PROVIDER: one run of each tool on TREE's simulator;
# the figures go to $out/*.TAG.PROVIDER.
measure() {
	tree=$1 tag=$2 provider=$3
	eval "$("$tree/sim/mlx4sim" start --provider="$provider" \
		--link-layer="$link")"
	run ib_send_lat $gid -s 2 -n 10000
	result | awk '{ print $5 }' >>"$out/lat.$tag.$provider"
	daemon_cpu run ib_send_bw $gid -s 64 -n $rate_msgs
	result | awk '{ print $5 * 1000 }' >>"$out/rate.$tag.$provider"
	awk -v n=$rate_msgs '{ printf "%.2f\n", $1 * 1000 / n }' \
		"$out/cpu_ms" >>"$out/cpu.$tag.$provider"
	mv "$out/cpu_ms" "$out/cpu_ms.long"
	daemon_cpu run ib_send_bw $gid -s 64 -n $setup_msgs
	awk -v n=$((rate_msgs - setup_msgs)) -v short="$(cat "$out/cpu_ms")" \
		'{ printf "%.2f\n", ($1 - short) * 1000 / n }' \
		"$out/cpu_ms.long" >>"$out/cpu-msg.$tag.$provider"
	run ib_write_bw $gid -s 65536 -n 5000
	result | awk '{ print $4 }' >>"$out/bw.$tag.$provider"
	"$tree/sim/mlx4sim" stop
}

# CPU time the daemon used over 10 seconds, as a share of one core.
idle_cpu() {
	daemon_cpu sleep 10
	awk '{ printf "%.2f%%", $1 / 100 }' "$out/cpu_ms"
}

# idle TREE TAG: the idle daemon's CPU, with no process and with a device
# open.
idle() {
	eval "$("$1/sim/mlx4sim" start)"
	sleep 1
	idle_cpu >"$out/idle.$2"
	new_port=$((port + 1))
	timeout 60 ibv_rc_pingpong -g 0 -p $new_port >/dev/null 2>&1 &
	waiting=$!
	sleep 2
	idle_cpu >"$out/idle-open.$2"
	kill $waiting 2>/dev/null
	wait $waiting 2>/dev/null
	"$1/sim/mlx4sim" stop
}

# row LABEL FORMAT FIGURE TAG: one line, both providers' medians.
row() {
	printf "%-34s $2\n" "$1" "$(median <"$out/$3.$4.project")" \
		"$(median <"$out/$3.$4.system")"
}

# print TAG NAME: the figures of one tree.
print() {
	echo "$2"
	printf '%-34s %14s %14s\n' "" "libmlx4" "Debian mlx4"
	row "ib_send_lat 2 B, median latency" "%11s us %11s us" lat "$1"
	row "ib_send_bw 64 B, message rate" "%7s kmsg/s %7s kmsg/s" rate "$1"
	row "  daemon CPU a message" "%8s us/msg %7s us/msg" cpu "$1"
	row "  ... the set-up apart" "%8s us/msg %7s us/msg" cpu-msg "$1"
	row "ib_write_bw 64 KiB, bandwidth" "%9s MB/s %9s MB/s" bw "$1"
	printf '%-34s %14s\n' "daemon CPU, idle, no process" "$(cat "$out/idle.$1")"
	printf '%-34s %14s\n' "daemon CPU, idle, a device open" \
		"$(cat "$out/idle-open.$1")"
}

echo "mlx4sim figures, $link ports, median of $runs runs ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
for i in $(seq "$runs"); do
	for provider in project system; do
		tag=0
		for tree in $trees; do
			measure "$tree" $tag $provider
			tag=$((tag + 1))
		done
	done
done
tag=0
for tree in $trees; do
	idle "$tree" $tag
	tag=$((tag + 1))
done
print 0 "$top"
[ -n "$BASE" ] && print 1 "BASE=$BASE"
echo "(load at the end $(cut -d' ' -f1-3 /proc/loadavg))"

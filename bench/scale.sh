#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# How the simulated fabric scales, with our provider and the
# distribution's: the ib_send_bw 64-byte message rate and the ib_send_lat
# 2-byte latency against the number of processes (PROCS pairs at once,
# each a server and a client with their own RC QP), with Jain's fairness
# index of the pairs' rates; the message rate against the number of
# active QPs of one pair (ib_send_bw -q); and the daemon's resident
# memory a QP (bench/scale-qps holding MEMQPS connected RC QPs).
#
# Usage: bench/scale.sh [SECONDS]   (from a built tree; each rate run
# lasts SECONDS, default 4)
# PROCS, QPS, MEMQPS and PROVIDERS (default "1 2 4 8 16", "1 16 256
# 4096", 4096 and "project system") choose what runs.  EVENTS=1: the
# rate pairs sleep on completion events (ib_send_bw -e) instead of
# polling, sharing SECONDS x 500,000 messages (perftest times -e runs by
# count only), so that the CPUs go to the pairs with work and the rates
# are the daemon's, not the scheduler's turns among busy pollers.
# Prints figures, with the load average after each; it checks nothing.

secs=${1:-4}
procs=${PROCS:-1 2 4 8 16}
qps=${QPS:-1 16 256 4096}
memqps=${MEMQPS:-4096}
providers=${PROVIDERS:-project system}
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/mlx4-scale.XXXXXX")
trap 'rm -rf "$out"' EXIT
port=$(( ($$ % 1000) * 20 + 30000 ))

load() {
	cut -d' ' -f1 /proc/loadavg
}

# pairs N TIMEOUT TOOL ARGS...: N servers, then N clients, all at once;
# client I's output in $out/client.I.  Each pair has its own port.
pairs() {
	count=$1 limit=$2
	shift 2
	for i in $(seq "$count"); do
		timeout "$limit" "$@" -p $((port + i)) >"$out/server.$i" 2>&1 &
	done
	sleep 1
	for i in $(seq "$count"); do
		timeout "$limit" "$@" -p $((port + i)) localhost \
			>"$out/client.$i" 2>&1 &
	done
	wait
	port=$((port + count))
}

# results COLUMN N: that column of the result line (the line after the
# header) of clients 1 to N, one a line; a client without one gives 0.
results() {
	for i in $(seq "$2"); do
		v=$(sed -n '/#bytes/{n;p;q}' "$out/client.$i" | awk "{ print \$$1 }")
		echo "${v:-0}"
	done
}

# Sum, smallest, largest and Jain's index, (sum x)^2 / (n sum x^2), of
# the rates on standard input (Mmsg/s), printed in kmsg/s.
rate_stats() {
	awk '{ x = $1 * 1000; s += x; q += x * x; n++
	       if (n == 1 || x < lo) lo = x; if (x > hi) hi = x }
	     END { printf "%8.0f %7.0f %7.0f %6.3f", s, lo, hi,
		   q ? s * s / (n * q) : 0 }'
}

# The median and the largest of the latencies on standard input (us).
lat_stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		printf "%7.2f %7.2f", v[int((NR + 1) / 2)], v[NR] }'
}

# rate_args N: how each of N rate pairs runs ib_send_bw.
rate_args() {
	if [ "${EVENTS:-0}" = 1 ]; then
		echo "-e -n $((secs * 500000 / $1))"
	else
		echo "-D $secs"
	fi
}

# by_procs: the rate and latency rows, N pairs at once.
by_procs() {
	echo "  pairs  total kmsg/s   least    most   Jain  lat median   worst (us)  load"
	for n in $procs; do
		pairs "$n" 300 ib_send_bw -s 64 $(rate_args "$n")
		rates=$(results 5 "$n" | rate_stats)
		pairs "$n" 300 ib_send_lat -s 2 -n 2000
		lats=$(results 5 "$n" | lat_stats)
		printf '  %5s  %12s     %s  %s\n' "$n" "$rates" "$lats" "$(load)" |
			awk '{ printf "  %5s %14s %7s %7s %6s %11s %7s %12s\n",
			       $1, $2, $3, $4, $5, $6, $7, $8 }'
	done
}

# by_qps: the rate of one pair with N QPs, and the client's wall time
# (set-up, the run and the report).
by_qps() {
	echo "    QPs  total kmsg/s  client wall (s)  load"
	for n in $qps; do
		t0=$(date +%s.%N)
		pairs 1 900 ib_send_bw -s 64 -q "$n" -D "$secs"
		t1=$(date +%s.%N)
		rate=$(results 5 1 | awk '{ printf "%.0f", $1 * 1000 }')
		printf '  %5s %14s %16.1f %5s\n' "$n" "$rate" \
			"$(echo "$t1 $t0" | awk '{ print $1 - $2 }')" "$(load)"
	done
}

# The daemon's resident memory in KiB: all of it, and its own (RssAnon:
# not the program's pages it maps).
rss_kib() {
	awk '/^VmRSS/ { all = $2 } /^RssAnon/ { own = $2 }
	     END { print all, own }' "/proc/$(cat "$MLX4SIM_DIR/pid")/status"
}

# per_qp BEFORE WITH: KiB a QP of each figure.
per_qp() {
	echo "$1 $2" | awk -v n="$memqps" '{
		printf "%.2f KiB a QP, %.2f of its own", ($3 - $1) / n,
		       ($4 - $2) / n }'
}

# wait_for WORD: until scale-qps printed WORD, or ended.
wait_for() {
	while kill -0 $holder 2>/dev/null && ! grep -q "$1" "$out/qps"; do
		sleep 0.2
	done
}

# memory: the daemon's resident memory before scale-qps makes MEMQPS
# QPs, with them, and after it exits.
memory() {
	[ "$memqps" -gt 0 ] || return 0
	mkfifo "$out/hold"
	"$top/bench/scale-qps" "$memqps" <"$out/hold" >"$out/qps" 2>&1 &
	holder=$!
	exec 3>"$out/hold"
	wait_for open
	sleep 0.5
	before=$(rss_kib)
	echo go >&3
	wait_for ready
	sleep 0.5
	with=$(rss_kib)
	exec 3>&-
	wait $holder
	sleep 0.5
	after=$(rss_kib)
	rm -f "$out/hold"
	if ! grep -q ready "$out/qps"; then
		echo "  scale-qps $memqps failed: $(cat "$out/qps")"
		return
	fi
	echo "  daemon RSS (all, own) in KiB: $before with a device open;" \
		"$with with $memqps QPs, made in $(awk '/ready/ { print $3 }' \
		"$out/qps") s ($(per_qp "$before" "$with")); $after after" \
		"(load $(load))"
}

echo "mlx4sim scaling, $secs s a rate run ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
for provider in $providers; do
	eval "$("$top/sim/mlx4sim" start --provider="$provider")"
	memory		# first: the heap of the runs after would hide it
	echo "provider $provider: ib_send_bw -s 64 $(rate_args 1) (one pair's) and ib_send_lat -s 2 -n 2000, a pair each"
	by_procs
	echo "provider $provider: ib_send_bw -s 64 -D $secs -q QPs, one pair"
	by_qps
	"$top/sim/mlx4sim" stop
done
echo "(load at the end $(cut -d' ' -f1-3 /proc/loadavg))"

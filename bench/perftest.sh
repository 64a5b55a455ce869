#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Figures of the simulated fabric, with our provider and the
# distribution's in the same run: the ib_send_lat 2-byte median latency,
# the ib_send_bw 64-byte message rate and the ib_write_bw 64 KiB bandwidth
# (each the median of RUNS runs), and the daemon's CPU use while idle.
#
# Usage: bench/perftest.sh [RUNS [ib|eth]]   (from a built tree; default 3
# runs, InfiniBand ports; eth: the same over RoCE, GID 0)
# Prints figures; it checks nothing.

runs=${1:-3}
link=${2:-ib}
case $link in
ib) gid= ;;
eth) gid="-x 0" ;;
*) echo "usage: $0 [RUNS [ib|eth]]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
mlx4sim=$top/sim/mlx4sim
out=$(mktemp -d "${TMPDIR:-/tmp}/mlx4-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
port=$(( ($$ % 1000) + 23000 ))

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

measure() {
	provider=$1
	eval "$("$mlx4sim" start --provider="$provider" --link-layer="$link")"
	for i in $(seq "$runs"); do
		run ib_send_lat $gid -s 2 -n 10000
		result | awk '{ print $5 }' >>"$out/lat.$provider"
		run ib_send_bw $gid -s 64 -n 100000
		result | awk '{ print $5 * 1000 }' >>"$out/rate.$provider"
		run ib_write_bw $gid -s 65536 -n 5000
		result | awk '{ print $4 }' >>"$out/bw.$provider"
	done
	"$mlx4sim" stop
}

# CPU seconds the daemon used over 10 seconds, as a share of one core.
idle_cpu() {
	pid=$(cat "$MLX4SIM_DIR/pid")
	t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	sleep 10
	t1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f%%", 100 * t / hz / 10 }'
}

echo "mlx4sim figures, $link ports, median of $runs runs ($(nproc) CPUs)"
for provider in project system; do
	measure $provider
done
printf '%-34s %14s %14s\n' "" "libmlx4" "Debian mlx4"
printf '%-34s %11s us %11s us\n' "ib_send_lat 2 B, median latency" \
	"$(median <"$out/lat.project")" "$(median <"$out/lat.system")"
printf '%-34s %9s kmsg/s %6s kmsg/s\n' "ib_send_bw 64 B, message rate" \
	"$(median <"$out/rate.project")" "$(median <"$out/rate.system")"
printf '%-34s %9s MB/s %9s MB/s\n' "ib_write_bw 64 KiB, bandwidth" \
	"$(median <"$out/bw.project")" "$(median <"$out/bw.system")"

eval "$("$mlx4sim" start)"
sleep 1
printf '%-34s %14s\n' "daemon CPU, idle, no process" "$(idle_cpu)"
new_port=$((port + 1))
timeout 60 ibv_rc_pingpong -g 0 -p $new_port >/dev/null 2>&1 &
waiting=$!
sleep 2
printf '%-34s %14s\n' "daemon CPU, idle, a device open" "$(idle_cpu)"
kill $waiting 2>/dev/null
wait $waiting 2>/dev/null
"$mlx4sim" stop

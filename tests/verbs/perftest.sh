#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# perftest's bandwidth and latency tools with RC, UC and UD where they
# allow it; bandwidth over all sizes (-a).
# Usage: perftest.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ib_send_bw perftest
provider=$1

# bw NAME MIN_SIZES TOOL ARGS...: a bandwidth run over all sizes, with a
# result line for at least MIN_SIZES of them.
bw() {
	name=$1 sizes=$2
	shift 2
	if pair "$name" "" "" "$@"; then
		lines=$(grep -cE '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$work/client.log")
		if [ "$lines" -ge "$sizes" ]; then
			ok "$name reports $lines sizes"
		else
			not_ok "$name reports $lines sizes, wanted $sizes"
			show "$work/client.log"
		fi
	fi
}

lat() {
	name=$1
	shift
	if pair "$name" "" "" "$@"; then
		check "$name reports latencies" \
			grep -qE '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+' "$work/client.log"
	fi
}

sim_start --provider="$provider"
# RC: 2 bytes to 8 MiB is 23 sizes.
bw "ib_send_bw RC -a" 23 ib_send_bw -a -n 100
bw "ib_write_bw RC -a" 23 ib_write_bw -a -n 100
bw "ib_read_bw RC -a" 23 ib_read_bw -a -n 100
bw "ib_atomic_bw RC" 1 ib_atomic_bw -n 1000
lat "ib_send_lat RC" ib_send_lat -n 1000
lat "ib_write_lat RC" ib_write_lat -n 1000
lat "ib_read_lat RC" ib_read_lat -n 1000
lat "ib_atomic_lat RC" ib_atomic_lat -n 1000
bw "ib_send_bw UC -a" 23 ib_send_bw -c UC -a -n 100
bw "ib_write_bw UC -a" 23 ib_write_bw -c UC -a -n 100
lat "ib_send_lat UC" ib_send_lat -c UC -n 1000
lat "ib_write_lat UC" ib_write_lat -c UC -n 1000
# UD: up to the MTU.
bw "ib_send_bw UD -a" 11 ib_send_bw -c UD -a -n 100
lat "ib_send_lat UD" ib_send_lat -c UD -n 1000
check "no strict-mode breach" sim_stop
finish

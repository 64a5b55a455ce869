#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The libibverbs pingpong examples, server and client on one simulator,
# checking data (-c), at several sizes, polling and with events (-e).
# Usage: pingpong.sh project|system [mlx4sim options]
. "$(dirname "$0")/../lib.sh"
need_program ibv_rc_pingpong ibverbs-utils
provider=$1
shift

# xsrq_pair ARGS...: ibv_xsrq_pingpong, a server and two clients; tried
# again, as pair() does, when another program held the server's port.
xsrq_pair() {
	for attempt in 1 2 3; do
		new_port
		guarded ibv_xsrq_pingpong -c 2 -p $port "$@" \
			>"$work/server.log" 2>&1 &
		server=$!
		run_client "$work/client1.log" ibv_xsrq_pingpong -p $port "$@" \
			localhost &
		client1=$!
		sleep 0.2
		run_client "$work/client2.log" ibv_xsrq_pingpong -p $port "$@" \
			localhost
		c2=$?
		wait $client1; c1=$?
		wait $server; s=$?
		grep -qi "couldn't listen" "$work/server.log" || break
		echo "# ibv_xsrq_pingpong: port $port taken, again"
	done
	if [ $s -eq 0 ] && [ $c1 -eq 0 ] && [ $c2 -eq 0 ]; then
		ok "ibv_xsrq_pingpong $*, two clients"
	else
		not_ok "ibv_xsrq_pingpong $*, two clients ($s $c1 $c2)"
		show "$work/server.log"; show "$work/client1.log"; show "$work/client2.log"
	fi
}

sim_start --provider="$provider" "$@"
for tool in rc uc srq; do
	for size in 1 4096 65536; do
		for events in "" -e; do
			pair "ibv_${tool}_pingpong -s $size $events" "" "" \
				ibv_${tool}_pingpong -g 0 -c -n 1000 -s $size $events
		done
	done
done
for size in 1 2048 4096; do
	for events in "" -e; do
		pair "ibv_ud_pingpong -s $size $events" "" "" \
			ibv_ud_pingpong -g 0 -c -n 1000 -s $size $events
	done
done
xsrq_pair -g 0 -n 1000
xsrq_pair -g 0 -n 1000 -e
xsrq_pair -g 0 -n 200 -s 1 -e
check "no strict-mode breach" sim_stop
finish

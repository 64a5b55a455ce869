#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# UCX on the simulator, as a user runs it, with no UCX_* variable a real
# adapter would not need: ucx_info finds the device (its sysfs by the
# literal path, its pages mapped through UCX's memory hooks), and
# ucx_perftest runs the tag-matching, put, get and stream tests over
# rc_verbs and ud_verbs (RC needs UD beside it to connect), on InfiniBand
# ports and over RoCE.  UCX's own warnings fail a run: a completion
# channel left busy at teardown was one.
# Usage: ucx.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ucx_perftest ucx-utils
provider=$1

# ucx NAME TLS TEST ARGS...: one ucx_perftest run between two processes;
# it must report its final figures and no warning or error of UCX's.
ucx() {
	name=$1 tls=$2 test=$3
	shift 3
	pair "$name" "UCX_TLS=$tls" "UCX_TLS=$tls" \
		ucx_perftest -t "$test" "$@" || return
	if ! grep -q '^Final:' "$work/client.log"; then
		not_ok "$name: the client reports its final figures"
		show "$work/client.log"
	elif grep -q 'UCX  \(WARN\|ERROR\)' "$work/client.log" "$work/server.log"; then
		not_ok "$name: without UCX warnings or errors"
		show "$work/client.log"
		show "$work/server.log"
	fi
}

# runs LINK: the tests over each transport, small and large messages.
runs() {
	for tls in rc_verbs,ud_verbs,self ud_verbs,self; do
		for test in tag_lat tag_bw ucp_put_bw ucp_get stream_bw; do
			ucx "$test over $tls ($1)" $tls $test -n 1000 -w 100
		done
		ucx "tag_bw of 1 MiB messages over $tls ($1)" $tls tag_bw \
			-s 1048576 -n 20 -w 2
	done
}

sim_start --provider="$provider"
ucx_info -d >"$work/info" 2>&1
check "ucx_info -d lists rc_verbs and ud_verbs on mlx4_0:1 and mlx4_0:2" sh -c "
	test \$(grep -c 'Transport: rc_verbs' '$work/info') -eq 2 &&
	test \$(grep -c 'Transport: ud_verbs' '$work/info') -eq 2 &&
	grep -q 'Device: mlx4_0:1' '$work/info' &&
	grep -q 'Device: mlx4_0:2' '$work/info'"
UCX_LOG_LEVEL=debug ucx_info -d >"$work/debug" 2>&1
# (UCX prints the device ID in decimal: 4099 is 0x1003, 4103 0x1007.)
check "UCX finds the adapter's PCI function through /sys (a Mellanox ConnectX-3)" sh -c "
	grep -q \"mlx4_0: PF sysfs path is '/sys/devices/pci0000:00/0000:01:00.0'\" '$work/debug' &&
	grep -Eq 'mlx4_0: vendor_id 0x15b3 device_id (4099|4103)$' '$work/debug' &&
	! grep -q 'pci bandwidth undetected' '$work/debug'"
# lost TLS: 3 packets lost under a run; RC's retransmission (the
# adapter's) or UD's (UCX's own) recovers, and the run finishes.
lost() {
	before=$("$MLX4SIM" fault status | sed -n 's/^dropped //p')
	"$MLX4SIM" fault drop --next 3 >/dev/null 2>&1
	ucx "tag_bw with 3 packets lost over $1" $1 tag_bw -s 65536 -n 200 -w 10
	after=$("$MLX4SIM" fault status | sed -n 's/^dropped //p')
	check "the 3 losses happened over $1 ($before, then $after)" \
		test $((after - before)) -eq 3
	"$MLX4SIM" fault clear >/dev/null 2>&1
}

# Both ports go down under a run of puts: the requester's retries run out
# and the client ends with that error, neither hanging nor claiming
# success.  (Its server waits for a peer that is gone, as on a real
# fabric: ended here.  Puts, since a tag_bw client may instead wait for
# flow-control credits, with no request outstanding to fail, until UCX's
# UD timeout or keepalive, which take from 30 s to ever.)
ports_down() {
	new_port
	env UCX_TLS=rc_verbs,ud_verbs,self timeout 120 ucx_perftest \
		-t ucp_put_bw -s 4096 -n 1000000000 -p $port >"$work/server.log" 2>&1 &
	server=$!
	sleep 0.5
	env UCX_TLS=rc_verbs,ud_verbs,self timeout 120 ucx_perftest localhost \
		-t ucp_put_bw -s 4096 -n 1000000000 -p $port >"$work/client.log" 2>&1 &
	client=$!
	tries=0
	until grep -q 'Stage' "$work/client.log" || [ $tries -ge 100 ]; do
		sleep 0.1
		tries=$((tries + 1))
	done
	"$MLX4SIM" fault port-down --port 1 >/dev/null 2>&1
	"$MLX4SIM" fault port-down --port 2 >/dev/null 2>&1
	start=$(date +%s)
	wait $client 2>/dev/null
	status=$? took=$(($(date +%s) - start))
	kill $server 2>/dev/null
	wait $server 2>/dev/null
	"$MLX4SIM" fault port-up --port 1 >/dev/null 2>&1
	"$MLX4SIM" fault port-up --port 2 >/dev/null 2>&1
	if [ $status -ne 0 ] && [ $status -ne 124 ] && [ $took -lt 60 ] &&
	   grep -q 'transport retry counter exceeded' "$work/client.log"; then
		ok "both ports down under puts over rc_verbs: the client fails with the retries run out (${took} s)"
	else
		not_ok "both ports down under puts over rc_verbs: the client fails with the retries run out (status $status after ${took} s)"
		show "$work/client.log"
	fi
}

runs InfiniBand
lost rc_verbs,ud_verbs,self
lost ud_verbs,self
ports_down
check "no strict-mode breach on InfiniBand" sim_stop

if why=$(no_ethernet_ports); then
	skip "UCX over RoCE: no Ethernet ports on this machine: $why"
	finish
fi
# UCX 1.13 takes a received datagram's network header type from the
# work completion's sl, which mlx4 fills with the VLAN priority: with a
# RoCE v2 IPv4 GID (its automatic choice) it drops every datagram on a
# ConnectX-3 as on this simulator.  A real cluster picks another GID the
# same way: here the port's link-local RoCE v2 GID, index 1.
export UCX_IB_GID_INDEX=1
sim_start --provider="$provider" --link-layer=eth
runs RoCE
check "no strict-mode breach over RoCE" sim_stop
finish

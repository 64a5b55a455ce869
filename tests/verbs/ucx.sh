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
runs InfiniBand
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

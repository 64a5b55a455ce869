#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# RoCE: the simulator's Ethernet ports (--link-layer eth) as programs see
# them (ibv_devinfo, sysfs, their network interfaces), and the libibverbs
# examples and perftest reaching their peer by GID, RoCE v1 and v2, data
# checked; what the kernel refuses on a RoCE port; the capture of the
# wire (--pcap) read by Wireshark's dissectors (tshark), with the traffic
# class, flow label and (through a VLAN) SL that programs asked for.
# Usage: roce.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ibv_rc_pingpong ibverbs-utils
need_program ip iproute2
need_ethernet_ports
provider=$1

# grh_on_wire: grh_fields' packets in the capture carry its values
# (provider-verbs.c: grh_tclass(), grh_flow_label()), RC's (SEND and the
# ACK of the responder, whose path has them too) and UD's, on RoCE v1
# (the GRH), v2 over IPv6 (its traffic class and flow label) and over
# IPv4 (the traffic class as the TOS byte: DSCP, ECN).
grh_on_wire() {
	tshark -r "$capture" -T fields -E separator=, -e eth.type \
		-e infiniband.grh.tclass -e infiniband.grh.flowlabel \
		-e ipv6.tclass -e ipv6.flow -e ip.dsfield \
		-e infiniband.bth.opcode >"$work/grh-fields" 2>/dev/null
	for want in "0x8915,160,703488,,,,4" "0x8915,96,74560,,,,100" \
		    "0x86dd,,,0x000000a4,0x0abc01,,4" \
		    "0x86dd,,,0x00000064,0x012341,,100" \
		    "0x0800,,,,,0xac,4" "0x0800,,,,,0xac,17" \
		    "0x0800,,,,,0x6c,100"; do
		check "the capture: traffic class and flow label on the wire (type, GRH class, label, IPv6 class, label, IPv4 DS, opcode: $want)" \
			grep -qx "$want" "$work/grh-fields"
	done
}

capture=$work/roce.pcap
sim_start --provider="$provider" --link-layer=eth --hcas 2 --pcap="$capture"
ibv_devinfo -v >"$work/devinfo" 2>&1
check "ibv_devinfo -v succeeds" test $? -eq 0
check "four Ethernet ports, ACTIVE, 4X QDR, MTU 1024 for 1500-byte frames, no LIDs" sh -c "
	test \$(grep -c 'link_layer:.*Ethernet' '$work/devinfo') -eq 4 &&
	test \$(grep -c 'state:.*PORT_ACTIVE (4)' '$work/devinfo') -eq 4 &&
	test \$(grep -c 'active_width:.*4X' '$work/devinfo') -eq 4 &&
	test \$(grep -c 'active_speed:.*10.0 Gbps' '$work/devinfo') -eq 4 &&
	test \$(grep -c 'active_mtu:.*1024' '$work/devinfo') -eq 4 &&
	test \$(grep -c 'port_lid:[[:space:]]*0$' '$work/devinfo') -eq 4"
check "GIDs 0 and 1: the link-local address of the port's MAC, RoCE v1 and v2" sh -c "
	grep -q 'GID\[  0\]:.*fe80:0000:0000:0000:0202:c9ff:fea1:b201, RoCE v1' '$work/devinfo' &&
	grep -q 'GID\[  1\]:.*fe80::202:c9ff:fea1:b201, RoCE v2' '$work/devinfo'"
check "GIDs 2 and 3: the interface's IPv4 address, RoCE v1 and v2" sh -c "
	grep -q 'GID\[  2\]:.*0000:0000:0000:0000:0000:ffff:c0a8:4d01, RoCE v1' '$work/devinfo' &&
	grep -q 'GID\[  3\]:.*::ffff:192.168.77.1, RoCE v2' '$work/devinfo'"
check "GIDs 4 and 5: its IPv6 address, RoCE v1 and v2" sh -c "
	grep -q 'GID\[  4\]:.*fd00:0077:0000:0000:0000:0000:0000:0001, RoCE v1' '$work/devinfo' &&
	grep -q 'GID\[  5\]:.*fd00:77::1, RoCE v2' '$work/devinfo'"
ports=$SYSFS_PATH/class/infiniband/mlx4_1/ports
check "sysfs: each GID's type and interface (gid_attrs)" sh -c "
	test \"\$(cat $ports/2/gid_attrs/types/1)\" = 'RoCE v2' &&
	test \"\$(cat $ports/2/gid_attrs/types/2)\" = 'IB/RoCE v1' &&
	test \"\$(cat $ports/2/gid_attrs/ndevs/3)\" = eth3 &&
	test \"\$(cat $ports/2/gid_attrs/types/5)\" = 'RoCE v2' &&
	test ! -e $ports/2/gid_attrs/types/6"
check "sysfs: the adapter's interfaces under device/net, with the ports' MACs" sh -c "
	test \"\$(cat $SYSFS_PATH/class/infiniband/mlx4_1/device/net/eth3/address)\" = 00:02:c9:a1:b2:12 &&
	test \"\$(cat $SYSFS_PATH/class/infiniband/mlx4_0/device/net/eth0/dev_port)\" = 0"
ip -o link show eth3 >"$work/link" 2>&1
check "the interface exists in the programs' network, with the port's MAC" \
	grep -q "eth3.*UP.*link/ether 00:02:c9:a1:b2:12" "$work/link"

# The examples: server on mlx4_0 port 1, clients of both adapters and ports.
for gid in 0 1 3; do
	pair "ibv_rc_pingpong -g $gid (RoCE v$((gid % 2 + 1)))" "" "" \
		ibv_rc_pingpong -g $gid -c -n 500 -s 4096
	pair "ibv_uc_pingpong -g $gid" "" "" \
		ibv_uc_pingpong -g $gid -c -n 500 -s 1024
	pair "ibv_srq_pingpong -g $gid -e" "" "" \
		ibv_srq_pingpong -g $gid -c -n 500 -e
done
for gid in 0 1; do
	pair "ibv_ud_pingpong -g $gid" "" "" ibv_ud_pingpong -g $gid -c -n 500 -s 512
	pair "ibv_ud_pingpong -g $gid -e" "" "" \
		ibv_ud_pingpong -g $gid -c -n 200 -e
done

# across_adapters TOOL ARGS: the server on mlx4_0, the client on mlx4_1
# port 2, so the packets cross the switch between two adapters.
across_adapters() {
	new_port
	guarded "$@" -p $port >"$work/server.log" 2>&1 &
	server=$!
	run_client "$work/client.log" "$@" -d mlx4_1 -i 2 -p $port localhost
	c=$?
	wait $server; s=$?
	if [ $s -eq 0 ] && [ $c -eq 0 ] &&
	   grep -q "remote address:.*GID.*\(b212\|192.168.77.4\|fd00:77::4\)" "$work/server.log"; then
		ok "$*: mlx4_0 port 1 and mlx4_1 port 2"
	else
		not_ok "$*: mlx4_0 port 1 and mlx4_1 port 2 ($s $c)"
		show "$work/server.log"; show "$work/client.log"
	fi
}
across_adapters ibv_rc_pingpong -g 0 -c -n 300 -s 8192
across_adapters ibv_rc_pingpong -g 3 -c -n 300
across_adapters ibv_rc_pingpong -g 5 -c -n 300
across_adapters ibv_ud_pingpong -g 1 -c -n 300
# IP-based GIDs: libibverbs finds the peer's MAC by ARP or neighbour
# discovery on the switch, through the kernel's neighbour tables.
across_adapters ibv_ud_pingpong -g 2 -c -n 300
across_adapters ibv_ud_pingpong -g 3 -c -n 300
across_adapters ibv_ud_pingpong -g 5 -c -n 300

# Sizes kept small: every byte goes into the capture, which tshark reads
# whole (ib_write_bw -n 2000 -s 65536 wrote 140 MB, and on a loaded
# machine took the daemon longer than the stall watch allows).
if command -v ib_send_bw >/dev/null 2>&1; then
	pair "ib_send_bw -x 0" "" "" ib_send_bw -x 0 -n 2000 -s 4096
	pair "ib_write_bw -x 3" "" "" ib_write_bw -x 3 -n 300 -s 65536
	pair "ib_read_lat -x 1" "" "" ib_read_lat -x 1 -n 500
	pair "ib_atomic_bw -x 0" "" "" ib_atomic_bw -x 0 -n 500
	pair "ib_send_lat -x 0 -c UD" "" "" ib_send_lat -x 0 -c UD -n 1000
else
	skip "perftest over RoCE: ib_send_bw not found (apt-get install perftest)"
fi

# Traffic class, flow label and SL other than 0, UD and RC, on GIDs 0, 1
# and 3 (RoCE v1, v2 over IPv6, v2 over IPv4): the program checks what it
# can see, the capture below the rest.
"$TESTS_BIN/verbs/provider-verbs" "$provider" grh_fields >"$work/grh.tap" 2>&1
grh=$?
check "provider-verbs grh_fields: traffic class, flow label, SL on GIDs 0, 1, 3" sh -c "
	test $grh -eq 0 && grep -qx '1\.\.12' '$work/grh.tap' &&
	! grep -q '^not ok' '$work/grh.tap' || { cat '$work/grh.tap'; false; }"

# The kernel wants a GRH on a RoCE port: an RC QP given no GID is refused.
new_port
guarded ibv_rc_pingpong -n 10 -p $port >"$work/server.log" 2>&1 &
server=$!
run_client "$work/client.log" ibv_rc_pingpong -n 10 -p $port localhost
c=$?
wait $server
s=$?
check "an RC path with no GRH on a RoCE port: modify to RTR refused" sh -c "
	test $c -ne 0 && test $s -ne 0 &&
	cat '$work/server.log' '$work/client.log' | grep -q 'Failed to modify QP to RTR'"
check "no strict-mode breach" sim_stop

# The capture of all that, judged by Wireshark's dissectors.
if command -v tshark >/dev/null 2>&1; then
	tshark -r "$capture" -q -z expert >"$work/expert" 2>&1
	check "tshark reads the capture" test $? -eq 0
	check "tshark: no malformed frame, no bad checksum, no warning" sh -c "
		! grep -q 'Errors\|Warns\|Malformed' '$work/expert'"
	tshark -r "$capture" >"$work/frames" 2>/dev/null
	for kind in "RoCE .* RC Send First" "RRoCE .* RC Send Middle" \
		    "RRoCE .* RC Send Last" "192.168.77.* RRoCE" \
		    "RC RDMA Write First" "RC RDMA Write Last" "RC RDMA Read Request" \
		    "RC RDMA Read Response Only" "RC Fetch Add\|RC Compare Swap" \
		    "RC Atomic Acknowledge" "RC Acknowledge" "UC Send Only" \
		    "UD Send Only"; do
		check "the capture holds: $kind" grep -q "$kind" "$work/frames"
	done
	grh_on_wire
else
	skip "the capture under tshark: tshark not found (apt-get install tshark)"
fi

# VLAN interfaces (--vlan): their GIDs, and RoCE through them, tagged.
if "$MLX4SIM" run --link-layer=eth --vlan=100 -- true 2>"$work/vlan.log"; then
	capture=$work/vlan.pcap
	sim_start --provider="$provider" --link-layer=eth --vlan=100 \
		--pcap="$capture"
	ports=$SYSFS_PATH/class/infiniband/mlx4_0/ports
	check "--vlan 100: GIDs 6 to 9 are eth0.100's, its IPv4 and link-local addresses" sh -c "
		test \"\$(cat $ports/1/gid_attrs/ndevs/6)\" = eth0.100 &&
		test \"\$(cat $ports/1/gids/7)\" = 0000:0000:0000:0000:0000:ffff:0a00:6401 &&
		test \"\$(cat $ports/1/gids/8)\" = \"\$(cat $ports/1/gids/0)\" &&
		test \"\$(cat $ports/1/gid_attrs/ndevs/9)\" = eth0.100"
	pair "ibv_ud_pingpong -g 9, through VLAN 100" "" "" \
		ibv_ud_pingpong -g 9 -c -n 200
	pair "ibv_rc_pingpong -g 6, through VLAN 100" "" "" \
		ibv_rc_pingpong -g 6 -c -n 200 -s 4096
	# The SL rides in the tag's priority bits (PCP).
	pair "ibv_rc_pingpong -g 6 -l 5, through VLAN 100" "" "" \
		ibv_rc_pingpong -g 6 -l 5 -c -n 20
	check "no strict-mode breach" sim_stop
	if command -v tshark >/dev/null 2>&1; then
		tshark -r "$capture" -T fields -e vlan.id -e infiniband.bth.opcode \
			>"$work/vlan-frames" 2>/dev/null
		check "the capture: RoCE frames tagged with VLAN 100, UD and RC" sh -c "
			grep -q '^100[[:space:]]100' '$work/vlan-frames' &&
			grep -q '^100[[:space:]][012]$' '$work/vlan-frames'"
		tshark -r "$capture" -T fields -e vlan.id -e vlan.priority \
			>"$work/vlan-pcp" 2>/dev/null
		check "the capture: SL 5 as the tag's priority bits" \
			grep -q '^100[[:space:]]5$' "$work/vlan-pcp"
	fi
elif grep -q "802.1Q" "$work/vlan.log"; then
	skip "VLAN interfaces, and the SL as a tag's priority bits: this kernel has no 802.1Q VLAN support (CONFIG_VLAN_8021Q, module 8021q)"
else
	not_ok "--vlan: the simulator did not start"
	show "$work/vlan.log"
fi

# One port of each kind: port 1 InfiniBand, port 2 Ethernet.
sim_start --provider="$provider" --link-layer=ib,eth
ibv_devinfo >"$work/devinfo" 2>&1
check "--link-layer ib,eth: port 1 InfiniBand, port 2 Ethernet" sh -c "
	sed -n '/port:.*1/,/port:.*2/p' '$work/devinfo' | grep -q 'link_layer:.*InfiniBand' &&
	sed -n '/port:.*2/,\$p' '$work/devinfo' | grep -q 'link_layer:.*Ethernet'"
pair "ibv_rc_pingpong on the InfiniBand port, by LID" "" "" \
	ibv_rc_pingpong -i 1 -c -n 200
pair "ibv_rc_pingpong on the Ethernet port, by GID" "" "" \
	ibv_rc_pingpong -i 2 -g 1 -c -n 200
check "no strict-mode breach" sim_stop

# A ConnectX-3, whose firmware has RoCE v1 only (mlx4_ib offers RoCE v2
# where it reports MLX4_DEV_CAP_FLAG2_ROCE_V1_V2, a ConnectX-3 Pro's).
sim_start --provider="$provider" --link-layer=eth --model=cx3
ibv_devinfo -v >"$work/devinfo" 2>&1
check "--model cx3: GIDs 0-2 the link-local, IPv4 and IPv6 addresses, RoCE v1 only" sh -c "
	grep -q 'GID\[  0\]:.*fe80:0000:0000:0000:0202:c9ff:fea1:b201, RoCE v1' '$work/devinfo' &&
	grep -q 'GID\[  1\]:.*0000:0000:0000:0000:0000:ffff:c0a8:4d01, RoCE v1' '$work/devinfo' &&
	grep -q 'GID\[  2\]:.*fd00:0077:0000:0000:0000:0000:0000:0001, RoCE v1' '$work/devinfo' &&
	! grep -q 'RoCE v2' '$work/devinfo' &&
	test \"\$(cat $SYSFS_PATH/class/infiniband/mlx4_0/ports/1/gid_attrs/types/1)\" = 'IB/RoCE v1' &&
	test ! -e $SYSFS_PATH/class/infiniband/mlx4_0/ports/1/gid_attrs/types/3"
pair "--model cx3: ibv_rc_pingpong by its IPv4 GID (RoCE v1)" "" "" \
	ibv_rc_pingpong -g 1 -c -n 200 -s 4096
check "no strict-mode breach" sim_stop
finish

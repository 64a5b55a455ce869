#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The wire (--uplink): two simulator runs, each in a network namespace of
# its own, joined by a veth pair.  The libibverbs examples (buffers
# checked, -c), wire-peer (READs, WRITEs and atomics checked, the error
# completions of RNR, remote access and retry exhaustion) and perftest
# reach the other run across it, RC and UD,
# first clean, then with loss, reordering and duplicates on the wire (tc
# netem where the kernel has it, else the simulator's own faults, which
# act on what leaves through the uplink); every RoCE v2 frame of the
# capture has a good ICRC, judged by a checker of its own, and tshark
# decodes each as RoCE v2; two runs started with default addresses take
# different ones.
# Usage: wire.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ibv_rc_pingpong ibverbs-utils
need_program ip iproute2
need_root "the two runs' network namespaces and their veth pair need root (ip netns add)"
need_ethernet_ports
provider=$1
ICRC_CHECK=$TESTS_BIN/verbs/icrc-check
WIRE_PEER=$TESTS_BIN/verbs/wire-peer

ns_a=mlx4wire-a$$ ns_b=mlx4wire-b$$
veth_a=mwa$$ veth_b=mwb$$
wire_cleanup() {
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	ip link del "$veth_a" 2>/dev/null
	cleanup
}
trap wire_cleanup EXIT

if ! ip netns add "$ns_a" 2>"$work/netns.log" ||
   ! ip netns add "$ns_b" 2>>"$work/netns.log"; then
	echo "1..0 # SKIP cannot make network namespaces (ip netns add): $(head -1 "$work/netns.log")"
	exit 0
fi
if ! ip link add "$veth_a" type veth peer name "$veth_b" 2>"$work/veth.log" ||
   ! ip link set "$veth_a" netns "$ns_a" || ! ip link set "$veth_b" netns "$ns_b"; then
	echo "1..0 # SKIP cannot make a veth pair (ip link add type veth): $(head -1 "$work/veth.log")"
	exit 0
fi
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

# The run in namespace A takes 192.168.77.11 on its first port (--host-id 10).
peer=192.168.77.11
lossy=

# run_pair "SERVER" "CLIENT" SETUP: SERVER in a run in namespace A, then
# CLIENT (given A's address) in one in namespace B, each after SETUP;
# their exit statuses in $a and $b.
run_pair() {
	server=$1 client=$2 setup=$3
	ip netns exec "$ns_a" timeout 150 "$MLX4SIM" run --provider="$provider" \
		--link-layer=eth --uplink "$veth_a" --host-id 10 \
		--pcap "$work/a-$test_count.pcap" -- \
		sh -c "$setup timeout 120 $server" >"$work/a.log" 2>&1 &
	a=$!
	tries=0
	while :; do
		ip netns exec "$ns_b" timeout 150 "$MLX4SIM" run \
			--provider="$provider" --link-layer=eth \
			--uplink "$veth_b" --host-id 20 -- \
			sh -c "$setup timeout 120 $client $peer" >"$work/b.log" 2>&1
		b=$?
		grep -qi "couldn't connect\|unable to connect" "$work/b.log" ||
			break
		tries=$((tries + 1))
		[ $tries -lt 20 ] || break
		sleep 0.5
	done
	wait $a
	a=$?
}

# last_ack_lost: one side's last SEND exhausted its retries while the
# other finished.  ibv_rc_pingpong has no closing handshake: when the
# ACK of the last message is lost, the side that received it is done
# and gone before the retransmission, on a lossy fabric as here.
last_ack_lost() {
	{ [ $a -ne 0 ] && [ $b -eq 0 ] &&
	  grep -q "transport retry counter exceeded" "$work/a.log"; } ||
	{ [ $b -ne 0 ] && [ $a -eq 0 ] &&
	  grep -q "transport retry counter exceeded" "$work/b.log"; }
}

# two_runs NAME "SERVER" "CLIENT" [FAULTS]: run_pair; passes when both
# runs exit 0 (the programs did, and the daemons saw no breach).  FAULTS,
# when given, are `mlx4sim fault` arguments (;-separated) set in both runs
# before their program starts.  With $lossy set, a pair that met
# last_ack_lost runs again once, saying so.
two_runs() {
	name=$1 setup=
	if [ -n "$4" ]; then
		setup=$(echo "$4" | tr ';' '\n' |
			sed "s|^ *|'$MLX4SIM' fault |; s|\$| \&\&|" | tr '\n' ' ')
	fi
	run_pair "$2" "$3" "$setup"
	if [ -n "$lossy" ] && last_ack_lost; then
		echo "# $name: the last ACK was lost after its receiver ended; again"
		run_pair "$2" "$3" "$setup"
	fi
	verdict "$name" "server's run (namespace A)" $a "$work/a.log" \
		"client's run (namespace B)" $b "$work/b.log"
}

two_runs "ibv_rc_pingpong -c across the wire, 4 KiB (RoCE v2, GID 3)" \
	"ibv_rc_pingpong -g 3 -c -n 300 -s 4096" \
	"ibv_rc_pingpong -g 3 -c -n 300 -s 4096"
two_runs "ibv_rc_pingpong -c across the wire, 64 KiB messages of 64 packets" \
	"ibv_rc_pingpong -g 3 -c -n 100 -s 65536" \
	"ibv_rc_pingpong -g 3 -c -n 100 -s 65536"
two_runs "ibv_rc_pingpong -c across the wire, 1 MiB messages (past the window)" \
	"ibv_rc_pingpong -g 3 -c -n 20 -s 1048576" \
	"ibv_rc_pingpong -g 3 -c -n 20 -s 1048576"
two_runs "ibv_rc_pingpong -c across the wire over IPv6 (GID 5: neighbour discovery across)" \
	"ibv_rc_pingpong -g 5 -c -n 100" "ibv_rc_pingpong -g 5 -c -n 100"
two_runs "ibv_rc_pingpong -c across the wire, RoCE v1 (GID 2, EtherType 0x8915)" \
	"ibv_rc_pingpong -g 2 -c -n 100 -s 4096" \
	"ibv_rc_pingpong -g 2 -c -n 100 -s 4096"
two_runs "ibv_ud_pingpong -c across the wire, RoCE v1 link-local (GID 0)" \
	"ibv_ud_pingpong -g 0 -c -n 100" "ibv_ud_pingpong -g 0 -c -n 100"
two_runs "ibv_ud_pingpong -c across the wire" \
	"ibv_ud_pingpong -g 3 -c -n 300 -s 1024" \
	"ibv_ud_pingpong -g 3 -c -n 300 -s 1024"
two_runs "READs of 196 packets and WRITEs read back (every byte), FETCH_ADDs, COMPARE_SWAP; RNR, remote access and retry exhaustion as completions (wire-peer)" \
	"$WIRE_PEER server" "$WIRE_PEER client"
if command -v ib_write_bw >/dev/null 2>&1; then
	two_runs "ib_write_bw 64 KiB across the wire" \
		"ib_write_bw -x 3 -s 65536 -n 300 -F" \
		"ib_write_bw -x 3 -s 65536 -n 300 -F"
	two_runs "ib_read_lat 2 B across the wire" \
		"ib_read_lat -x 3 -s 2 -n 300 -F" "ib_read_lat -x 3 -s 2 -n 300 -F"
else
	skip "ib_write_bw, ib_read_lat across the wire: perftest not found (apt-get install perftest)"
fi

# Loss, reordering and duplicates on the wire.
if ip netns exec "$ns_a" tc qdisc add dev "$veth_a" root netem loss 1% delay 1ms reorder 10% 2>"$work/netem.log" &&
   ip netns exec "$ns_b" tc qdisc add dev "$veth_b" root netem loss 1% delay 1ms reorder 10% duplicate 1%; then
	faults=
	how="tc netem: 1% loss, 10% reordered, 1% duplicated"
else
	faults="drop --rate 0.02;reorder --rate 0.02;duplicate --rate 0.01"
	how="the simulator's faults on the uplink: 2% dropped, 2% reordered, 1% duplicated (no tc netem here: $(head -1 "$work/netem.log"))"
fi
echo "# faults: $how"
lossy=1
two_runs "ibv_rc_pingpong -c, 64 KiB, through loss and reordering" \
	"ibv_rc_pingpong -g 3 -c -n 100 -s 65536" \
	"ibv_rc_pingpong -g 3 -c -n 100 -s 65536" "$faults"
faulty_capture=$work/a-$((test_count - 1)).pcap
two_runs "wire-peer through loss, reordering and duplicates: every byte, atomics run once" \
	"$WIRE_PEER server" "$WIRE_PEER client" "$faults"
if command -v ib_write_bw >/dev/null 2>&1; then
	two_runs "ib_write_bw 64 KiB through loss and reordering" \
		"ib_write_bw -x 3 -s 65536 -n 200 -F" \
		"ib_write_bw -x 3 -s 65536 -n 200 -F" "$faults"
	two_runs "ib_read_lat through loss and reordering (READs answered again)" \
		"ib_read_lat -x 3 -s 2 -n 200 -F" "ib_read_lat -x 3 -s 2 -n 200 -F" \
		"$faults"
fi
ip netns exec "$ns_a" tc qdisc del dev "$veth_a" root 2>/dev/null
ip netns exec "$ns_b" tc qdisc del dev "$veth_b" root 2>/dev/null
lossy=

# The frames on the wire: ICRC and tshark.
capture=$work/a-0.pcap
"$ICRC_CHECK" "$capture" >"$work/icrc" 2>&1
check "every RoCE v2 frame of the capture has a good ICRC" sh -c "
	tail -1 '$work/icrc' | grep -q '^good [1-9][0-9]* bad 0$'"
"$ICRC_CHECK" "$faulty_capture" >"$work/icrc-faults" 2>&1
check "... through the faults too (retransmissions, NAKs)" sh -c "
	tail -1 '$work/icrc-faults' | grep -q '^good [1-9][0-9]* bad 0$'"
# A frame corrupted on purpose: the checker must see it.
first=$(sed -n '1s/ .*//p' "$work/icrc")
cp "$capture" "$work/bad.pcap"
# The first frame's byte 60 (in its BTH or payload): flipped.
offset=$((24 + 16 + 60))
if [ "$first" = 1 ]; then
	byte=$(od -An -tu1 -j $offset -N1 "$capture" | tr -d ' ')
	printf "$(printf '\\%03o' $(( (byte ^ 0xff) & 0xff )))" |
		dd of="$work/bad.pcap" bs=1 seek=$offset conv=notrunc 2>/dev/null
fi
"$ICRC_CHECK" "$work/bad.pcap" >"$work/icrc-bad" 2>&1
check "a frame corrupted on purpose fails the ICRC check" sh -c "
	test '$first' = 1 && grep -q '^1 0x[0-9a-f]* bad$' '$work/icrc-bad' &&
	tail -1 '$work/icrc-bad' | grep -q ' bad 1$'"
if command -v tshark >/dev/null 2>&1; then
	tshark -r "$capture" -Y "udp.port == 4791" -T fields -e frame.number \
		-e infiniband.bth.opcode -e infiniband.invariant.crc \
		>"$work/tshark" 2>"$work/tshark.err"
	check "tshark decodes every UDP 4791 frame as RoCE v2 (BTH, ICRC)" sh -c "
		test -s '$work/tshark' &&
		! grep -qv '^[0-9]*	[0-9][0-9]*	0x[0-9a-f]*\$' '$work/tshark'"
	# Wireshark shows the ICRC but does not verify it (4.0): its value
	# is the one the checker found good, frame by frame.
	check "tshark's ICRC of each frame is the one the checker computed" sh -c "
		cut -f1,3 '$work/tshark' | tr '\t' ' ' | sort >'$work/t' &&
		grep ' good\$' '$work/icrc' | cut -d' ' -f1,2 | sort >'$work/c' &&
		cmp '$work/t' '$work/c'"
	tshark -r "$capture" -q -z expert >"$work/expert" 2>&1
	check "tshark: no malformed frame, no error, no warning" sh -c "
		! grep -q 'Errors\|Warns\|Malformed' '$work/expert'"
else
	skip "the capture under tshark: tshark not found (apt-get install tshark)"
fi

# Addresses: --host-id, and two runs with defaults on one segment.
ip netns exec "$ns_a" "$MLX4SIM" run --link-layer=eth --uplink "$veth_a" \
	--host-id 10 -- sh -c 'cat $SYSFS_PATH/class/infiniband/mlx4_0/ports/1/gids/3
		cat $SYSFS_PATH/class/infiniband/mlx4_0/ports/1/gid_attrs/types/3
		cat $SYSFS_PATH/class/infiniband/mlx4_0/node_guid; echo' \
	>"$work/gid" 2>"$work/gid.err"
check "--host-id 10: GID 3 is RoCE v2 over 192.168.77.11; the GUIDs move" sh -c "
	sed -n 1p '$work/gid' | grep -qx '0000:0000:0000:0000:0000:ffff:c0a8:4d0b' &&
	sed -n 2p '$work/gid' | grep -qx 'RoCE v2' &&
	sed -n 3p '$work/gid' | grep -qx '0002:c903:00a1:bc00'"
show_addr='ip -4 -o addr show eth0; cat $SYSFS_PATH/class/infiniband/mlx4_0/node_guid; sleep 2'
ip netns exec "$ns_a" "$MLX4SIM" run --link-layer=eth --uplink "$veth_a" -- \
	sh -c "$show_addr" >"$work/addr-a" 2>&1 &
a=$!
ip netns exec "$ns_b" "$MLX4SIM" run --link-layer=eth --uplink "$veth_b" -- \
	sh -c "$show_addr" >"$work/addr-b" 2>&1
wait $a
check "two runs with default addresses on one segment take different ones" sh -c "
	a=\$(grep -o 'inet 192.168.77.[0-9]*' '$work/addr-a') &&
	b=\$(grep -o 'inet 192.168.77.[0-9]*' '$work/addr-b') &&
	test \"\$a\" != \"\$b\" &&
	test \"\$(grep 0002: '$work/addr-a')\" != \"\$(grep 0002: '$work/addr-b')\""
finish

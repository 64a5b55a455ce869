#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# librdmacm's programs on the simulator (rdmacm-utils): rping with its
# data checked, on RoCE and on InfiniBand (through the ports' IP
# interfaces), the client on the server's port, on another port and on
# another adapter, IPv4 and IPv6; what a refused connection, an address
# no port has and one with no route give; /dev/infiniband/rdma_cm and the
# interfaces as programs see them; the file at its ABI, hostile
# (rdmacm-abi.c); the connection manager's events in order, a peer that
# rejects, disconnects or goes (rdmacm-events.c); ucmatose with several
# connections, udaddy (UD, by SIDR), mckey (multicast), rdma_server and
# rdma_client, cmtime, rstream and riostream (rsockets), perftest's -R,
# UCX's io_demo by its rdmacm connection manager, and libfabric's verbs
# provider (fi_pingpong, MSG and RDM), on both link layers; InfiniBand
# without a subnet manager, and under OpenSM.  Every program runs under
# a time limit (guarded).
# Usage: rdmacm.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program rping rdmacm-utils
need_program ip iproute2
# The ports' IP interfaces live in a network namespace of the daemon's.
need_ethernet_ports
provider=$1

# client_retried PATTERN CMD...: the client, logged in client.log, run
# again while its log says PATTERN (its server not yet listening); its
# exit status in client_status.
client_retried() {
	refused=$1
	shift
	run_client "$work/client.log" "$@"
	client_status=$?
	unset refused
}

# rping_pair NAME SERVER_ADDRESS [CLIENT OPTIONS]: ten pings, data
# checked by both (-V), the server showing each (-v).  The client tries
# again while the server is not yet listening (REJECTED).
rping_pair() {
	name=$1 addr=$2
	shift 2
	new_port
	guarded rping -s -v -V -C 10 -a "$addr" -p $port >"$work/server.log" 2>&1 &
	server=$!
	client_retried RDMA_CM_EVENT_REJECTED rping -c -V -C 10 -a "$addr" \
		-p $port "$@"
	wait $server
	server_status=$?
	if [ $server_status -eq 0 ] && [ $client_status -eq 0 ] &&
	   [ "$(grep -c 'server ping data: rdma-ping-' "$work/server.log")" -eq 10 ]; then
		ok "$name"
	else
		not_ok "$name (server $server_status, client $client_status)"
		show "$work/server.log"
		show "$work/client.log"
	fi
}

# cm_once SERVER CLIENT: two programs (commands as strings), the client
# tried again while the server is not yet listening; both must end well.
cm_once() {
	guarded sh -c "$1" >"$work/server.log" 2>&1 &
	server=$!
	sleep 0.3
	client_retried "REJECTED\|UNREACHABLE\|Connection refused\|Unexpected CM event" \
		sh -c "$2"
	[ $client_status -eq 0 ] || kill $server 2>/dev/null
	wait $server
	server_status=$?
	[ $server_status -eq 0 ] && [ $client_status -eq 0 ] &&
		! grep -qi "error\|fail" "$work/server.log" "$work/client.log"
}

# cm_pair NAME SERVER CLIENT [ATTEMPTS]: cm_once, passing if one of its
# attempts (1 unless said) does.
cm_pair() {
	attempt=1
	until cm_once "$2" "$3"; do
		if [ $attempt -ge "${4:-1}" ]; then
			not_ok "$1 (server $server_status, client $client_status)"
			show "$work/server.log"
			show "$work/client.log"
			return 1
		fi
		echo "# $1: attempt $attempt failed, again"
		attempt=$((attempt + 1))
	done
	ok "$1"
}

# cmtime_pair LINK SERVER_ADDRESS CLIENT_ADDRESS: cmtime's 20 connections,
# each step timed.  Its server never ends (killed once the client has),
# and its client ends well even when refused: the client must have heard
# no event but those it waits for, and timed every step.
cmtime_pair() {
	new_port
	timeout 60 cmtime -b $2 -p $port >"$work/server.log" 2>&1 &
	server=$!
	client_retried REJECTED cmtime -s $2 -b $3 -p $port -c 20
	kill $server 2>/dev/null
	wait $server 2>/dev/null
	check "cmtime, 20 connections timed step by step ($1)" sh -c "
		test $client_status -eq 0 && ! grep -q '^event:' '$work/client.log' &&
		grep -q '^connect *: *[0-9.]* *[0-9.]* *[0-9.]* *[0-9.]*\$' '$work/client.log' &&
		grep -q '^disconnect *: *[0-9.]* *[0-9.]* *[0-9.]* *[0-9.]*\$' '$work/client.log' ||
		{ cat '$work/client.log' '$work/server.log'; false; }"
}

# io_demo_pair LINK SERVER_ADDRESS CLIENT_ADDRESS: UCX's io_demo, which
# connects by address through UCX's connection managers, here its rdmacm
# one alone (the UCP address must fit rdma_cm's private data: RC only,
# one device a side, the addresses' ports: mlx4_0 port 1, mlx4_1 port 2);
# reads and writes with their data checked (-q).  Its client tries until
# the server listens; its server never ends (killed once the client has).
io_demo_pair() {
	ucx="env UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_TLS=rc_v,self"
	new_port
	timeout 60 $ucx UCX_NET_DEVICES=mlx4_0:1 io_demo -q -p $port \
		>"$work/server.log" 2>&1 &
	server=$!
	guarded $ucx UCX_NET_DEVICES=mlx4_1:2 io_demo -q -p $port -i 2000 \
		-o read,write -I $3 $2 >"$work/client.log" 2>&1
	client_status=$?
	kill $server 2>/dev/null
	wait $server 2>/dev/null
	check "UCX io_demo by UCX's rdmacm connection manager, 2000 reads and writes checked ($1)" sh -c "
		test $client_status -eq 0 &&
		grep -q \"Client exit with status 'OK'\" '$work/client.log' ||
		{ tail -20 '$work/client.log' '$work/server.log'; false; }"
}

# programs LINK SERVER_ADDRESS CLIENT_ADDRESS: the rest of rdmacm-utils,
# perftest's -R, and the events, between two ports.
programs() {
	link=$1 a=$2 b=$3
	new_port
	cm_pair "ucmatose, 4 connections, 20 messages each ($link)" \
		"ucmatose -p $port -c 4 -C 20" \
		"ucmatose -s $a -b $b -p $port -c 4 -C 20"
	cm_pair "udaddy, 3 UD ids by SIDR ($link)" "udaddy -c 3 -C 10" \
		"udaddy -s $a -b $b -c 3 -C 10"
	cm_pair "mckey, 10 datagrams to a multicast group ($link)" \
		"mckey -m 224.0.1.10 -b $a -C 10" \
		"sleep 0.5; mckey -m 224.0.1.10 -b $b -s -C 10"
	cm_pair "rdma_server and rdma_client ($link)" "rdma_server -p $port" \
		"rdma_client -s $a -p $port"
	cmtime_pair "$link" $a $b
	cm_pair "rstream, rsockets ($link)" "rstream -p $port -S 4096 -C 200" \
		"rstream -s $a -p $port -S 4096 -C 200"
	cm_pair "riostream ($link)" "riostream -p $port -S 4096 -C 200" \
		"riostream -s $a -b $b -p $port -S 4096 -C 200"
	# perftest connects twice, and its client may ask for the second
	# connection before its server listens again (then fails, or waits
	# for ever): three attempts.
	if command -v ib_send_bw >/dev/null 2>&1; then
		cm_pair "ib_send_bw -R ($link)" "ib_send_bw -R -n 1000 -p $port" \
			"ib_send_bw -R -n 1000 -p $port $a" 3
		cm_pair "ib_read_lat -R ($link)" "ib_read_lat -R -n 500 -p $port" \
			"ib_read_lat -R -n 500 -p $port $a" 3
	else
		skip "perftest -R ($link): ib_send_bw not found (apt-get install perftest)"
	fi
	# libfabric's verbs provider: its MSG endpoints over rdma_cm, and
	# RDM ones through ofi_rxm, data checked (-c).
	if command -v fi_pingpong >/dev/null 2>&1; then
		cm_pair "fi_pingpong -p verbs -e msg ($link)" \
			"fi_pingpong -p verbs -e msg -c -I 200 -B $port" \
			"fi_pingpong -p verbs -e msg -c -I 200 -P $port $a"
		# Two attempts: after the checked transfers both sides send
		# "fin" and the client, once it has the server's, closes
		# and disconnects.  A server slower to read its CQ than that
		# DREQ (a race on a host too: the flushes of its posted
		# receives follow the CQEs it has not read) may be handed
		# ofi_rxm's flush error first, and fails (seen once in many
		# loaded runs).
		cm_pair "fi_pingpong -p 'verbs;ofi_rxm' -e rdm ($link)" \
			"fi_pingpong -p 'verbs;ofi_rxm' -e rdm -c -I 100 -S 4096 -B $port" \
			"fi_pingpong -p 'verbs;ofi_rxm' -e rdm -c -I 100 -S 4096 -P $port $a" 2
	else
		skip "libfabric ($link): fi_pingpong not found (apt-get install libfabric-bin)"
	fi
	if command -v io_demo >/dev/null 2>&1; then
		io_demo_pair "$link" $a $b
	else
		skip "UCX io_demo ($link): io_demo not found (apt-get install ucx-utils)"
	fi
	MLX4SIM="$top_builddir/sim/mlx4sim" "$TESTS_BIN/verbs/rdmacm-events" \
		$a $port >"$work/events.tap" 2>&1
	events=$?
	check "rdmacm-events: REQ, REP, RTU, REJ, DREQ, DREP, the adapter's reset, a file closed under a waiting GET_EVENT, and what each side hears ($link)" sh -c "
		test $events -eq 0 && grep -q '^1\.\.' '$work/events.tap' &&
		grep -q '^ok .* DEVICE_REMOVAL for the active id' '$work/events.tap' &&
		grep -q '^ok .* closed under it, .*: no error' '$work/events.tap' &&
		! grep -q '^not ok' '$work/events.tap' || { cat '$work/events.tap'; false; }"
}

# refused NAME PATTERN RPING_OPTIONS: a client that must fail, saying so.
refused() {
	name=$1 pattern=$2
	shift 2
	guarded rping -c -C 1 "$@" >"$work/client.log" 2>&1
	status=$?
	if [ $status -ne 0 ] && grep -q "$pattern" "$work/client.log"; then
		ok "$name"
	else
		not_ok "$name (status $status)"
		show "$work/client.log"
	fi
}

# pings_and_refusals LINK SERVER SAME_ADAPTER OTHER_ADAPTER SERVER6 CLIENT6
# NOBODY: rping from the server's port, another port of its adapter,
# another adapter, over IPv6; then nothing listening, and an address no
# port has.
pings_and_refusals() {
	link=$1
	rping_pair "rping over $link, the client on the server's port" $2
	rping_pair "rping over $link, from another port of the adapter" $2 -I $3
	rping_pair "rping over $link, from another adapter" $2 -I $4
	rping_pair "rping over $link, IPv6" $5 -I $6
	new_port
	refused "$link: nothing listens: REJECTED, reason 8 (invalid service ID)" \
		"RDMA_CM_EVENT_REJECTED, error 8" -a $2 -p $port
	refused "$link: an address no port has: ADDR_ERROR, ETIMEDOUT" \
		"RDMA_CM_EVENT_ADDR_ERROR, error -110" -a $7
}

# RoCE: eth0 and eth1 on mlx4_0, eth2 and eth3 on mlx4_1.
capture=$work/rdmacm.pcap
sim_start --provider="$provider" --link-layer=eth --hcas 2 --pcap="$capture"
ls -l /dev/infiniband >"$work/ls" 2>&1
check "/dev/infiniband/rdma_cm: a character device, 10:58, mode 0666" \
	grep -q "^crw-rw-rw-.* 10, *58 .* rdma_cm$" "$work/ls"
check "sysfs: class/misc/rdma_cm/abi_version is 4" \
	test "$(cat "$SYSFS_PATH/class/misc/rdma_cm/abi_version")" = 4
pings_and_refusals RoCE 192.168.77.1 192.168.77.2 192.168.77.4 \
	fd00:77::3 fd00:77::2 192.168.77.99
refused "an address with no route: rdma_resolve_addr fails, ENETUNREACH" \
	"rdma_resolve_addr: Network is unreachable" -a 172.31.1.1
"$TESTS_BIN/verbs/rdmacm-abi" 192.168.77.3 >"$work/abi.tap" 2>&1
abi=$?
check "rdmacm-abi: the file at its ABI, hostile commands, garbage" sh -c "
	test $abi -eq 0 && grep -q '^1\.\.' '$work/abi.tap' &&
	! grep -q '^not ok' '$work/abi.tap' || { cat '$work/abi.tap'; false; }"
rping_pair "rping after the garbage" 192.168.77.2 -I 192.168.77.1
programs RoCE 192.168.77.1 192.168.77.4
check "no strict-mode breach" sim_stop
# The CM's MADs on the wire: to QP 1, read by Wireshark's CM dissector.
# (Knowing the connections, Wireshark tries RPC over RDMA on the programs'
# own payloads, which are not: that dissector is left out.)
if command -v tshark >/dev/null 2>&1; then
	tshark -r "$capture" --disable-protocol rpcordma -q -z expert \
		>"$work/expert" 2>&1
	check "tshark reads the capture: no malformed frame, no warning" sh -c "
		! grep -q 'Errors\|Warns\|Malformed' '$work/expert' ||
		{ cat '$work/expert'; false; }"
	tshark -r "$capture" -Y infiniband.mad >"$work/mads" 2>/dev/null
	for kind in ConnectRequest MsgRcptAck ConnectReply ReadyToUse \
		    ConnectReject DisconnectRequest DisconnectReply \
		    ServiceIDResReq ServiceIDResReqResp; do
		check "the capture holds CM $kind MADs" grep -q "CM: $kind\$" \
			"$work/mads"
	done
	tshark -r "$capture" -Y infiniband.mad -T fields -e ip.src -e ip.dst \
		-e infiniband.cm.req.ip_cm.sip4 2>/dev/null >"$work/req-ips"
	check "a REQ's private data: cma's header with the client's address" \
		grep -q "192.168.77.4[[:space:]]192.168.77.1[[:space:]]192.168.77.4" \
		"$work/req-ips"
else
	skip "the CM MADs under tshark: tshark not found (apt-get install tshark)"
fi

# InfiniBand: ib0 to ib3, the IPoIB-like interfaces of the four ports.
sim_start --provider="$provider" --hcas 2
ip -o addr show >"$work/addrs" 2>&1
check "ib0 to ib3 have 192.168.78.1 to .4 and fd00:78::1 to ::4" sh -c "
	grep -q 'ib0 .*inet 192.168.78.1/24' '$work/addrs' &&
	grep -q 'ib3 .*inet 192.168.78.4/24' '$work/addrs' &&
	grep -q 'ib2 .*inet6 fd00:78::3/64' '$work/addrs'"
net=$SYSFS_PATH/class/infiniband/mlx4_1/device/net
check "sysfs: device/net/ib2 of mlx4_1, type 32, its port's GID in its address" sh -c "
	test \"\$(cat $net/ib2/type)\" = 32 &&
	test \"\$(cat $net/ib2/dev_port)\" = 0 &&
	grep -q ':fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:11$' $net/ib2/address &&
	test -e $SYSFS_PATH/class/net/ib2/type"
pings_and_refusals InfiniBand 192.168.78.1 192.168.78.2 192.168.78.3 \
	fd00:78::4 fd00:78::2 192.168.78.200
programs InfiniBand 192.168.78.1 192.168.78.4
check "no strict-mode breach" sim_stop

# No subnet manager (--sm none): the ports wait in INIT, ib_sa has no SM
# to ask for a path record, and RESOLVE_ROUTE fails (EAGAIN) at once.
sim_start --provider="$provider" --sm none --hcas 2
refused "--sm none: no SM for a path record: rdma_resolve_route fails, EAGAIN" \
	"rdma_resolve_route: Resource temporarily unavailable" \
	-a 192.168.78.1 -I 192.168.78.3
check "no strict-mode breach" sim_stop
# OpenSM's subnet: the LIDs it gave carry the path and the CM's MADs.
if ! command -v opensm >/dev/null 2>&1; then
	skip "rping under OpenSM: opensm not found (apt-get install opensm)"
elif [ "$(id -u)" != 0 ]; then
	skip "rping under OpenSM: the umad files it needs are root's"
else
	sim_start --provider="$provider" --sm opensm --hcas 2
	rping_pair "rping over InfiniBand between adapters, OpenSM's LIDs" \
		192.168.78.1 -I 192.168.78.3
	check "no strict-mode breach" sim_stop
fi
finish

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Many hosts on one machine (mlx4sim --hosts): four hosts, each with its
# own hostname and its own adapter, mlx4_0, of a GUID of its own, on one
# InfiniBand subnet; mlx4sim-rsh passing standard input, output, error
# and the exit status as ssh does, and hanging up its command when
# killed; ibv_rc_pingpong, rping, ucmatose and ucx_perftest between hosts
# (the server on node2, the client on node1 by its name); a bind to
# another host's address refused; Open MPI (pml ucx) and MPICH (ch4:ucx)
# running tests/verbs/mpi-check.c in four ranks, one a host, their
# launchers starting ranks through mlx4sim-rsh; then two hosts on
# Ethernet (RoCE v2): ibv_rc_pingpong and rping between them.
# Usage: hosts.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ibv_devices ibverbs-utils
need_program ip iproute2
need_hosts
provider=$1
rsh=$top_builddir/sim/mlx4sim-rsh
src=$top_srcdir/tests/verbs/mpi-check.c
ib_tls=UCX_TLS=rc_verbs,ud_verbs,self
root_flag=
[ "$(id -u)" = 0 ] && root_flag=--allow-run-as-root

# on HOST CMD: CMD (a shell command) on HOST, through mlx4sim-rsh.
on() {
	host=$1
	shift
	guarded "$rsh" "$host" "$*"
}

# Each host: its name, its own boot ID, and exactly one adapter, mlx4_0,
# whose node GUID no other host's adapter has.
host_views() {
	guids= boots=
	for n in 1 2 3 4; do
		on node$n 'hostname; cat /proc/sys/kernel/random/boot_id; ibv_devices' \
			>"$work/node$n.log" 2>&1 || return 1
		[ "$(head -n 1 "$work/node$n.log")" = node$n ] || return 1
		boots="$boots $(sed -n 2p "$work/node$n.log")"
		devs=$(awk 'NR > 4 { print $1 }' "$work/node$n.log")
		[ "$devs" = mlx4_0 ] || return 1
		guids="$guids $(awk 'NR > 4 { print $2 }' "$work/node$n.log")"
	done
	[ "$(echo $guids | tr ' ' '\n' | sort -u | wc -l)" -eq 4 ] ||
		{ echo "GUIDs: $guids"; return 1; }
	[ "$(echo $boots | tr ' ' '\n' | sort -u | wc -l)" -eq 4 ] ||
		{ echo "boot IDs: $boots"; return 1; }
}

# UCX tells machines apart by their boot IDs: between hosts it must have
# chosen the adapter, never shared memory (cma, sysv, posix) or TCP; a
# rank reaches itself through self and shared memory.  (UCX_LOG_LEVEL=info
# lists each endpoint's transports.)
ucx_between_hosts() {
	grep 'ep_cfg\[[0-9]*\]: tag(' "$work/mpi.log" >"$work/eps" &&
	test -s "$work/eps" &&
	! grep -v 'self/' "$work/eps" | grep -q 'cma/\|sysv/\|posix/\|tcp/' &&
	grep -v 'self/' "$work/eps" | grep -q 'rc_verbs/mlx4_0'
}

# The subnet as an SM sees it: four adapters, each described by its host.
subnet_view() {
	command -v ibnetdiscover >/dev/null 2>&1 || return 0
	on node3 ibnetdiscover >"$work/net.log" 2>&1 &&
	[ "$(sed -n 's/^Ca.*# "\(node[1-4]\) mlx4_0"$/\1/p' "$work/net.log" | sort | tr '\n' ' ')" = "node1 node2 node3 node4 " ]
}

rsh_stdio() {
	out=$(printf 'line one\nline two\n' | "$rsh" node3 'tr a-z A-Z; echo err >&2' 2>"$work/err") &&
	[ "$out" = "LINE ONE
LINE TWO" ] && [ "$(cat "$work/err")" = err ]
}

rsh_status() {
	"$rsh" node4 'exit 7'
	[ $? -eq 7 ] || return 1
	"$rsh" -x -o BatchMode=yes node2 false
	[ $? -eq 1 ] || return 1
	"$rsh" node9 true 2>/dev/null
	[ $? -eq 255 ]
}

# -n: standard input is /dev/null, whatever ours is.
rsh_no_stdin() {
	[ "$(echo data | "$rsh" -n node2 'cat; echo end')" = end ]
}

# mlx4sim-rsh killed: its command hears SIGHUP, as a session that ssh's
# going hangs up.
rsh_hangup() {
	"$rsh" node3 "trap 'echo hup >$work/hup; exit 0' HUP; sleep 60 & wait" &
	client=$!
	sleep 1
	kill $client
	for i in $(seq 50); do
		[ -s "$work/hup" ] && return 0
		sleep 0.1
	done
	return 1
}

# The same working directory, and ssh's words joined by spaces.
rsh_words() {
	[ "$(cd "$work" && "$rsh" node2 pwd)" = "$(cd "$work" && pwd -P)" ] &&
	[ "$("$rsh" node2 echo "'a  b'" c)" = "a  b c" ]
}

# pingpong_pair NAME GID_INDEX: ibv_rc_pingpong, server on node2.
pingpong_pair() {
	new_port
	on node2 ibv_rc_pingpong -g $2 -n 200 -p $port >"$work/server.log" 2>&1 &
	server=$!
	run_client "$work/client.log" ibv_rc_pingpong -g $2 -n 200 -p $port node2
	client_status=$?
	wait $server
	server_status=$?
	if [ $client_status -eq 0 ] && [ $server_status -eq 0 ] &&
	   grep -q "200 iters" "$work/client.log"; then
		ok "$1"
	else
		not_ok "$1 (server $server_status, client $client_status)"
		show "$work/server.log"
		show "$work/client.log"
	fi
}

# ucx_pair: ucx_perftest's tag_bw over rc_verbs, server on node2; the
# client must report its figures, and UCX warn of nothing.
ucx_pair() {
	new_port
	tls=UCX_TLS=rc_verbs,ud_verbs,self
	on node2 env $tls ucx_perftest -p $port -t tag_bw -n 1000 -s 65536 \
		>"$work/server.log" 2>&1 &
	server=$!
	run_client "$work/client.log" env $tls ucx_perftest -p $port -t tag_bw \
		-n 1000 -s 65536 node2
	client_status=$?
	wait $server
	server_status=$?
	if [ $client_status -eq 0 ] && [ $server_status -eq 0 ] &&
	   grep -q '^Final:' "$work/client.log" &&
	   ! grep -q 'UCX  \(WARN\|ERROR\)' "$work/client.log" "$work/server.log"; then
		ok "ucx_perftest tag_bw over rc_verbs from node1 to node2"
	else
		not_ok "ucx_perftest tag_bw over rc_verbs from node1 to node2 (server $server_status, client $client_status)"
		show "$work/server.log"
		show "$work/client.log"
	fi
}

# cm_once SERVER CLIENT: an rdma_cm server on node2, its client on node1,
# tried again while the server does not listen yet; both must end well.
cm_once() {
	# (mlx4sim-rsh itself: killed, it hangs up its command)
	"$rsh" node2 "timeout 120 $1" >"$work/server.log" 2>&1 &
	server=$!
	sleep 0.5
	refused="REJECTED\|UNREACHABLE\|connection refused\|Unexpected CM event"
	run_client "$work/client.log" sh -c "$2"
	client_status=$?
	unset refused
	[ $client_status -eq 0 ] || kill $server 2>/dev/null
	wait $server
	server_status=$?
	[ $client_status -eq 0 ] && [ $server_status -eq 0 ]
}

# cm_pair NAME SERVER CLIENT: cm_once, three attempts at most (a client
# that gave up while the server began to listen leaves the server
# rejected: it is tried again whole).
cm_pair() {
	for attempt in 1 2 3; do
		cm_once "$2" "$3" && { ok "$1"; return 0; }
		echo "# $1: attempt $attempt failed"
	done
	not_ok "$1 (server $server_status, client $client_status)"
	show "$work/server.log"
	show "$work/client.log"
}

# An address of node2's is not node1's to bind: rdma_bind_addr() fails.
foreign_bind() {
	! guarded rping -c -C 1 -a node2 -I 192.168.78.3 -p 1 >"$work/bind.log" 2>&1 &&
	grep -q "Cannot assign requested address" "$work/bind.log"
}

mpi_hosts() {
	name=$1
	shift
	guarded "$@" >"$work/mpi.log" 2>&1
	status=$?
	hosts=$(sed -n 's/^mpi-check: rank [0-3] on //p' "$work/mpi.log" | sort -u | tr '\n' ' ')
	if [ $status -eq 0 ] &&
	   grep -qx "mpi-check: 4 ranks, 364 transfers checked byte by byte" "$work/mpi.log" &&
	   [ "$hosts" = "node1 node2 node3 node4 " ] &&
	   ! grep -q 'UCX  \(WARN\|ERROR\)' "$work/mpi.log"; then
		ok "$name, 4 ranks on 4 hosts"
	else
		not_ok "$name, 4 ranks on 4 hosts (status $status, hosts $hosts)"
		show "$work/mpi.log"
	fi
}

sim_start --provider="$provider" --hosts 4
check "each host has its name, its boot ID and one adapter, mlx4_0, of a GUID of its own" host_views
if [ "$(id -u)" = 0 ] && command -v ibnetdiscover >/dev/null 2>&1; then
	check "ibnetdiscover on node3: each adapter's NodeDescription names its host" subnet_view
else
	skip "ibnetdiscover between hosts: needs root and infiniband-diags"
fi
check "mlx4sim-rsh passes standard input, output and error" rsh_stdio
check "mlx4sim-rsh exits with the command's status, 255 for no such host" rsh_status
check "mlx4sim-rsh -n gives the command /dev/null to read" rsh_no_stdin
check "mlx4sim-rsh killed hangs up its command (SIGHUP)" rsh_hangup
check "mlx4sim-rsh runs the command in this directory, its words joined as ssh joins them" rsh_words
pingpong_pair "ibv_rc_pingpong from node1 to node2 (InfiniBand)" 0
if command -v rping >/dev/null 2>&1; then
	new_port
	cm_pair "rping from node1 to node2 by its name (InfiniBand)" \
		"rping -s -v -V -C 10 -a 0.0.0.0 -p $port" \
		"rping -c -V -C 10 -a node2 -p $port"
	new_port
	cm_pair "ucmatose, 4 connections from node1 to node2 (InfiniBand)" \
		"ucmatose -p $port -c 4 -C 20" \
		"ucmatose -s node2 -p $port -c 4 -C 20"
	check "node1 cannot bind an address of node2's" foreign_bind
else
	skip "rping and ucmatose between hosts: rping not found (rdmacm-utils)"
fi
if command -v ucx_perftest >/dev/null 2>&1; then
	ucx_pair
else
	skip "ucx_perftest between hosts: not found (ucx-utils)"
fi
if command -v mpicc.openmpi >/dev/null 2>&1 &&
   mpicc.openmpi -O2 -o "$work/check-ompi" "$src"; then
	mpi_hosts "Open MPI over UCX (pml ucx), ranks started by mlx4sim-rsh" \
		mpirun.openmpi $root_flag --host node1,node2,node3,node4 -np 4 \
		--mca plm_rsh_agent "$rsh" --mca pml ucx --mca osc ucx \
		--mca btl ^openib -x UCX_LOG_LEVEL=info "$work/check-ompi"
	check "Open MPI: UCX took the adapter between hosts, shared memory only within a rank" \
		ucx_between_hosts
else
	skip "Open MPI on 4 hosts: mpicc.openmpi not found (libopenmpi-dev)"
fi
if command -v mpicc.mpich >/dev/null 2>&1 &&
   mpicc.mpich -O2 -o "$work/check-mpich" "$src"; then
	mpi_hosts "MPICH over UCX (ch4:ucx), ranks started by mlx4sim-rsh" \
		env "$ib_tls" mpirun.mpich -hosts node1,node2,node3,node4 -np 4 \
		-launcher ssh -launcher-exec "$rsh" "$work/check-mpich"
else
	skip "MPICH on 4 hosts: mpicc.mpich not found (libmpich-dev)"
fi
check "no strict-mode breach (InfiniBand)" sim_stop

if why=$(no_ethernet_ports); then
	skip "two hosts on Ethernet: $why"
else
	sim_start --provider="$provider" --hosts 2 --link-layer eth
	pingpong_pair "ibv_rc_pingpong from node1 to node2 (RoCE v2, GID 3)" 3
	if command -v rping >/dev/null 2>&1; then
		new_port
		cm_pair "rping from node1 to node2 by its name (RoCE)" \
			"rping -s -v -V -C 10 -a 0.0.0.0 -p $port" \
			"rping -c -V -C 10 -a node2 -p $port"
	fi
	check "no strict-mode breach (Ethernet)" sim_stop
fi
finish

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Debian's OpenSM as the subnet's manager (--sm opensm): the ports wait in
# INIT with no LID until it sweeps the subnet through umad; then they are
# ACTIVE with the LIDs it gave, the switch forwards by the table it
# wrote, and the pingpong and perftest (with the provider named) run on
# those LIDs.  A port taken down and up reaches it as a trap, and it
# brings the port back.
# Usage: opensm.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program opensm opensm
need_program ibstat infiniband-diags
need_root "the umad files are root's (mode 0600)"
need_program ibv_rc_pingpong ibverbs-utils
provider=$1
T="timeout 20"

sysfs_port() {
	cat "$SYSFS_PATH/class/infiniband/$1/ports/$2/$3"
}

# Before an SM: no LIDs, ports in INIT; only directed routes go.
sim_start --provider="$provider" --sm none --hcas 2
$T ibstat mlx4_1 2 >"$work/ibstat" 2>&1
check "--sm none: ports INIT, LID 0, no SM" sh -c "
	test '$(sysfs_port mlx4_0 1 state)' = '2: INIT' &&
	test '$(sysfs_port mlx4_1 2 lid)' = 0x0 &&
	grep -q 'State: Initializing' '$work/ibstat' &&
	grep -q 'SM lid: 0' '$work/ibstat'"
$T smpquery -D nodeinfo 0,1 >"$work/ni" 2>&1
check "--sm none: a directed route reaches the switch" \
	grep -q 'NodeType:.*Switch' "$work/ni"
check "no strict-mode breach" sim_stop

sim_start --provider="$provider" --sm opensm --hcas 2
sm_lid=$(($(sysfs_port mlx4_0 1 lid)))
lids=
for hca in mlx4_0 mlx4_1; do
	for p in 1 2; do
		lid=$(($(sysfs_port $hca $p lid)))
		check "OpenSM made $hca port $p ACTIVE with LID $lid, its SM at $sm_lid" sh -c "
			test '$(sysfs_port $hca $p state)' = '4: ACTIVE' &&
			test $lid -gt 0 &&
			test \$((\$(cat '$SYSFS_PATH/class/infiniband/$hca/ports/$p/sm_lid'))) -eq $sm_lid"
		lids="$lids $lid"
	done
done
check "four different LIDs ($lids)" \
	test "$(echo $lids | tr ' ' '\n' | sort -u | wc -l)" -eq 4
check "OpenSM holds issm0: IsSM in mlx4_0 port 1's capabilities" \
	test $(($(sysfs_port mlx4_0 1 cap_mask) & 2)) -eq 2
$T ibstat mlx4_1 1 >"$work/ibstat" 2>&1
check "ibstat: base lid and SM lid as OpenSM set them" sh -c "
	grep -q 'Base lid: $(($(sysfs_port mlx4_1 1 lid)))$' '$work/ibstat' &&
	grep -q 'SM lid: $sm_lid$' '$work/ibstat'"
switch=$($T smpquery -D portinfo 0,1 0 2>/dev/null | sed -n 's/^Lid:\.*//p')
$T ibroute "$switch" >"$work/route" 2>&1
swport=1
for hca in mlx4_0 mlx4_1; do
	for p in 1 2; do
		lid=$(printf 0x%04x $(($(sysfs_port $hca $p lid))))
		check "the switch (LID $switch) forwards LID $lid out of port $swport" \
			grep -q "^$lid $(printf %03d $swport) " "$work/route"
		swport=$((swport + 1))
	done
done

# The data path on OpenSM's LIDs.
pingpong() {
	new_port
	guarded ibv_rc_pingpong -d mlx4_0 -i 1 -g 0 -n 500 -p $port \
		>"$work/server.log" 2>&1 &
	server=$!
	run_client "$work/client.log" ibv_rc_pingpong -d mlx4_1 -i 2 -g 0 \
		-n 500 -p $port localhost
	client_status=$?
	wait $server
	test $? -eq 0 -a $client_status -eq 0 &&
		grep -q "remote address: LID $(printf 0x%04x $sm_lid)" "$work/client.log"
}
$T saquery >"$work/nodes" 2>&1
check "saquery: OpenSM's SA has a NodeRecord for each port and the switch" \
	test "$(grep -c 'NodeRecord dump' "$work/nodes")" -eq 5
check "ibv_rc_pingpong mlx4_1 port 2 -> mlx4_0 port 1, to LID $sm_lid" pingpong
if command -v ib_send_bw >/dev/null 2>&1; then
	new_port
	guarded ib_send_bw -d mlx4_0 -i 1 -n 2000 -p $port >"$work/server.log" 2>&1 &
	server=$!
	run_client "$work/client.log" ib_send_bw -d mlx4_1 -i 1 -n 2000 -p $port localhost
	client_status=$?
	wait $server
	check "ib_send_bw mlx4_1 port 1 -> mlx4_0 port 1" \
		test $? -eq 0 -a $client_status -eq 0
else
	skip "ib_send_bw not found: install the perftest package"
fi

# A port down and up: the switch's trap, OpenSM's sweep, ACTIVE again.
lid=$(sysfs_port mlx4_1 2 lid)
"$MLX4SIM" fault port-down --hca 1 --port 2 >/dev/null
"$MLX4SIM" fault port-up --hca 1 --port 2 >/dev/null
tries=0
while [ "$(sysfs_port mlx4_1 2 state)" != "4: ACTIVE" ] && [ $tries -lt 100 ]; do
	sleep 0.1
	tries=$((tries + 1))
done
check "port down and up: OpenSM got the switch's trap 128" \
	grep -q "num:128 (Link state change)" "$MLX4SIM_DIR/opensm.log"
check "and made the port ACTIVE again, LID $lid kept" sh -c "
	test '$(sysfs_port mlx4_1 2 state)' = '4: ACTIVE' &&
	test '$(sysfs_port mlx4_1 2 lid)' = '$lid'"
check "ibv_rc_pingpong over it again" pingpong
osm_pid=$(cat "$MLX4SIM_DIR/opensm.pid")
check "no strict-mode breach" sim_stop
# OpenSM is stopped before the adapter it runs on goes: with its device
# gone first it spun on EIO and hung in its own shutdown, left running.
check "OpenSM (pid $osm_pid) ended with the run, of its own accord" sh -c "
	! kill -0 $osm_pid 2>/dev/null &&
	! grep -q 'OpenSM did not stop' '$work/stop.log'"
finish

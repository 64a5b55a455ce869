#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# infiniband-diags on a simulated subnet of two adapters (four ports and
# the switch): ibstat and ibstatus agree with sysfs, smpquery and
# perfquery get the SMA's and PMA's answers, perfquery's counters grow
# by what a pingpong (with the provider named) sent, ibnetdiscover and
# iblinkinfo find the subnet's topology, ibping crosses it, and a port
# taken down is gone from it until it comes up again.
# Usage: umad.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ibstat infiniband-diags
need_root "the umad files are root's (mode 0600)"
need_program ibv_rc_pingpong ibverbs-utils
provider=$1

sim_start --provider="$provider" --hcas 2
T="timeout 20"

# sysfs_lid HCA PORT: the port's LID, in decimal.
sysfs_lid() {
	echo $(($(cat "$SYSFS_PATH/class/infiniband/$1/ports/$2/lid")))
}

# sysfs_guid HCA: the node GUID as the tools print it (0x...).
sysfs_guid() {
	echo "0x$(tr -d ':' <"$SYSFS_PATH/class/infiniband/$1/node_guid")"
}

# field NAME FILE: the value after NAME's dots in a tool's output.
field() {
	sed -n "s/^$1:\.*//p" "$2" | head -n 1
}

for hca in mlx4_0 mlx4_1; do
	for p in 1 2; do
		$T ibstat $hca $p >"$work/ibstat" 2>&1
		lid=$(sed -n 's/.*Base lid: //p' "$work/ibstat")
		check "ibstat $hca $p: base lid $lid is sysfs's, Active" sh -c "
			test '$lid' = '$(sysfs_lid $hca $p)' &&
			grep -q 'State: Active' '$work/ibstat'"
	done
done
$T ibstatus mlx4_1:2 >"$work/ibstatus" 2>&1
check "ibstatus mlx4_1:2: base lid $(printf 0x%x "$(sysfs_lid mlx4_1 2)"), ACTIVE" sh -c "
	grep -q 'base lid:.*$(printf 0x%x "$(sysfs_lid mlx4_1 2)")$' '$work/ibstatus' &&
	grep -q 'state:.*4: ACTIVE' '$work/ibstatus'"

lid=$(sysfs_lid mlx4_1 1)
$T smpquery nodeinfo "$lid" >"$work/ni" 2>&1
check "smpquery nodeinfo $lid: mlx4_1's GUID, a CA, local port 1" sh -c "
	test '$(field Guid "$work/ni")' = '$(sysfs_guid mlx4_1)' &&
	test '$(field NodeType "$work/ni")' = 'Channel Adapter' &&
	test '$(field LocalPort "$work/ni")' = 1"
lid=$(sysfs_lid mlx4_0 2)
$T smpquery portinfo "$lid" >"$work/pi" 2>&1
check "smpquery portinfo $lid: its LID, SM LID 1, Active, 4X" sh -c "
	test '$(field Lid "$work/pi")' = '$lid' &&
	test '$(field SMLid "$work/pi")' = 1 &&
	test '$(field LinkState "$work/pi")' = Active &&
	test '$(field LinkWidthActive "$work/pi")' = 4X"
$T smpquery -D nodeinfo 0,1 >"$work/sw" 2>&1
check "smpquery -D nodeinfo 0,1: the switch, 36 ports" sh -c "
	test '$(field NodeType "$work/sw")' = Switch &&
	test '$(field NumPorts "$work/sw")' = 36"
start=$(date +%s%N)
$T smpquery -t 100 nodeinfo 40 >"$work/none" 2>&1
status=$? ms=$((($(date +%s%N) - start) / 1000000))
check "smpquery to a LID no port has fails, its MAD timed out ($ms ms)" \
	test $status -ne 0 -a $ms -lt 5000

# perfquery: the counters of mlx4_0 port 1 grow by a pingpong's packets.
lid0=$(sysfs_lid mlx4_0 1) lid1=$(sysfs_lid mlx4_1 1)
$T perfquery -x "$lid0" 1 >"$work/pc0" 2>&1
iters=500 size=4096
new_port
guarded ibv_rc_pingpong -d mlx4_0 -i 1 -g 0 -n $iters -s $size -p $port \
	>"$work/server.log" 2>&1 &
server=$!
run_client "$work/client.log" ibv_rc_pingpong -d mlx4_1 -i 1 -g 0 \
	-n $iters -s $size -p $port localhost
client_status=$?
wait $server
check "ibv_rc_pingpong mlx4_0 port 1 <-> mlx4_1 port 1, $iters x $size bytes" \
	test $? -eq 0 -a $client_status -eq 0
$T perfquery -x "$lid0" 1 >"$work/pc1" 2>&1
$T perfquery "$lid1" 1 >"$work/pc32" 2>&1
xmit=$(($(field PortXmitPkts "$work/pc1") - $(field PortXmitPkts "$work/pc0")))
data=$(($(field PortXmitData "$work/pc1") - $(field PortXmitData "$work/pc0")))
check "perfquery -x: PortXmitPkts grew by $xmit, at least the $iters messages" \
	test $xmit -ge $iters
check "perfquery -x: PortXmitData grew by $data words, at least $iters x $size bytes" \
	test $data -ge $((iters * size / 4))
check "perfquery $lid1 1: PortRcvPkts at least $iters ($(field PortRcvPkts "$work/pc32"))" \
	test "$(field PortRcvPkts "$work/pc32")" -ge $iters
$T perfquery -R "$lid1" 1 >/dev/null 2>&1
$T perfquery "$lid1" 1 >"$work/pc33" 2>&1
check "perfquery -R: the counters start again ($(field PortRcvPkts "$work/pc33"))" \
	test "$(field PortRcvPkts "$work/pc33")" -lt 10

# The CM's MADs are the port's packets too: a REQ from mlx4_1 port 1
# (192.168.78.3) that nothing at mlx4_0 port 1 listens for, and the REJ.
# Two queries first: what a query adds to the counters it reads.
if command -v rping >/dev/null 2>&1; then
	for q in 0 1; do
		$T perfquery "$lid1" 1 >"$work/cm$q" 2>&1
	done
	new_port
	guarded rping -c -C 1 -a 192.168.78.1 -I 192.168.78.3 -p $port \
		>"$work/rping.log" 2>&1
	$T perfquery "$lid1" 1 >"$work/cm2" 2>&1
	for f in PortXmitPkts PortRcvPkts; do
		c0=$(field $f "$work/cm0") c1=$(field $f "$work/cm1")
		c2=$(field $f "$work/cm2")
		more=$((c2 - c1 - (c1 - c0)))
		check "$f of mlx4_1 port 1 counts the CM's REQ and REJ ($more more than a query's)" \
			sh -c "test $more -ge 1 && grep -q REJECTED '$work/rping.log'"
	done
else
	skip "the CM's MADs in the PMA's counters: rping not found (apt-get install rdmacm-utils)"
fi

# The topology: a switch, two adapters, four links.
$T ibnetdiscover >"$work/topo" 2>&1
check "ibnetdiscover: one switch of 36 ports, two CAs of 2 ports" sh -c "
	test \$(grep -c '^Switch	36 ' '$work/topo') -eq 1 &&
	test \$(grep -c '^Ca	2 ' '$work/topo') -eq 2"
for p in 1 2 3 4; do
	check "ibnetdiscover: switch port $p is linked to an adapter's port" \
		grep -q "^\[$p\]	\"H-0002c90300a1b2" "$work/topo"
done
check "ibnetdiscover: mlx4_1 port 2 is linked to switch port 4, lid 5" \
	grep -q '^\[2\](2c90300a1b212) 	"S-0002c90300a1f000"\[4\]		# lid 5 ' "$work/topo"
$T iblinkinfo >"$work/links" 2>&1
check "iblinkinfo: 8 link ends Active/LinkUp, 32 switch ports down" sh -c "
	test \$(grep -c 'Active/  LinkUp' '$work/links') -eq 8 &&
	test \$(grep -c 'Down/ Polling' '$work/links') -eq 32"

# ibping between two ports, then to a port with no server.
lid=$(sysfs_lid mlx4_0 2)
timeout 30 ibping -S -C mlx4_0 -P 2 >"$work/pings" 2>&1 &
pinger=$!
sleep 0.5
$T ibping -C mlx4_1 -P 1 -c 3 "$lid" >"$work/ping" 2>&1
check "ibping mlx4_1 port 1 -> lid $lid (mlx4_0 port 2): 3 received" \
	grep -q '3 packets transmitted, 3 received' "$work/ping"
kill $pinger 2>/dev/null
wait $pinger 2>/dev/null
$T ibping -C mlx4_1 -P 1 -c 1 "$lid" >"$work/ping" 2>&1
check "ibping with its server gone: nothing received" \
	grep -q '1 packets transmitted, 0 received' "$work/ping"

# A port taken down is gone from the fabric, and back when it comes up.
lid=$(sysfs_lid mlx4_1 2)
"$MLX4SIM" fault port-down --hca 1 --port 2 >/dev/null
$T ibstat mlx4_1 2 >"$work/ibstat" 2>&1
$T smpquery -t 100 nodeinfo "$lid" >"$work/ni" 2>&1
status=$?
$T iblinkinfo >"$work/links" 2>&1
check "port down: ibstat says Down, smpquery to lid $lid fails, iblinkinfo sees 6 ends up" sh -c "
	grep -q 'State: Down' '$work/ibstat' && test $status -ne 0 &&
	test \$(grep -c 'Active/  LinkUp' '$work/links') -eq 6"
"$MLX4SIM" fault port-up --hca 1 --port 2 >/dev/null
$T smpquery nodeinfo "$lid" >"$work/ni" 2>&1
check "port up: smpquery nodeinfo $lid answers again" \
	test "$(field Guid "$work/ni")" = "$(sysfs_guid mlx4_1)"
check "no strict-mode breach" sim_stop
finish

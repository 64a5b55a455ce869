#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# DPDK's mlx4 poll-mode driver (Debian's librte-net-mlx4-23) under
# dpdk-testpmd (dpdk-dev) on an adapter with two Ethernet ports, without
# hugepages (--no-huge): io and mac forwarding started with --tx-first,
# both ports counting what they receive and send, with no error, and the
# capture of the wire clean under tshark.
#
# The PMD is linked to libmlx4.so.1 itself (no glue library), so the
# provider it runs is the libmlx4.so.1 the dynamic linker finds: with
# --provider=project, mlx4sim puts this tree's src/.libs first in
# LD_LIBRARY_PATH; with --provider=system, the distribution's.  Each run
# checks which one testpmd mapped.
# Usage: dpdk.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program dpdk-testpmd dpdk-dev
set -- "$1" /usr/lib/*/dpdk/pmds-*/librte_net_mlx4.so*
if [ ! -e "$2" ]; then
	echo "1..0 # SKIP DPDK's mlx4 PMD not found: install the librte-net-mlx4-23 package (apt-get install librte-net-mlx4-23)"
	exit 0
fi
provider=$1
need_cap_net_raw
need_ethernet_ports

# EAL options: no hugepages, no files shared with other DPDK processes,
# no telemetry socket (two runs at once would want the same one), the
# adapter's PCI function only.  The memory is plain process memory, which
# the adapter reaches by virtual address, as with any verbs MR.
eal="-l 0-1 --no-huge -m 256 --no-shconf --no-telemetry --iova-mode=va
	--file-prefix=mlx4sim$$"
pci=0000:01:00.0
mbufs=--total-num-mbufs=8192

# testpmd LOG SCRIPT ARGS...: dpdk-testpmd ARGS in interactive mode, fed
# the commands of SCRIPT, one a line; "sleep N" waits, "maps" records
# which libmlx4 the running program has mapped (LOG.maps).  Ended after
# 60 s at the most.
testpmd() {
	_log=$1 _script=$2
	shift 2
	rm -f "$work/in"
	mkfifo "$work/in"
	timeout 60 dpdk-testpmd $eal "$@" <"$work/in" >"$_log" 2>&1 &
	_pid=$!
	exec 3>"$work/in"
	# The commands count from the first prompt: the EAL and the
	# ports take seconds to come up.
	_wait=0
	while ! grep -q '^testpmd> ' "$_log" && kill -0 $_pid 2>/dev/null &&
	      [ $_wait -lt 300 ]; do
		sleep 0.1
		_wait=$((_wait + 1))
	done
	while read -r _line; do
		case $_line in
		sleep\ *)
			sleep "${_line#sleep }" ;;
		maps)
			for _c in $(cat /proc/$_pid/task/*/children 2>/dev/null); do
				grep -o '/[^ ]*/libmlx4\.so[^ ]*' /proc/$_c/maps
			done 2>/dev/null | sort -u >"$_log.maps" ;;
		*)
			echo "$_line" >&3 ;;
		esac
	done <"$_script"
	exec 3>&-
	wait $_pid
}

# fwd_stat LOG PORT FIELD: FIELD (RX-packets, TX-dropped, ...) of PORT in
# testpmd's forward statistics at "stop".
fwd_stat() {
	sed -n "/Forward statistics for port $2 /,/-----\$/p" "$1" |
		sed -n "s/.*$3: *\([0-9]*\).*/\1/p" | head -n 1
}

# nic_stat LOG PORT FIELD: FIELD of PORT in "show port stats".
nic_stat() {
	sed -n "/NIC statistics for port $2 /,/####\$/p" "$1" |
		sed -n "s/.*$3: *\([0-9]*\).*/\1/p" | head -n 1
}

# provider_mapped LOG: testpmd ran the libmlx4 this run asks for.
provider_mapped() {
	test -s "$1.maps" || { echo "no libmlx4 mapped"; return 1; }
	cat "$1.maps"
	test "$(wc -l <"$1.maps")" -eq 1 || return 1
	case $(cat "$1.maps") in
	"$top_builddir"/src/.libs/*) test "$provider" = project ;;
	*) test "$provider" = system ;;
	esac
}

# Without hugepages, the EAL needs no device: if it cannot start even
# so, nothing below can run.
echo quit >"$work/probe.cmds"
testpmd "$work/probe.log" "$work/probe.cmds" --no-pci -- -i $mbufs
if [ $? -ne 0 ] || ! grep -q '^Bye' "$work/probe.log"; then
	echo "1..0 # SKIP dpdk-testpmd does not start without hugepages here: $(grep -m1 'EAL: \|Cause' "$work/probe.log")"
	exit 0
fi

capture=$work/fwd.pcap
sim_start --provider="$provider" --link-layer=eth --pcap="$capture"

# forwarding MODE: MODE forwarding between the two ports, started with a
# burst from each (tx_first), for a second.
forwarding() {
	mode=$1 log=$work/$1.log
	cat >"$work/$mode.cmds" <<-EOF
	set fwd $mode
	start tx_first
	sleep 1
	maps
	show port stats all
	stop
	quit
	EOF
	testpmd "$log" "$work/$mode.cmds" -a $pci -- -i $mbufs
	status=$?
	check "$mode forwarding: testpmd probes both ports of mlx4_0 and exits 0" sh -c "
		test $status -eq 0 &&
		grep -q 'Port 0: 00:02:C9:A1:B2:01' '$log' &&
		grep -q 'Port 1: 00:02:C9:A1:B2:02' '$log' || { cat '$log'; false; }"
	check "$mode forwarding: the PMD runs the $provider libmlx4.so.1" \
		provider_mapped "$log"
	for p in 0 1; do
		rx=$(fwd_stat "$log" $p RX-packets) tx=$(fwd_stat "$log" $p TX-packets)
		check "$mode forwarding: port $p received and sent (rx ${rx:-?}, tx ${tx:-?}) more than the first burst" \
			test "${rx:-0}" -gt 32 -a "${tx:-0}" -gt 32
		check "$mode forwarding: port $p dropped nothing, counted no error" sh -c "
			test '$(fwd_stat "$log" $p RX-dropped)' = 0 &&
			test '$(fwd_stat "$log" $p TX-dropped)' = 0 &&
			test '$(nic_stat "$log" $p RX-errors)' = 0 &&
			test '$(nic_stat "$log" $p TX-errors)' = 0 &&
			test '$(nic_stat "$log" $p RX-missed)' = 0 &&
			test '$(nic_stat "$log" $p RX-nombuf)' = 0 || { cat '$log'; false; }"
	done
	# What one port sends, the other receives: the switch loses nothing.
	rx1=$(fwd_stat "$log" 1 RX-packets) tx0=$(fwd_stat "$log" 0 TX-packets)
	check "$mode forwarding: port 1 received what port 0 sent, but those in flight (rx $rx1, tx $tx0)" \
		test "${rx1:-0}" -le "${tx0:-0}" -a "${rx1:-0}" -ge $(( ${tx0:-0} - 512 ))
}
forwarding io
forwarding mac
check "no strict-mode breach" sim_stop

# The capture of both runs, judged by Wireshark's dissectors: IPv4/UDP
# frames from testpmd's generator (198.18.0.1 to 198.18.0.2, port 9),
# with the MACs each mode gives them.
if command -v tshark >/dev/null 2>&1; then
	tshark -r "$capture" -q -z expert >"$work/expert" 2>&1
	check "tshark reads the capture" test $? -eq 0
	check "tshark: no malformed frame, no bad checksum, no warning" sh -c "
		! grep -q 'Errors\|Warns\|Malformed' '$work/expert' || { cat '$work/expert'; false; }"
	tshark -r "$capture" -T fields -e eth.dst -e ip.src -e ip.dst -e udp.dstport \
		-c 1000 >"$work/frames" 2>/dev/null
	check "the capture holds testpmd's UDP frames" \
		grep -q '02:00:00:00:00:0[01][[:space:]]198\.18\.0\.1[[:space:]]198\.18\.0\.2[[:space:]]9$' \
		"$work/frames"
else
	skip "the capture under tshark: tshark not found (apt-get install tshark)"
fi
finish

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# DPDK's mlx4 poll-mode driver (Debian's librte-net-mlx4-23) under
# dpdk-testpmd (dpdk-dev) on an adapter with two Ethernet ports, without
# hugepages (--no-huge): io and mac forwarding started with --tx-first,
# both ports counting what they receive and send, with no error, and the
# capture of the wire clean under tshark; RSS over 4 queues, a flow rule
# steering one flow, csum forwarding with checksum offload, of UDP from
# testpmd's generator and of TCP from tcp-source, the latter with TSO too.
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
# The EAL's runtime directory for that prefix, which it leaves behind.
if [ "$(id -u)" -eq 0 ]; then
	runtime_dir=/var/run/dpdk/mlx4sim$$
else
	runtime_dir=${XDG_RUNTIME_DIR:-/tmp}/dpdk/mlx4sim$$
fi
mbufs=--total-num-mbufs=8192

# testpmd LOG SCRIPT ARGS...: dpdk-testpmd ARGS in interactive mode, fed
# the commands of SCRIPT, one a line; "sleep N" waits N seconds once the
# commands before it are done, "maps" records which libmlx4 the running
# program has mapped (LOG.maps), "send ARGS" runs tcp-source ARGS once
# the commands before it are done (its output and status to LOG.send),
# "until-rx PORT N" waits (10 s at the most) until PORT has received N
# packets: under load the simulator may take more than a second for what
# a burst sent.  "until-shown N" waits so until testpmd has shown N
# packets (verbose), without a command: testpmd writes its prompt a few
# bytes at a time, which a packet's lines then split, and the prompts
# cannot be counted.  Ended after 120 s at the most (a busy machine
# slows the EAL's start and the ports' closing).  Its output is
# line-buffered, so that the packets' lines are whole.
testpmd() {
	_log=$1 _script=$2 _sent=0
	shift 2
	# A testpmd gone early (its timeout) fails the checks, with its
	# log: the commands still to write must not end the script.
	trap '' PIPE
	rm -f "$work/in"
	mkfifo "$work/in"
	timeout 120 stdbuf -oL dpdk-testpmd $eal "$@" <"$work/in" >"$_log" 2>&1 &
	_pid=$!
	exec 3>"$work/in"
	prompted 0
	while read -r _line; do
		case $_line in
		sleep\ *)
			prompted $_sent
			sleep "${_line#sleep }" ;;
		until-rx\ *)
			_tries=0
			while [ $_tries -lt 100 ] && kill -0 $_pid 2>/dev/null; do
				echo "show port stats all" >&3
				_sent=$((_sent + 1))
				prompted $_sent
				received_at_least "$_log" ${_line#until-rx } && break
				sleep 0.1
				_tries=$((_tries + 1))
			done ;;
		until-shown\ *)
			_tries=0
			while [ $_tries -lt 100 ] && kill -0 $_pid 2>/dev/null &&
			      [ $(grep -c ' RSS hash=' "$_log") -lt ${_line#until-shown } ]; do
				sleep 0.1
				_tries=$((_tries + 1))
			done ;;
		send\ *)
			prompted $_sent
			"$TESTS_BIN/verbs/tcp-source" ${_line#send } >>"$_log.send" 2>&1
			echo "status $?" >>"$_log.send" ;;
		maps)
			for _c in $(cat /proc/$_pid/task/*/children 2>/dev/null); do
				grep -o '/[^ ]*/libmlx4\.so[^ ]*' /proc/$_c/maps
			done 2>/dev/null | sort -u >"$_log.maps" ;;
		*)
			echo "$_line" >&3
			_sent=$((_sent + 1)) ;;
		esac
	done <"$_script"
	exec 3>&-
	trap - PIPE
	wait $_pid
}

# prompted N: wait (30 s at the most) until testpmd has prompted after its
# first N commands, each prompt once the command before is done: the EAL
# and the ports take seconds to come up, a port's restart too.
prompted() {
	_wait=0
	while [ "$(grep -o 'testpmd> ' "$_log" | wc -l)" -le "$1" ] &&
	      kill -0 $_pid 2>/dev/null && [ $_wait -lt 300 ]; do
		sleep 0.1
		_wait=$((_wait + 1))
	done
}

# received_at_least LOG PORT N: the last "show port stats" in LOG says
# PORT received N packets or more.
received_at_least() {
	awk -v port=$2 -v n=$3 '
		/NIC statistics for port/ { p = $6 }
		/Forward statistics|Accumulated/ { p = "" }
		p == port && /RX-packets:/ { rx = $2 }
		END { exit !(rx >= n) }' "$1"
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

# ran LOG STATUS PATTERN...: testpmd exited 0 (its STATUS) and LOG holds
# each PATTERN; else LOG shows.
ran() {
	_ran_log=$1 _ran_status=$2
	shift 2
	[ "$_ran_status" -eq 0 ] || { cat "$_ran_log"; return 1; }
	for _p; do
		grep -q "$_p" "$_ran_log" || { cat "$_ran_log"; return 1; }
	done
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
	rm -rf "$runtime_dir"
	echo "1..0 # SKIP dpdk-testpmd does not start without hugepages here: $(grep -m1 'EAL: \|Cause' "$work/probe.log")"
	exit 0
fi

# session NAME: a simulator for the runs that follow, the wire captured
# in $work/NAME.pcap; end_session NAME [TSHARK-OPTIONS] checks it stopped
# with no breach and the capture, whole once it stopped, is clean under
# tshark.
session() {
	capture=$work/$1.pcap
	sim_start --provider="$provider" --link-layer=eth --pcap="$capture"
}

end_session() {
	check "$1: no strict-mode breach" sim_stop
	have_tshark || return 0
	tshark -r "$capture" $2 -q -z expert >"$work/expert" 2>&1
	check "$1: tshark reads the capture, no malformed frame, no bad checksum, no warning" sh -c "
		tshark -r '$capture' -c 1 >/dev/null 2>&1 &&
		! grep -q 'Errors\|Warns\|Malformed' '$work/expert' || { cat '$work/expert'; false; }"
}

have_tshark() {
	command -v tshark >/dev/null 2>&1 && return 0
	skip "the capture under tshark: tshark not found (apt-get install tshark)"
	return 1
}

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
	check "$mode forwarding: testpmd probes both ports of mlx4_0 and exits 0" \
		ran "$log" $status 'Port 0: 00:02:C9:A1:B2:01' \
		'Port 1: 00:02:C9:A1:B2:02'
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
session forwarding
forwarding io
forwarding mac
end_session forwarding
if have_tshark; then
	tshark -r "$capture" -T fields -e eth.dst -e ip.src -e ip.dst -e udp.dstport \
		-c 1000 >"$work/frames" 2>/dev/null
	check "the capture holds testpmd's UDP frames" \
		grep -q '02:00:00:00:00:0[01][[:space:]]198\.18\.0\.1[[:space:]]198\.18\.0\.2[[:space:]]9$' \
		"$work/frames"
fi

# RSS.  The PMD spreads what its ports take over their Rx queues by the
# Toeplitz hash of the IPv4 addresses and UDP ports under its default key
# (mlx4_rss_hash_key_default, drivers/net/mlx4/mlx4_rxq.c); the table's
# WQs are the queues in order, so the hash's low two bits name the queue.
# The hash testpmd shows is the CQE's big-endian word as the PMD reads it:
# its low bits are the shown value's top byte's.
pmd_key=2cc681d15bdbf4f7fca28319db1a3e946b9e38d92c9c03d1ad9944a7d9563d59063c25f3fc1fdc2a
peer0=02:00:00:00:00:10 peer1=02:00:00:00:00:11
queues="--rxq=4 --txq=4 --rxd=256 --txd=256 --txonly-multi-flow
	--eth-peer=0,$peer0 --eth-peer=1,$peer1"

# received LOG: "PORT QUEUE HASH LOW-BITS" for each packet testpmd showed
# (verbose), the hash in hex as the adapter computed it.
received() {
	sed -n -e 's/.*port \([01]\)\/queue [0-9]*: received .*/P \1/p' \
		-e 's/.* RSS hash=0x\([0-9a-f]*\) - RSS queue=0x\([0-9a-f]*\).*/\2 \1/p' "$1" |
		while read -r a b; do
			if [ "$a" = P ]; then
				port=$b
			else
				h=$((0x$b))
				printf '%s %d %02x%02x%02x%02x %d\n' "$port" $((0x$a)) \
					$((h & 255)) $((h >> 8 & 255)) \
					$((h >> 16 & 255)) $((h >> 24 & 255)) \
					$((h >> 24 & 3))
			fi
		done
}

# rxonly NAME COMMANDS: receive only, showing each packet, after each
# port sent two bursts from each of its 4 queues, the frames' source
# addresses all different (198.18.N.3 to 198.18.0.2, UDP port 9): 256
# frames a port.
rxonly() {
	printf '%s\n' "$2" "set fwd rxonly" "set verbose 1" "start tx_first 2" \
		"until-shown 512" "stop" "quit" >"$work/$1.cmds"
	testpmd "$work/$1.log" "$work/$1.cmds" -a $pci -- -i $mbufs $queues
	status=$?
	received "$work/$1.log" >"$work/$1.got"
	check "$1: testpmd exits 0 and shows what it received" sh -c "
		test $status -eq 0 && test -s '$work/$1.got' || { cat '$work/$1.log'; false; }"
}

session rss
rxonly rss ""
for p in 0 1; do
	spread=$(awk -v p=$p '$1 == p { n[$2]++ } END { for (q = 0; q < 4; q++) printf "%d ", n[q] }' "$work/rss.got")
	check "rss: port $p's 4 queues each received a share of the flows ($spread)" \
		sh -c "echo '$spread' | awk '{ exit !(\$1 > 0 && \$2 > 0 && \$3 > 0 && \$4 > 0) }'"
done
check "rss: each packet's queue is its hash's low two bits" \
	awk '$2 != $4 { bad++ } END { exit bad > 0 }' "$work/rss.got"
end_session rss
if have_tshark; then
	tshark -r "$capture" -T fields -e ip.src -e ip.dst -e udp.srcport -e udp.dstport \
		2>/dev/null >"$work/rss.fields"
	"$TESTS_BIN/verbs/toeplitz" $pmd_key <"$work/rss.fields" | sort >"$work/rss.want"
	cut -d' ' -f3 "$work/rss.got" | sort >"$work/rss.have"
	check "rss: the hashes are the Toeplitz hashes of the frames sent ($(wc -l <"$work/rss.have") received, $(wc -l <"$work/rss.want") sent)" \
		cmp "$work/rss.want" "$work/rss.have"
fi
# A flow rule (rte_flow, which the PMD makes a verbs flow rule over a
# one-queue RSS context) steering one flow, 198.18.5.3 to 198.18.0.2 UDP,
# to a queue its hash would not give it, on each port: the queues then
# receive what the hashes say, but that flow's frames, which all go to
# the rule's.  The PMD wants a rule that names more than the MAC to name
# the MAC too: testpmd's peer address for the other port's frames.
flow_src=198.18.5.3
flow_hash=$(echo "$flow_src 198.18.0.2 9 9" | "$TESTS_BIN/verbs/toeplitz" $pmd_key)
flow_queue=$(( (0x$flow_hash + 1) % 4 ))
rule() {
	echo "flow create $1 ingress pattern eth dst is $2 / ipv4 src is $flow_src / udp / end actions queue index $flow_queue / end"
}
steered=0
session flow
rxonly flow "$(rule 1 $peer0)
$(rule 0 $peer1)
flow list 0"
check "flow: the rules are made and listed" sh -c "
	test \$(grep -c 'Flow rule #0 created' '$work/flow.log') -eq 2 &&
	grep -q '^0[[:space:]].*ETH IPV4 UDP => QUEUE' '$work/flow.log' || { cat '$work/flow.log'; false; }"
end_session flow
if have_tshark; then
	tshark -r "$capture" -T fields -e eth.src -e ip.src -e ip.dst \
		-e udp.srcport -e udp.dstport 2>/dev/null >"$work/flow.fields"
	for p in 0 1; do
		# What the other port sent, this one received.
		grep -v "^00:02:c9:a1:b2:0$((p + 1))" "$work/flow.fields" |
			cut -f2- >"$work/flow.$p.fields"
		"$TESTS_BIN/verbs/toeplitz" $pmd_key <"$work/flow.$p.fields" |
			paste "$work/flow.$p.fields" - |
			awk -v src=$flow_src -v q=$flow_queue '{
				low = (index("0123456789abcdef", substr($5, 8)) - 1) % 4
				n[$1 == src ? q : low]++
				if ($1 == src)
					steered++
			} END { printf "%d %d %d %d %d\n", n[0], n[1], n[2], n[3], steered }' \
			>"$work/flow.want"
		awk -v p=$p '$1 == p { n[$2]++ } END { printf "%d %d %d %d\n", n[0], n[1], n[2], n[3] }' \
			"$work/flow.got" >"$work/flow.have"
		want=$(cat "$work/flow.want") have=$(cat "$work/flow.have")
		check "flow: port $p's queues received what the hashes and the rule say ($flow_src to queue $flow_queue: ${want##* } frames; want ${want% *}, have $have)" \
			test "${want% *}" = "$have"
		steered=$((steered + ${want##* }))
	done
	check "flow: the rules' flow was sent ($steered frames)" test $steered -gt 0
fi
# Checksum offload: testpmd's csum engine asks the adapter for the IPv4
# and UDP checksums of each frame it forwards (it leaves the IPv4 one
# zero and the UDP one the pseudo-header's sum), and counts the frames
# whose receive checksums the adapter found bad.  The capture shows the
# checksums the adapter filled in.
session csum
printf '%s\n' "set fwd csum" "port stop all" "csum set ip hw 0" \
	"csum set udp hw 0" "csum set ip hw 1" "csum set udp hw 1" \
	"port start all" "start tx_first" "sleep 1" "stop" "quit" \
	>"$work/csum.cmds"
testpmd "$work/csum.log" "$work/csum.cmds" -a $pci -- -i $mbufs
status=$?
check "csum: testpmd exits 0, with IP and UDP checksums offloaded" sh -c "
	test $status -eq 0 &&
	test \$(grep -c 'IP checksum offload is hw' '$work/csum.log') -ge 2 &&
	test \$(grep -c 'UDP checksum offload is hw' '$work/csum.log') -ge 2 || { cat '$work/csum.log'; false; }"
for p in 0 1; do
	rx=$(fwd_stat "$work/csum.log" $p RX-packets)
	tx=$(fwd_stat "$work/csum.log" $p TX-packets)
	check "csum: port $p forwarded (rx ${rx:-?}, tx ${tx:-?}), none with a bad IP or L4 checksum" sh -c "
		test '${rx:-0}' -gt 32 -a '${tx:-0}' -gt 32 &&
		test '$(fwd_stat "$work/csum.log" $p Bad-ipcsum)' = 0 &&
		test '$(fwd_stat "$work/csum.log" $p Bad-l4csum)' = 0 || { cat '$work/csum.log'; false; }"
done
end_session csum
if have_tshark; then
	tshark -r "$capture" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
		-Y 'udp.checksum != 0' -T fields -e ip.checksum.status \
		-e udp.checksum.status 2>/dev/null | sort | uniq -c >"$work/csum.status"
	check "csum: every forwarded frame's IPv4 and UDP checksums are good ($(tr -s ' \t\n' ' ' <"$work/csum.status"))" \
		awk '$2 != 1 || $3 != 1 { bad++ } $2 == 1 && $3 == 1 { good += $1 }
		     END { exit bad > 0 || good <= 32 }' "$work/csum.status"
fi
# TCP checksum offload and TSO.  testpmd's generators make UDP only:
# tcp-source sends TCP segments of a connection from port 2 (testpmd's
# port 1) to port 0's MAC, both checksums zero; testpmd, not promiscuous
# (or port 0 would take back what port 1 sends), forwards them out of
# port 1 with the IPv4 and TCP checksums offloaded, then, its TSO set to
# an MSS of 600, again with TSO, the source's checksums this time filled
# in by its adapter (tcp-source --csum).  Port 0 checks what it receives
# (--enable-rx-cksum): the PMD marks a packet's checksums good where the
# CQE says so, and leaves them unknown otherwise (it never says bad).  The csum engine asks for TSO only for a
# payload longer than the MSS (process_inner_cksums), and the PMD makes
# each such one an LSO WQE over several of its 64-byte blocks.  Each
# phase is its own connection (source port 40001, 40002).
tcp_mss=600
tcp_sizes="1 100 599 600 601 1200 1400 1460"
n=$(echo $tcp_sizes | wc -w)
session tcp
printf '%s\n' "set promisc all off" "set fwd csum" "set verbose 1" "port stop all" \
	"csum set ip hw 1" "csum set tcp hw 1" "port start all" "start" \
	"send 2 00:02:C9:A1:B2:01 40001 $tcp_sizes" "until-rx 0 $n" "sleep 1" \
	"stop" "port stop 1" "tso set $tcp_mss 1" "port start 1" "start" \
	"send --csum 2 00:02:C9:A1:B2:01 40002 $tcp_sizes" "until-rx 0 $((2 * n))" \
	"sleep 1" "stop" "quit" \
	>"$work/tcp.cmds"
testpmd "$work/tcp.log" "$work/tcp.cmds" -a $pci -- -i $mbufs --enable-rx-cksum
status=$?
check "tcp: testpmd exits 0, with IP and TCP checksums offloaded, then TSO" \
	ran "$work/tcp.log" $status 'TCP checksum offload is hw' \
	"TSO segment size for non-tunneled packets is $tcp_mss"
check "tcp: tcp-source sent its segments, twice" sh -c "
	test \$(grep -c '^status 0\$' '$work/tcp.log.send') -eq 2 || { cat '$work/tcp.log.send'; false; }"
rx=$(fwd_stat "$work/tcp.log" 0 RX-packets) tx=$(fwd_stat "$work/tcp.log" 1 TX-packets)
check "tcp: port 0 received the $n segments, port 1 forwarded them (rx ${rx:-?}, tx ${tx:-?})" \
	test "${rx:-0}" -eq $n -a "${tx:-0}" -eq $n
# rx_csum_flags GOOD|UNKNOWN: how many of port 0's packets had both the
# IPv4 and the TCP checksum so, as testpmd showed them (verbose).
rx_csum_flags() {
	awk -v want=$1 'match($0, /port [0-9]+\/queue [0-9]+: received/) {
			port = substr($0, RSTART + 5, 1)
		}
		port == "0" && /ol_flags:/ && $0 ~ "RX_IP_CKSUM_" want &&
		$0 ~ "RX_L4_CKSUM_" want { n++ }
		END { print n + 0 }' "$work/tcp.log"
}
good=$(rx_csum_flags GOOD) unknown=$(rx_csum_flags UNKNOWN)
check "tcp: port 0 reported the $n good segments' checksums good, the $n zero ones' not (good $good, unknown $unknown)" \
	test "$good" -eq $n -a "$unknown" -eq $n
end_session tcp "-o tcp.analyze_sequence_numbers:FALSE"

# tcp_frames PORT: the frames of connection PORT in the capture, one a
# line: who sent it (source: tcp-source, port1: testpmd's port 1), the
# IPv4 ID, total length and checksum status, the TCP sequence number,
# payload length, flags, checksum status and payload.
tcp_frames() {
	tshark -r "$capture" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
		-o tcp.analyze_sequence_numbers:FALSE -Y "tcp.srcport == $1" \
		-T fields -e eth.src -e ip.id -e ip.len -e ip.checksum.status \
		-e tcp.seq_raw -e tcp.len -e tcp.flags -e tcp.checksum.status \
		-e tcp.payload 2>/dev/null |
		sed -e 's/^02:00:00:00:00:20/source/' -e 's/^00:02:c9:a1:b2:02/port1/'
}

# tcp_expected MSS: from tcp_frames' lines, what port 1 should send for
# the source's segments, as "ID LENGTH SEQ PAYLOAD-LENGTH FLAGS PAYLOAD":
# with MSS 0, each segment as it came; else each segment whose payload
# is longer than MSS cut into MSS-sized ones, the last shorter, the
# sequence number moved on by the bytes before, the IPv4 ID by one a
# segment, FIN and PSH on the last only (raw_lso_segment).
tcp_expected() {
	awk -v mss=$1 '
	function hex(s,	v, i) {
		v = 0
		for (i = 3; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
		return v
	}
	$1 == "source" {
		id = hex($2); seq = $5; len = $6; flags = hex($7); p = $9
		if (mss == 0 || len <= mss) {
			printf "0x%04x %d %d %d 0x%04x %s\n", id, len + 40, seq, len, flags, p
			next
		}
		for (off = 0; off < len; off += mss) {
			n = len - off < mss ? len - off : mss
			f = off + n < len ? flags - (int(flags / 8) % 2) * 8 - flags % 2 : flags
			printf "0x%04x %d %d %d 0x%04x %s\n", (id + off / mss) % 65536,
				n + 40, seq + off, n, f, substr(p, 2 * off + 1, 2 * n)
		}
	}'
}

if have_tshark; then
	for phase in "40001 0 checksums bad 0" "40002 $tcp_mss TSO good 1"; do
		set -- $phase
		tcp_frames $1 >"$work/tcp.$1"
		tcp_expected $2 <"$work/tcp.$1" >"$work/tcp.$1.want"
		awk '$1 == "port1" { print $2, $3, $5, $6, $7, $9 }' "$work/tcp.$1" \
			>"$work/tcp.$1.have"
		sent=$(grep -c '^source' "$work/tcp.$1") want=$(wc -l <"$work/tcp.$1.want")
		check "tcp ($3): the $n segments went out as $want frames, each ID, length, sequence number, flags and payload as the adapter sets them (have $(wc -l <"$work/tcp.$1.have"))" sh -c "
			test $sent -eq $n && cmp '$work/tcp.$1.want' '$work/tcp.$1.have' ||
			{ diff '$work/tcp.$1.want' '$work/tcp.$1.have' | cut -c1-120; false; }"
		check "tcp ($3): every frame port 1 sent has good IPv4 and TCP checksums, every one tcp-source sent $4 ones" \
			awk -v src=$5 '$1 == "port1" && ($4 != 1 || $8 != 1) { bad++ }
			     $1 == "source" && ($4 != src || $8 != src) { bad++ }
			     END { exit bad > 0 || NR == 0 }' "$work/tcp.$1"
	done
	check "tcp (TSO): each segment longer than $tcp_mss bytes was cut" \
		test $(wc -l <"$work/tcp.40002.want") -gt $n
fi
rm -rf "$runtime_dir"
finish

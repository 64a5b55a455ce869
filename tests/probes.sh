# SPDX-License-Identifier: BSD-2-Clause
#
# What a test needs that a machine may lack, probed before the test
# counts on it.  A test without it runs another way, or is skipped with
# the reason in its TAP line; tests/README lists every probe.  Sourced by
# lib.sh and by the wrappers that exec a program on the simulator.

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"

# no_ethernet_ports: prints why this machine cannot give the simulator
# Ethernet ports, and succeeds.  The daemon makes them in a network
# namespace of its own (a user namespace too, when not root) with a
# bridge and a veth interface per port (sim/fabric/ether.c): a kernel or a
# container without those refuses.  Fails, printing nothing, where the
# ports can be made, or where the simulator fails for another reason:
# the test then meets that failure itself.
no_ethernet_ports() {
	_probe_log=$("$top_builddir/sim/mlx4sim" run --link-layer=eth -- true 2>&1 >/dev/null) &&
		return 1
	printf '%s\n' "$_probe_log" | sed -n \
		-e "s/^mlx4simd: \(Ethernet ports need .*\)/\1/p" \
		-e "s/^mlx4simd: \(cannot make the Ethernet ports' interfaces.*\)/\1/p" |
		head -n 1 | grep .
}

# has_cap_net_raw: whether this process holds CAP_NET_RAW, which the
# kernel asks of a raw packet QP's creator (and of a sniffer flow rule).
has_cap_net_raw() {
	_caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
	[ $(( 0x${_caps:-0} >> 13 & 1 )) -eq 1 ]
}

# need_ethernet_ports, need_cap_net_raw: a whole script that cannot run
# without them is skipped (TAP plan 1..0), saying why.
need_ethernet_ports() {
	_why=$(no_ethernet_ports) || return 0
	echo "1..0 # SKIP no Ethernet ports on this machine: $_why"
	exit 0
}

need_cap_net_raw() {
	has_cap_net_raw && return 0
	echo "1..0 # SKIP raw packet QPs need CAP_NET_RAW (run as root)"
	exit 0
}

# no_hosts: prints why this machine cannot give the simulator several
# hosts (--hosts: a network, UTS and mount namespace for each, in a user
# namespace when not root, sim/host/hosts.c), and succeeds.  Fails,
# printing nothing, where it can.
no_hosts() {
	_probe_log=$("$top_builddir/sim/mlx4sim" run --hosts 2 -- true 2>&1 >/dev/null) &&
		return 1
	printf '%s\n' "$_probe_log" | sed -n \
		-e "s/^mlx4simd: \(--hosts.*\)/\1/p" \
		-e "s/^mlx4simd: \(.*namespace.*\)/\1/p" \
		-e "s/^mlx4simd: \(cannot make .*\)/\1/p" |
		head -n 1 | grep . || printf '%s\n' "$_probe_log" | head -n 1
}

need_hosts() {
	_why=$(no_hosts) || return 0
	echo "1..0 # SKIP no simulated hosts on this machine: $_why"
	exit 0
}

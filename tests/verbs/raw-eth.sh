#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Raw packet QPs on Ethernet ports (tests/verbs/raw-eth): frames steered by flow
# rules, priorities, checksum offload; its TAP is this test's.  The kernel
# gives raw packet QPs to CAP_NET_RAW only: skipped, saying so, without.
# Usage: raw-eth.sh project|system
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
if [ $(( 0x$caps >> 13 & 1 )) -eq 0 ]; then
	echo "1..0 # SKIP raw packet QPs need CAP_NET_RAW (run as root)"
	exit 0
fi
exec "$top_builddir/sim/mlx4sim" run --provider="$1" --link-layer=eth -- \
	"$top_builddir/tests/verbs/raw-eth" "$1"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Raw packet QPs on Ethernet ports (tests/verbs/raw-eth): frames steered by flow
# rules, priorities, checksum offload, a port down (`mlx4sim fault`, the
# command is $MLX4SIM); its TAP is this test's.  The kernel gives raw
# packet QPs to CAP_NET_RAW only: skipped, saying so, without it or
# without Ethernet ports (tests/probes.sh).
# Usage: raw-eth.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../probes.sh"
need_cap_net_raw
need_ethernet_ports
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" --link-layer=eth -- \
	env MLX4SIM="$top_builddir/sim/mlx4sim" \
	"$top_builddir/tests/verbs/raw-eth" "$provider" "$@"

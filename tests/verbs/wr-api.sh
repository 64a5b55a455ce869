#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The ibv_wr_* interface (tests/verbs/wr-api) on the simulator; its TAP is this
# test's.  rdma-core's mlx4 has no such interface: there the program
# skips, naming why.  Usage: wr-api.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/verbs/wr-api" "$@"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Error semantics, reads, atomics and events (tests/verbs/rdma-semantics) on
# the simulator; its TAP is this test's.  Fails on a strict-mode breach.
# Usage: rdma-semantics.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/verbs/rdma-semantics" "$@"

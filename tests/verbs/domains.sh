#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Thread and parent domains, single-threaded CQs (tests/verbs/domains) on the
# simulator; its TAP is this test's.  rdma-core's mlx4 has no thread or
# parent domains: with it the program checks that it refuses them.
# Usage: domains.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/verbs/domains" "$provider" "$@"

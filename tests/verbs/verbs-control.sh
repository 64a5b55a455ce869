#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The control path's rules and the errors bad input gets
# (tests/verbs/verbs-control) on the simulator; its TAP is this test's.
# Usage: control.sh project|system [--post-checks]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/verbs/verbs-control" "$@"

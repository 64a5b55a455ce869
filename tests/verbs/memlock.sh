#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# RLIMIT_MEMLOCK and what the kernel pins (tests/verbs/memlock) on the
# simulator with a provider; its TAP is this test's.
# Usage: memlock.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/verbs/memlock" "$@"

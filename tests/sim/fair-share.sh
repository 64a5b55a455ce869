#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Each busy send queue its share a pass (tests/sim/fair-share.c), with the
# provider $1 (project|system); more arguments name cases.
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/sim/fair-share" "$@"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The device's boundary, whichever way a program crosses it
# (tests/sim/device-boundary.c), with the provider $1 (project|system).
# Usage: device-boundary.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	"$top_builddir/tests/sim/device-boundary" "$@"

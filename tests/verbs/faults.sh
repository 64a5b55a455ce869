#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Faults injected with `mlx4sim fault` (tests/verbs/faults), and what each end
# of a connection sees; its TAP is this test's.  Fails on a strict-mode
# breach.  Usage: faults.sh project|system [--list | NAME...]
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	env MLX4SIM="$top_builddir/sim/mlx4sim" "$top_builddir/tests/verbs/faults" \
	"$@"

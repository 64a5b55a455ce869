#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One of the suite's programs on the simulator with a provider (project:
# this tree's, system: the distribution's); its TAP is the calling
# test's.  The program finds the mlx4sim command in $MLX4SIM (for
# `mlx4sim fault`).
# Usage: on-sim.sh PROGRAM project|system [ARG...]
#   PROGRAM  its path under tests/: verbs/rdma-semantics
#   ARG      the program's own: --list, names of cases, its options
: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
program=$1
provider=$2
shift 2
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" -- \
	env MLX4SIM="$top_builddir/sim/mlx4sim" \
	"$top_builddir/tests/$program" "$@"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# What mlx4_ib refuses and how it lays out queues (tests/verbs/kernel-rules),
# on the simulator; its TAP is this test's.
# Usage: kernel-rules.sh project|system [mlx4sim options] [--list | NAME...]
# (the options first, each one word: --link-layer=eth)
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
. "$(dirname "$0")/sim-options.sh"
# shellcheck disable=SC2086 # the options are words
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" $options -- \
	"$top_builddir/tests/verbs/kernel-rules" "$@"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/verbs/provider-verbs on the simulator with a provider (project: this
# tree's, system: the distribution's), so that the two are held to the
# same behaviour; its TAP is this test's.  Fails on a strict-mode breach.
# Usage: provider-verbs.sh project|system [mlx4sim options] [--list | NAME...]
# (the options first, each one word: --link-layer=eth)
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
provider=$1
shift
. "$(dirname "$0")/sim-options.sh"
# shellcheck disable=SC2086 # the options are words
exec "$top_builddir/sim/mlx4sim" run --provider="$provider" $options -- \
	"$top_builddir/tests/verbs/provider-verbs" "$provider" "$@"

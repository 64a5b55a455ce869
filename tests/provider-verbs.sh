#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/provider-verbs on the simulator: with this tree's provider, and
# with the distribution's mlx4 provider when it is installed, so that
# the two are held to the same behaviour; and tests/provider-dv, the
# direct verbs of this tree's library.  (Run from the build directory.)
sim=sim/mlx4sim
prog=tests/provider-verbs
[ -x "$sim" ] || { echo "$sim not built"; exit 77; }

passed=0 failed=0
run() {
	out=$("$sim" run --provider="$1" -- "${2:-$prog}" "$1" 2>&1)
	status=$?
	echo "$out" | sed "s/^/$1: /"
	p=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
	f=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$status" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
		echo "$1: exited with status $status"
		failed=$((failed + 1))
	fi
}

run project
run project tests/provider-dv
for lib in /usr/lib/*/libibverbs/libmlx4-rdmav*.so \
	   /usr/lib*/libibverbs/libmlx4-rdmav*.so; do
	if [ -e "$lib" ]; then
		run system
		break
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

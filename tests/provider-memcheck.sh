#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The unit tests again under valgrind's memcheck: no invalid access, no
# use of uninitialised memory, no leak.  (Run from the build directory.)
command -v valgrind >/dev/null || { echo "valgrind not found"; exit 77; }

passed=0 failed=0
for t in tests/unit-post tests/unit-poll; do
	if valgrind -q --error-exitcode=9 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$t" >"$t.memcheck" 2>&1; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL $t under memcheck:"
		cat "$t.memcheck"
	fi
	rm -f "$t.memcheck"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# libmlx4.so.1 must export exactly the MLX4_1.0 direct verbs.  (Run from
# the build directory, as make check does.)
lib=src/.libs/libmlx4.so.1
[ -f "$lib" ] || { echo "$lib not built"; exit 1; }
command -v nm >/dev/null || { echo "nm not found"; exit 77; }

expected='MLX4_1.0
mlx4dv_create_qp@@MLX4_1.0
mlx4dv_init_obj@@MLX4_1.0
mlx4dv_query_device@@MLX4_1.0
mlx4dv_set_context_attr@@MLX4_1.0'
actual=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | LC_ALL=C sort)

passed=0 failed=0
if [ "$actual" = "$expected" ]; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	printf 'FAIL exported:\n%s\nexpected:\n%s\n' "$actual" "$expected"
fi

# libibverbs finds the provider through the constructor's registration,
# under the private interface version configure found.
pabi=$(sed -n 's/^#define MLX4_PABI_VERSION //p' config.h)
register=verbs_register_driver_$pabi@IBVERBS_PRIVATE_$pabi
if nm -D --undefined-only --with-symbol-versions "$lib" |
		grep -q " $register\$"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "FAIL $register is not called"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

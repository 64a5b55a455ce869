/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memcheck annotations, compiled in by ./configure --with-valgrind.
 *
 * The device writes CQEs, and the kernel writes command responses,
 * behind valgrind's back; tell memcheck those bytes are now defined.
 */
#ifndef MLX4_ANNOTATE_H
#define MLX4_ANNOTATE_H

#ifdef INCLUDE_VALGRIND
#include <valgrind/memcheck.h>
#define mlx4_mark_defined(addr, len)	VALGRIND_MAKE_MEM_DEFINED(addr, len)
#else
#define mlx4_mark_defined(addr, len)	do { } while (0)
#endif

#endif /* MLX4_ANNOTATE_H */

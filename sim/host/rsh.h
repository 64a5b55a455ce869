/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mlx4sim-rsh's request to a host's keeper (rshd.c): this header, with
 * the client's descriptors 0, 1 and 2 passed (SCM_RIGHTS), then @len
 * bytes: the working directory, the command and the environment's
 * strings, each ended by a NUL.  The answer: the exit status, an int.
 */
#ifndef MLX4SIM_RSH_H
#define MLX4SIM_RSH_H

#include <stdint.h>

#define RSH_SOCKET_NAME	"rsh"		/* in the run directory's node<N>/ */
#define RSH_MAGIC	0x6d347273u	/* "m4rs" */
#define RSH_MAX_TEXT	(4u << 20)

struct rsh_header {
	uint32_t magic;
	uint32_t len;
};

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test's data buffer: page-aligned, zeroed (so that what a test finds
 * there came from the device), and registered; the test bails when it
 * cannot have one.
 */
#ifndef TESTS_BUFFER_H
#define TESTS_BUFFER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "tap.h"

/* What a peer may do to the buffers of the tests that exchange data. */
#define ACCESS_ALL	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* @size bytes registered on @pd with @access; their MR in *@mr. */
static inline uint8_t *registered_buffer(struct ibv_pd *pd, size_t size,
					 unsigned int access,
					 struct ibv_mr **mr)
{
	uint8_t *buf = aligned_alloc(4096, size);

	if (!buf)
		bail("aligned_alloc");
	memset(buf, 0, size);
	*mr = ibv_reg_mr(pd, buf, size, access);
	if (!*mr)
		bail("ibv_reg_mr");
	return buf;
}

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device the test programs run on.  A test that cannot find its
 * device fails, naming the problem: it is never counted as skipped, so a
 * simulator that did not come up (or a preload that was not loaded)
 * cannot pass the suite silently.
 */
#ifndef TESTS_DEVICE_H
#define TESTS_DEVICE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

/* The first RDMA device, opened; exits 1 with a message when there is none. */
static inline struct ibv_context *open_first_device(const char *prog)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	if (!list || !list[0]) {
		printf("Bail out! %s: no RDMA device (is the simulator running?)\n",
		       prog);
		exit(1);
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		printf("Bail out! %s: cannot open %s: %s\n", prog,
		       ibv_get_device_name(list[0]), strerror(errno));
		exit(1);
	}
	ibv_free_device_list(list);
	return ctx;
}

#endif

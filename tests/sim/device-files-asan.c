/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * device-files-asan: built with AddressSanitizer by device-files-asan.tap,
 * it lists the devices and opens the first.  The sanitizer's runtime
 * starts before the C library has set up the environment and calls the
 * file system functions the simulator's preload library stands at: the
 * library must not decide then that there is no simulator.  With
 * --probe it only starts and ends: whether the runtime runs here at all.
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

int main(int argc, char **argv)
{
	struct ibv_device_attr attr;
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = 0, ret = 1;

	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return 0;
	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		printf("no RDMA device (%d)\n", n);
		goto out;
	}
	printf("%d devices, the first %s\n", n, ibv_get_device_name(list[0]));
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		perror("ibv_open_device");
		goto out;
	}
	if (ibv_query_device(ctx, &attr))
		perror("ibv_query_device");
	else if (attr.vendor_part_id != 4099 && attr.vendor_part_id != 4103)
		printf("part %u is not a ConnectX-3 (Pro)\n",
		       attr.vendor_part_id);
	else
		ret = 0;
	ibv_close_device(ctx);
out:
	if (list)
		ibv_free_device_list(list);
	return ret;
}

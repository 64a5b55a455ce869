// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which files serve mlx4 in a program linked with -lmlx4: the file the
 * direct verb mlx4dv_query_device() comes from, the file of the context's
 * post_send (the provider libibverbs loaded), and every libmlx4 file
 * mapped.  One line each, for tests/install/deb-chroot.sh to compare:
 * all must be the same single file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx4dv.h>

static void print_file_of(const char *what, const void *addr)
{
	char real[PATH_MAX];
	Dl_info info;

	if (!dladdr(addr, &info) || !info.dli_fname) {
		printf("%s: unknown\n", what);
		return;
	}
	printf("%s: %s\n", what,
	       realpath(info.dli_fname, real) ? real : info.dli_fname);
}

/* Each mapped file whose name has "mlx4" in it, once. */
static void print_mapped_mlx4_files(void)
{
	char line[PATH_MAX + 128], last[PATH_MAX] = "";
	FILE *maps = fopen("/proc/self/maps", "r");

	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps)) {
		char *path = strchr(line, '/');

		if (!path || !strstr(path, "libmlx4.so"))
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (strcmp(path, last)) {
			printf("mapped: %s\n", path);
			snprintf(last, sizeof(last), "%s", path);
		}
	}
	fclose(maps);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct mlx4dv_context dv = {};
	struct ibv_context *ctx;
	int ret;

	if (!list || !list[0]) {
		fprintf(stderr, "dv-probe: no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fprintf(stderr, "dv-probe: cannot open %s\n",
			ibv_get_device_name(list[0]));
		return 1;
	}
	ret = mlx4dv_query_device(ctx, &dv);
	printf("mlx4dv_query_device: %d\n", ret);
	print_file_of("direct verbs", (void *)mlx4dv_query_device);
	print_file_of("provider", (void *)ctx->ops.post_send);
	print_mapped_mlx4_files();
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return ret;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue memory: whole pages, because the kernel pins and maps them for
 * the device page by page, and excluded from fork() so that a child's
 * copy-on-write never moves a page the device is using.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "mlx4.h"

int mlx4_alloc_buf(struct mlx4_buf *buf, size_t size, int page_size)
{
	size_t length = (size + page_size - 1) & ~((size_t)page_size - 1);
	void *mem;
	int ret;

	ret = posix_memalign(&mem, page_size, length);
	if (ret)
		return ret;

	ret = ibv_dontfork_range(mem, length);
	if (ret) {
		free(mem);
		return ret;
	}

	buf->buf = mem;
	buf->length = length;
	return 0;
}

void mlx4_free_buf(struct mlx4_buf *buf)
{
	if (!buf->buf)
		return;
	ibv_dofork_range(buf->buf, buf->length);
	free(buf->buf);
	buf->buf = NULL;
	buf->length = 0;
}

/*
 * Queue memory from the application's allocator (mlx4dv_set_context_attr):
 * excluded from fork() like our own, for the same reason.
 */
int mlx4_alloc_buf_extern(struct mlx4_context *ctx, struct mlx4_buf *buf,
			  size_t size)
{
	void *mem = ctx->extern_alloc.alloc(size, ctx->extern_alloc.data);
	int ret;

	if (!mem)
		return ENOMEM;
	ret = ibv_dontfork_range(mem, size);
	if (ret) {
		ctx->extern_alloc.free(mem, ctx->extern_alloc.data);
		return ret;
	}
	buf->buf = mem;
	buf->length = size;
	return 0;
}

void mlx4_free_buf_extern(struct mlx4_context *ctx, struct mlx4_buf *buf)
{
	if (!buf->buf)
		return;
	ibv_dofork_range(buf->buf, buf->length);
	ctx->extern_alloc.free(buf->buf, ctx->extern_alloc.data);
	buf->buf = NULL;
	buf->length = 0;
}

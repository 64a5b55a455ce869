/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue memory: whole pages, because the kernel pins and maps them for
 * the device page by page, and excluded from fork() so that a child's
 * copy-on-write never moves a page the device is using.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "mlx4.h"

int mlx4_alloc_buf(struct mlx4_buf *buf, size_t size, int page_size)
{
	size_t length = mlx4_page_align(size, page_size);
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
	buf->domain = NULL;
	buf->extern_free = NULL;
	return 0;
}

/*
 * Memory of ours, of a parent domain's allocator or of the mlx4dv
 * allocators: back where it came from, also when the context has been
 * given other allocators since.
 */
void mlx4_free_buf(struct mlx4_buf *buf)
{
	struct mlx4_pd *domain = buf->domain;

	if (!buf->buf)
		return;
	ibv_dofork_range(buf->buf, buf->length);
	if (buf->extern_free)
		buf->extern_free(buf->buf, buf->extern_data);
	else if (domain)
		domain->free(&domain->ibv_pd, domain->pd_context, buf->buf,
			     buf->resource_type);
	else
		free(buf->buf);
	buf->buf = NULL;
	buf->length = 0;
	buf->domain = NULL;
	buf->extern_free = NULL;
}

/*
 * @length bytes at @alignment from the allocator of the parent domain
 * @domain (NULL: none), for a @resource_type (MLX4DV_RES_TYPE_*).  With
 * no allocator, or one that answers IBV_ALLOCATOR_USE_DEFAULT, buf->buf
 * stays NULL and the caller allocates as it would otherwise.  The device
 * cannot use memory misaligned for it: EINVAL, the memory given back.
 */
int mlx4_alloc_domain_mem(struct mlx4_pd *domain, struct mlx4_buf *buf,
			  size_t length, size_t alignment,
			  uint64_t resource_type)
{
	void *mem;
	int ret;

	buf->buf = NULL;
	if (!domain || !domain->alloc)
		return 0;
	mem = domain->alloc(&domain->ibv_pd, domain->pd_context, length,
			    alignment, resource_type);
	if (mem == IBV_ALLOCATOR_USE_DEFAULT)
		return 0;
	if (!mem)
		return ENOMEM;
	ret = (uintptr_t)mem & (alignment - 1) ? EINVAL :
	      ibv_dontfork_range(mem, length);
	if (ret) {
		domain->free(&domain->ibv_pd, domain->pd_context, mem,
			     resource_type);
		return ret;
	}
	buf->buf = mem;
	buf->length = length;
	buf->domain = domain;
	buf->resource_type = resource_type;
	buf->extern_free = NULL;
	return 0;
}

/*
 * A queue buffer: from @domain's allocator if it gives one, else from the
 * context's (mlx4_alloc_ctx_buf).
 */
int mlx4_alloc_queue_buf(struct mlx4_context *ctx, struct mlx4_pd *domain,
			 struct mlx4_buf *buf, size_t size, int page_size,
			 uint64_t resource_type)
{
	int ret;

	ret = mlx4_alloc_domain_mem(domain, buf, mlx4_page_align(size, page_size),
				    page_size, resource_type);
	if (ret || buf->buf)
		return ret;
	return mlx4_alloc_ctx_buf(ctx, buf, size, page_size);
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
	buf->domain = NULL;
	buf->extern_free = ctx->extern_alloc.free;
	buf->extern_data = ctx->extern_alloc.data;
	return 0;
}

void mlx4_free_buf_extern(struct mlx4_context *ctx, struct mlx4_buf *buf)
{
	(void)ctx;	/* the buffer keeps the allocators that gave it */
	mlx4_free_buf(buf);
}

/*
 * The memory of a CQ, an SRQ or a page of doorbell records: from the
 * mlx4dv allocators when the application gave them, as rdma-core's mlx4
 * takes every queue's (DPDK's PMD gives them so that its secondary
 * processes reach the queues in the memory they share), else ours.
 * Whole pages either way.
 */
int mlx4_alloc_ctx_buf(struct mlx4_context *ctx, struct mlx4_buf *buf,
		       size_t size, int page_size)
{
	if (ctx->extern_alloc.alloc && ctx->extern_alloc.free)
		return mlx4_alloc_buf_extern(ctx, buf,
					     mlx4_page_align(size, page_size));
	return mlx4_alloc_buf(buf, size, page_size);
}

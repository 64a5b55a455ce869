/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Doorbell records: the small words through which the provider tells the
 * device how far a receive queue or SRQ was filled and how far a CQ was
 * consumed.  The kernel pins the page that holds each record, so records
 * are carved out of shared pages rather than given a page each.
 *
 * Every record takes 8 bytes (a CQ needs two words: consumer index and
 * arm state), and a page of them is tracked with a free bitmap.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mlx4.h"

enum {
	MLX4_DB_SIZE	= 8,
	BITS_PER_WORD	= 64,
};

struct mlx4_db_page {
	struct mlx4_db_page    *next;
	struct mlx4_buf		buf;
	int			num_db;
	int			use_cnt;
	uint64_t		free[];		/* bit set: record is free */
};

static struct mlx4_db_page *add_page(struct mlx4_context *ctx)
{
	int page_size = mlx4_page_size(&ctx->ibv_ctx.context);
	int num_db = page_size / MLX4_DB_SIZE;
	int words = (num_db + BITS_PER_WORD - 1) / BITS_PER_WORD;
	struct mlx4_db_page *page;
	int i;

	page = calloc(1, sizeof(*page) + words * sizeof(uint64_t));
	if (!page)
		return NULL;

	if (mlx4_alloc_ctx_buf(ctx, &page->buf, page_size, page_size)) {
		free(page);
		return NULL;
	}
	memset(page->buf.buf, 0, page_size);

	page->num_db = num_db;
	for (i = 0; i < num_db; i++)
		page->free[i / BITS_PER_WORD] |= 1ULL << (i % BITS_PER_WORD);

	page->next = ctx->db_pages;
	ctx->db_pages = page;
	return page;
}

__be32 *mlx4_alloc_db(struct mlx4_context *ctx)
{
	struct mlx4_db_page *page;
	__be32 *db = NULL;
	int i, bit;

	pthread_mutex_lock(&ctx->db_mutex);

	for (page = ctx->db_pages; page; page = page->next)
		if (page->use_cnt < page->num_db)
			break;
	if (!page)
		page = add_page(ctx);
	if (!page)
		goto out;

	for (i = 0; !page->free[i]; i++)
		;
	bit = __builtin_ctzll(page->free[i]);
	page->free[i] &= ~(1ULL << bit);
	page->use_cnt++;

	db = (__be32 *)((char *)page->buf.buf +
			(i * BITS_PER_WORD + bit) * MLX4_DB_SIZE);
	/* A record starts at zero: nothing posted, nothing consumed. */
	db[0] = 0;
	db[1] = 0;
out:
	pthread_mutex_unlock(&ctx->db_mutex);
	return db;
}

void mlx4_free_db(struct mlx4_context *ctx, __be32 *db)
{
	struct mlx4_db_page *page, **prev;
	uintptr_t offset;
	int i;

	if (!db)
		return;

	pthread_mutex_lock(&ctx->db_mutex);

	for (prev = &ctx->db_pages; (page = *prev); prev = &page->next) {
		offset = (uintptr_t)db - (uintptr_t)page->buf.buf;
		if (offset < page->buf.length)
			break;
	}
	if (!page)
		goto out;

	i = offset / MLX4_DB_SIZE;
	page->free[i / BITS_PER_WORD] |= 1ULL << (i % BITS_PER_WORD);
	if (--page->use_cnt == 0) {
		*prev = page->next;
		mlx4_free_buf(&page->buf);
		free(page);
	}
out:
	pthread_mutex_unlock(&ctx->db_mutex);
}

void mlx4_free_db_pages(struct mlx4_context *ctx)
{
	struct mlx4_db_page *page;

	while ((page = ctx->db_pages)) {
		ctx->db_pages = page->next;
		mlx4_free_buf(&page->buf);
		free(page);
	}
}

/*
 * The doorbell record of a queue created on the parent domain @domain
 * (or NULL): from the domain's allocator if it gives one, kept in @dbr
 * to give it back, else from the context's pages.
 */
int mlx4_alloc_queue_db(struct mlx4_context *ctx, struct mlx4_pd *domain,
			struct mlx4_buf *dbr, __be32 **db)
{
	int ret;

	ret = mlx4_alloc_domain_mem(domain, dbr, MLX4_DB_SIZE, MLX4_DB_SIZE,
				    MLX4DV_RES_TYPE_DBR);
	if (ret)
		return ret;
	if (dbr->buf) {
		*db = dbr->buf;
		memset(*db, 0, MLX4_DB_SIZE);
		return 0;
	}
	*db = mlx4_alloc_db(ctx);
	return *db ? 0 : ENOMEM;
}

void mlx4_free_queue_db(struct mlx4_context *ctx, __be32 *db,
			struct mlx4_buf *dbr)
{
	if (dbr->buf)
		mlx4_free_buf(dbr);
	else
		mlx4_free_db(ctx, db);
}

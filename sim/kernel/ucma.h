/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_ucm's own declarations, shared by ucma.c (files, ids, events, the
 * command table) and ucma-cmd.c (the commands that act on an id).
 */
#ifndef MLX4SIM_UCMA_H
#define MLX4SIM_UCMA_H

#include "cma.h"

/* ucma's sysctl net.rdma_ucm.max_backlog, at its default. */
#define UCMA_MAX_BACKLOG	1024

#ifndef offsetofend
#define offsetofend(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))
#endif

struct ucma_file {
	struct list_node link;		/* in the daemon's rdma_cm files */
	struct sim_ctx *ctx;
	uint32_t id;
	struct list_node ids;		/* struct cma_id */
	struct list_node events;	/* struct ucma_event, oldest first */
	int notify;			/* our end: a byte per event */
	int drain;			/* the process's end, to empty it */
};

/* One write(2): where the command lies, and the header's lengths. */
struct ucma_cmd {
	struct ucma_file *file;
	uint64_t in;			/* the command, after the header */
	int in_len, out_len;
	uint32_t migrate_from;		/* struct mlx4sim_ucma_write's */
};

int ucma_copy_in(const struct ucma_cmd *c, uint64_t addr, void *buf,
		 size_t len);
int ucma_copy_out(const struct ucma_cmd *c, uint64_t addr, const void *buf,
		  size_t len);
struct cma_id *ucma_get_id(const struct ucma_cmd *c, uint32_t handle,
			   int *err);
struct cma_id *ucma_get_id_dev(const struct ucma_cmd *c, uint32_t handle,
			       int *err);

/* ucma-cmd.c */
int ucma_bind_ip(struct ucma_cmd *c);
int ucma_bind(struct ucma_cmd *c);
int ucma_resolve_ip(struct ucma_cmd *c);
int ucma_resolve_addr(struct ucma_cmd *c);
int ucma_resolve_route(struct ucma_cmd *c);
int ucma_query_route(struct ucma_cmd *c);
int ucma_query(struct ucma_cmd *c);
int ucma_connect(struct ucma_cmd *c);
int ucma_listen(struct ucma_cmd *c);
int ucma_accept(struct ucma_cmd *c);
int ucma_reject(struct ucma_cmd *c);
int ucma_disconnect(struct ucma_cmd *c);
int ucma_init_qp_attr(struct ucma_cmd *c);
int ucma_set_option(struct ucma_cmd *c);
int ucma_notify(struct ucma_cmd *c);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A uverbs command as the handlers see it: the core request and the
 * driver's part of it (the mlx4_ib structures), and where the core and
 * driver responses go.  Like the kernel, handlers read requests through
 * cmd_in() (a shorter request reads as zero-extended) and write responses
 * through cmd_out() (a shorter response buffer gets a prefix).
 */
#ifndef MLX4SIM_UVERBS_H
#define MLX4SIM_UVERBS_H

#include <string.h>

#include "kernel.h"

struct sim_cmd {
	struct sim_ctx *ctx;
	uint32_t command;		/* without the extended flag */
	bool extended;
	int (*handler)(struct sim_cmd *cmd);
	const uint8_t *in;
	size_t in_len;
	const uint8_t *drv_in;
	size_t drv_in_len;
	uint8_t *out;
	size_t out_cap, out_len;
	uint8_t *drv_out;
	size_t drv_out_cap, drv_out_len;
	uint32_t arg;			/* comp channel event file + 1 */
	/* A descriptor the reply hands over, and where its number goes. */
	int pass_fd;
	int32_t fd_offset;
	uint32_t event_file;
};

static inline void cmd_in(const struct sim_cmd *cmd, void *req, size_t size)
{
	memset(req, 0, size);
	memcpy(req, cmd->in, MIN(size, cmd->in_len));
}

static inline void cmd_drv_in(const struct sim_cmd *cmd, void *req,
			      size_t size)
{
	memset(req, 0, size);
	memcpy(req, cmd->drv_in, MIN(size, cmd->drv_in_len));
}

/* ib_is_udata_cleared(): the driver's request is zero from @from on. */
static inline bool cmd_drv_in_clear(const struct sim_cmd *cmd, size_t from)
{
	for (size_t i = from; i < cmd->drv_in_len; i++)
		if (cmd->drv_in[i])
			return false;
	return true;
}

static inline void cmd_out(struct sim_cmd *cmd, const void *resp, size_t size)
{
	cmd->out_len = MIN(size, cmd->out_cap);
	memcpy(cmd->out, resp, cmd->out_len);
}

static inline void cmd_drv_out(struct sim_cmd *cmd, const void *resp,
			       size_t size)
{
	cmd->drv_out_len = MIN(size, cmd->drv_out_cap);
	memcpy(cmd->drv_out, resp, cmd->drv_out_len);
}

/* Hand a descriptor to the process; its number lands at @offset. */
static inline void cmd_pass_fd(struct sim_cmd *cmd, int fd, size_t offset,
			       uint32_t event_file)
{
	cmd->pass_fd = fd;
	cmd->fd_offset = offset;
	cmd->event_file = event_file;
}

#define offsetofend(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The trace lines of the kernel's side (host/trace.c says the format):
 * each uverbs command as its handler saw it, and each verbs ioctl.  Here
 * because only the kernel knows the commands' names and which ioctl
 * attributes carry values.
 */
#include <stdio.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "uverbs.h"
#include "../host/uverbs-cmds.h"

#define NAME(name) [IB_USER_VERBS_CMD_##name] = #name,
#define CMD_NAME(name, ...) NAME(name)
#define EX_NAME(name, ...) [IB_USER_VERBS_EX_CMD_##name] = "EX_" #name,

static const char *const legacy_names[] = {
	UVERBS_LEGACY_CMDS(CMD_NAME, NAME)
};

static const char *const ex_names[] = {
	UVERBS_EX_CMDS(EX_NAME)
};

#undef NAME
#undef CMD_NAME
#undef EX_NAME

/* A command as its handler saw it; @err is what write() returns. */
void trace_command(const struct sim_cmd *cmd, int err)
{
	const char *const *names = cmd->extended ? ex_names : legacy_names;
	size_t count = cmd->extended ? ARRAY_SIZE(ex_names) :
				       ARRAY_SIZE(legacy_names);
	const char *name = cmd->command < count ? names[cmd->command] : NULL;

	fprintf(sim_trace, "p%d cmd ", (int)cmd->ctx->pid);
	if (name)
		fputs(name, sim_trace);
	else
		fprintf(sim_trace, "%s%u", cmd->extended ? "EX_" : "",
			cmd->command);
	fprintf(sim_trace, " in=%zu out=%zu ret=%d core_in=", cmd->in_len,
		err ? 0 : cmd->out_len, err);
	trace_hex(cmd->in, cmd->in_len);
	fputs(" core_out=", sim_trace);
	trace_hex(cmd->out, err ? 0 : cmd->out_len);
	fputs(" drv_in=", sim_trace);
	trace_hex(cmd->drv_in, cmd->drv_in_len);
	fputs(" drv_out=", sim_trace);
	trace_hex(cmd->drv_out, err ? 0 : cmd->drv_out_len);
	fputc('\n', sim_trace);
}

/* A verbs ioctl: what was read of it (@hdr NULL: nothing), and its errno. */
void trace_ioctl(const struct sim_ctx *ctx,
		 const struct ib_uverbs_ioctl_hdr *hdr,
		 const struct ib_uverbs_attr *attrs, int nattrs, int err)
{
	fprintf(sim_trace, "p%d ioctl ", (int)ctx->pid);
	if (!hdr) {
		fprintf(sim_trace, "unreadable ret=%d\n", err);
		return;
	}
	if (hdr->object_id == UVERBS_OBJECT_DEVICE &&
	    hdr->method_id == UVERBS_METHOD_QUERY_GID_TABLE)
		fputs("DEVICE.QUERY_GID_TABLE", sim_trace);
	else if (hdr->object_id == UVERBS_OBJECT_DEVICE &&
		 hdr->method_id == UVERBS_METHOD_QUERY_GID_ENTRY)
		fputs("DEVICE.QUERY_GID_ENTRY", sim_trace);
	else
		fprintf(sim_trace, "%u.%u", hdr->object_id, hdr->method_id);
	fprintf(sim_trace, " len=%u drv=%u attrs=", hdr->length,
		hdr->driver_id);
	for (int i = 0; i < nattrs; i++) {
		const struct ib_uverbs_attr *a = &attrs[i];

		fprintf(sim_trace, "%s%u:%u", i ? "," : "", a->attr_id, a->len);
		if (a->flags)
			fprintf(sim_trace, "/%x", a->flags);
		if (a->len <= sizeof(a->data) &&
		    ioctl_attr_is_value(hdr->object_id, hdr->method_id,
					a->attr_id)) {
			fputc('=', sim_trace);
			trace_hex(&a->data, a->len);
		}
	}
	fprintf(sim_trace, " ret=%d\n", err);
}

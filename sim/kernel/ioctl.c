/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The uverbs ioctl (RDMA_VERBS_IOCTL): the attribute parsing of the
 * kernel's uverbs_ioctl.c and the two methods of UVERBS_OBJECT_DEVICE
 * that have no write command, QUERY_GID_TABLE and QUERY_GID_ENTRY
 * (uverbs_std_types_device.c).  Every other method answers
 * EPROTONOSUPPORT, which libibverbs takes, method by method, as "use the
 * write command" (ENOTTY would turn the ioctl interface off for the
 * whole context, these two methods with it, and libibverbs would read
 * sysfs instead).
 *
 * The request carries only the address of the caller's header: the
 * header, the attributes and the outputs are read and written in the
 * process's memory, as uverbs copies from and to the user, so a bad
 * pointer is EFAULT, as there.
 */
#include <errno.h>
#include <net/if.h>
#include <stddef.h>
#include <string.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "kernel.h"

#define IOCTL_MAX_LEN	4096	/* ib_uverbs_ioctl(): hdr.length <= PAGE_SIZE */
#define METHOD_ATTRS	4	/* attribute ids of the methods below */
#define U16_MAX		0xffff

enum attr_kind {
	ATTR_CONST_IN,		/* UVERBS_ATTR_CONST_IN: a u64, inline */
	ATTR_FLAGS_IN,		/* UVERBS_ATTR_FLAGS_IN: a u32 or u64, inline */
	ATTR_PTR_OUT,		/* UVERBS_ATTR_PTR_OUT */
};

struct attr_spec {
	uint8_t kind;		/* enum attr_kind; 0 with no max_len: none */
	bool mandatory;		/* UA_MANDATORY */
	uint16_t min_len, max_len;
};

/* One call: the caller's header and attributes by id, and where they are. */
struct ioctl_call {
	struct sim_ctx *ctx;
	struct ib_uverbs_ioctl_hdr hdr;
	bool hdr_read;
	int nattrs_read;
	uint64_t uattrs;	/* the caller's attribute array */
	struct ib_uverbs_attr attrs[(IOCTL_MAX_LEN -
				     sizeof(struct ib_uverbs_ioctl_hdr)) /
				    sizeof(struct ib_uverbs_attr)];
	int index[METHOD_ATTRS];	/* into attrs, or -1 */
};

struct ioctl_method {
	uint16_t method_id;
	struct attr_spec attrs[METHOD_ATTRS];
	int (*handler)(struct ioctl_call *call);
};

static const struct ib_uverbs_attr *attr_of(const struct ioctl_call *call,
					    int id)
{
	return call->index[id] < 0 ? NULL : &call->attrs[call->index[id]];
}

/* ------------------------------------------------------------------ */
/* Inputs and outputs, as uverbs_ioctl.c gives them to a handler       */
/* ------------------------------------------------------------------ */

/* _uverbs_get_const_unsigned(): above the attribute's type is EINVAL. */
static int get_const(const struct ioctl_call *call, int id, uint64_t max,
		     uint64_t *to)
{
	const struct ib_uverbs_attr *a = attr_of(call, id);

	if (!a)
		return -ENOENT;
	*to = a->data;
	return *to > max ? -EINVAL : 0;
}

/* uverbs_get_flags32() with no flag allowed: absent is 0, any bit EINVAL. */
static int get_no_flags(const struct ioctl_call *call, int id)
{
	const struct ib_uverbs_attr *a = attr_of(call, id);
	uint32_t low;

	if (!a)
		return 0;
	memcpy(&low, &a->data, sizeof(low));
	if (a->len == sizeof(uint32_t))
		return low ? -EINVAL : 0;
	return a->len == sizeof(uint64_t) && !a->data ? 0 : -EINVAL;
}

/* uverbs_set_output(): the caller's attribute gets VALID_OUTPUT. */
static int output_written(const struct ioctl_call *call, int id)
{
	int i = call->index[id];
	uint16_t flags = call->attrs[i].flags | UVERBS_ATTR_F_VALID_OUTPUT;
	uint64_t at = call->uattrs + i * sizeof(struct ib_uverbs_attr) +
		      offsetof(struct ib_uverbs_attr, flags);

	return dma_write(call->ctx->pid, at, &flags, sizeof(flags)) ?
	       -EFAULT : 0;
}

/* uverbs_copy_to(): what fits of @size bytes. */
static int copy_to(const struct ioctl_call *call, int id, const void *from,
		   size_t size)
{
	const struct ib_uverbs_attr *a = attr_of(call, id);

	if (!a)
		return -ENOENT;
	if (size > a->len)
		size = a->len;
	if (dma_write(call->ctx->pid, a->data, from, size))
		return -EFAULT;
	return output_written(call, id);
}

/* uverbs_copy_to_struct_or_zero(): the caller's room past @size zeroed. */
static int copy_struct_or_zero(const struct ioctl_call *call, int id,
			       const void *from, size_t size)
{
	static const uint8_t zeros[U16_MAX];
	const struct ib_uverbs_attr *a = attr_of(call, id);

	if (a && a->len > size &&
	    dma_write(call->ctx->pid, a->data + size, zeros, a->len - size))
		return -EFAULT;
	return copy_to(call, id, from, size);
}

/* ------------------------------------------------------------------ */
/* The GID methods                                                     */
/* ------------------------------------------------------------------ */

/*
 * The entry of the kernel's GID cache, as rdma_query_gid_table() and
 * UVERBS_METHOD_QUERY_GID_ENTRY report it; false for an empty entry (the
 * cache skips zero GIDs: an IB port's only entry is GID 0 here).  The
 * interface index is the one in the namespace the daemon and its
 * processes share.
 */
static bool gid_entry(const struct sim_port *port, int index,
		      struct ib_uverbs_gid_entry *e)
{
	static const uint8_t zero[16];

	memset(e, 0, sizeof(*e));
	port_gid(port, index, (uint8_t *)e->gid);
	if (!memcmp(e->gid, zero, sizeof(zero)))
		return false;
	e->gid_index = index;
	e->port_num = port->num;
	e->gid_type = IB_UVERBS_GID_TYPE_IB;
	if (port->link_layer == IBV_LINK_LAYER_ETHERNET) {
		e->gid_type = port->gids[index].type;
		e->netdev_ifindex = if_nametoindex(port->gids[index].ndev);
	}
	return true;
}

static int query_gid_entry(struct ioctl_call *call)
{
	struct ib_uverbs_gid_entry entry;
	uint64_t port, index;
	int err;

	err = get_no_flags(call, UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS);
	if (!err)
		err = get_const(call, UVERBS_ATTR_QUERY_GID_ENTRY_PORT,
				UINT32_MAX, &port);
	if (!err)
		err = get_const(call, UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX,
				UINT32_MAX, &index);
	if (err)
		return err;
	if (!call->ctx->has_ucontext)
		return -EINVAL;		/* ib_uverbs_get_ucontext() */
	if (port < 1 || port > (uint64_t)call->ctx->hca->nports)
		return -EINVAL;		/* rdma_is_port_valid() */
	/* rdma_get_gid_attr(): EINVAL beyond the table, ENODATA if empty */
	if (index >= CX3_GID_TBL_LEN)
		return -EINVAL;
	if (!gid_entry(&call->ctx->hca->port[port - 1], index, &entry))
		return -ENODATA;
	return copy_struct_or_zero(call, UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY,
				   &entry, sizeof(entry));
}

/*
 * rdma_query_gid_table(): the valid entries of every port, in order;
 * EINVAL when they do not fit in @max, however many did.
 */
static int gid_table(const struct sim_hca *hca,
		     struct ib_uverbs_gid_entry *entries, uint64_t max)
{
	int n = 0;

	for (int p = 0; p < hca->nports; p++)
		for (int i = 0; i < CX3_GID_TBL_LEN; i++) {
			struct ib_uverbs_gid_entry e;

			if (!gid_entry(&hca->port[p], i, &e))
				continue;
			if ((uint64_t)n >= max)
				return -EINVAL;
			entries[n++] = e;
		}
	return n;
}

/* copy_gid_entries_to_user(): each entry at its stride, what fits of it. */
static int copy_gid_entries(const struct ioctl_call *call,
			    const struct ib_uverbs_gid_entry *entries, int n,
			    uint64_t entry_size)
{
	static uint8_t out[U16_MAX];	/* n * entry_size <= the attr's len */
	const struct ib_uverbs_attr *a =
		attr_of(call, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES);
	size_t part = entry_size < sizeof(*entries) ? entry_size :
		      sizeof(*entries);

	memset(out, 0, n * entry_size);
	for (int i = 0; i < n; i++)
		memcpy(out + i * entry_size, &entries[i], part);
	if (dma_write(call->ctx->pid, a->data, out, n * entry_size))
		return -EFAULT;
	return output_written(call, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES);
}

static int query_gid_table(struct ioctl_call *call)
{
	static struct ib_uverbs_gid_entry entries[CX3_MAX_PORTS *
						  CX3_GID_TBL_LEN];
	uint64_t entry_size, max, count;
	uint16_t len;
	int n, err;

	n = get_no_flags(call, UVERBS_ATTR_QUERY_GID_TABLE_FLAGS);
	if (!n)
		n = get_const(call, UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE,
			      UINT64_MAX, &entry_size);
	if (n)
		return n;
	if (!entry_size)
		return -EINVAL;
	/* uverbs_attr_ptr_get_array_size(): whole entries, at least one */
	len = attr_of(call, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES)->len;
	if (len % entry_size)
		return -EINVAL;
	max = len / entry_size;
	if (!max)
		return -EINVAL;
	if (!call->ctx->has_ucontext)
		return -EINVAL;		/* ib_uverbs_get_ucontext() */
	n = gid_table(call->ctx->hca, entries, max);
	if (n < 0)
		return -EINVAL;
	err = copy_gid_entries(call, entries, n, entry_size);
	if (err)
		return err;
	count = n;
	return copy_to(call, UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES,
		       &count, sizeof(count));
}

/* The methods' attributes, as DECLARE_UVERBS_NAMED_METHOD gives them. */
static const struct ioctl_method device_methods[] = {
	{
		.method_id = UVERBS_METHOD_QUERY_GID_TABLE,
		.attrs = {
			[UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE] =
				{ ATTR_CONST_IN, true, 8, 8 },
			[UVERBS_ATTR_QUERY_GID_TABLE_FLAGS] =
				{ ATTR_FLAGS_IN, false, 4, 8 },
			[UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES] =
				{ ATTR_PTR_OUT, true, 0, U16_MAX },
			[UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES] =
				{ ATTR_PTR_OUT, true, 8, 8 },
		},
		.handler = query_gid_table,
	},
	{
		.method_id = UVERBS_METHOD_QUERY_GID_ENTRY,
		.attrs = {
			[UVERBS_ATTR_QUERY_GID_ENTRY_PORT] =
				{ ATTR_CONST_IN, true, 8, 8 },
			[UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX] =
				{ ATTR_CONST_IN, true, 8, 8 },
			[UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS] =
				{ ATTR_FLAGS_IN, true, 4, 8 },
			/* UVERBS_ATTR_STRUCT: longer is zeroed, not refused */
			[UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY] = {
				ATTR_PTR_OUT, true,
				sizeof(struct ib_uverbs_gid_entry), U16_MAX },
		},
		.handler = query_gid_entry,
	},
};

/* ------------------------------------------------------------------ */
/* The framework: header, method, attributes                           */
/* ------------------------------------------------------------------ */

static const struct ioctl_method *find_method(uint16_t object, uint16_t id)
{
	if (object != UVERBS_OBJECT_DEVICE)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(device_methods); i++)
		if (device_methods[i].method_id == id)
			return &device_methods[i];
	return NULL;
}

/*
 * uverbs_set_attr() and uverbs_process_attr(): an unknown attribute is
 * skipped unless marked mandatory; a second one of an id, a size out of
 * the spec's range or a non-zero reserved field is EINVAL.
 */
static int take_attr(struct ioctl_call *call, const struct ioctl_method *m,
		     int i)
{
	const struct ib_uverbs_attr *a = &call->attrs[i];
	const struct attr_spec *spec;

	if (a->attr_id >= METHOD_ATTRS || !m->attrs[a->attr_id].max_len)
		return a->flags & UVERBS_ATTR_F_MANDATORY ?
		       -EPROTONOSUPPORT : 0;
	spec = &m->attrs[a->attr_id];
	if (call->index[a->attr_id] >= 0)
		return -EINVAL;
	if (a->len < spec->min_len || a->len > spec->max_len ||
	    a->attr_data.reserved)
		return -EINVAL;
	call->index[a->attr_id] = i;
	return 0;
}

static int run_method(struct ioctl_call *call, const struct ioctl_method *m,
		      int num_attrs)
{
	int err;

	for (int id = 0; id < METHOD_ATTRS; id++)
		call->index[id] = -1;
	for (int i = 0; i < num_attrs; i++) {
		err = take_attr(call, m, i);
		if (err)
			return err;
	}
	/* ib_uverbs_run_method(): every mandatory attribute present */
	for (int id = 0; id < METHOD_ATTRS; id++)
		if (m->attrs[id].mandatory && call->index[id] < 0)
			return -EINVAL;
	return m->handler(call);
}

/*
 * ib_uverbs_ioctl() and ib_uverbs_cmd_verbs(), for the header at @addr:
 * what was read of the header and attributes stays in @call for the trace
 * (@hdr_read, @nattrs_read).
 */
static int verbs_ioctl(struct ioctl_call *call, uint64_t addr)
{
	struct ib_uverbs_ioctl_hdr *hdr = &call->hdr;
	const struct ioctl_method *m;

	if (dma_read(call->ctx->pid, addr, hdr, sizeof(*hdr)))
		return -EFAULT;
	call->hdr_read = true;
	if (hdr->length > IOCTL_MAX_LEN ||
	    hdr->length != sizeof(*hdr) + hdr->num_attrs * sizeof(hdr->attrs[0]))
		return -EINVAL;
	if (hdr->reserved1 || hdr->reserved2)
		return -EPROTONOSUPPORT;
	/* The device's uapi is mlx4_ib's: ib_device_ops.driver_id */
	if (hdr->driver_id != RDMA_DRIVER_MLX4)
		return -EINVAL;
	m = find_method(hdr->object_id, hdr->method_id);
	if (!m)
		return -EPROTONOSUPPORT;
	call->uattrs = addr + sizeof(*hdr);
	if (dma_read(call->ctx->pid, call->uattrs, call->attrs,
		     hdr->num_attrs * sizeof(hdr->attrs[0])))
		return -EFAULT;
	call->nattrs_read = hdr->num_attrs;
	return run_method(call, m, hdr->num_attrs);
}

/* Whether attribute @id of a method is a value in the attribute itself. */
bool ioctl_attr_is_value(uint16_t object, uint16_t method, uint16_t id)
{
	const struct ioctl_method *m = find_method(object, method);

	return m && id < METHOD_ATTRS && m->attrs[id].max_len &&
	       m->attrs[id].kind != ATTR_PTR_OUT;
}

/* The request's payload: the ioctl's argument, the header's address. */
int ioctl_request(struct sim_ctx *ctx, const void *payload, size_t len)
{
	static struct ioctl_call call;
	uint64_t addr;
	int err;

	if (len != sizeof(addr))
		return -EINVAL;
	memcpy(&addr, payload, sizeof(addr));
	sim.progress++;
	memset(&call.hdr, 0, sizeof(call.hdr));
	call.ctx = ctx;
	call.hdr_read = false;
	call.nattrs_read = 0;
	err = verbs_ioctl(&call, addr);
	TRACE(trace_ioctl(ctx, call.hdr_read ? &call.hdr : NULL, call.attrs,
			  call.nattrs_read, err));
	return err;
}

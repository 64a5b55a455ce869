/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ib_umad and ib_mad, as the kernel's drivers/infiniband/core/user_mad.c
 * and mad.c have them: the files of /dev/infiniband/umadN and issmN
 * (umad.c), the agents registered on them, and the MAD layer that sends
 * what an agent writes, answers it from the adapter's firmware or the
 * switch, and gives what arrives to the agent it is for (ib-mad.c).
 */
#ifndef MLX4SIM_UMAD_H
#define MLX4SIM_UMAD_H

#include <rdma/ib_user_mad.h>

#include "kernel.h"
#include "../fabric/mad.h"

#define UMAD_MAX_AGENTS		32	/* IB_UMAD_MAX_AGENTS */
#define UMAD_ISSM_MINOR0	64	/* IB_UMAD_NUM_FIXED_MINOR */
#define UMAD_MAX_CLASS		0x50	/* MAX_MGMT_CLASS */
#define UMAD_MAX_VERSION	8	/* MAX_MGMT_VERSION */
#define UMAD_RMPP_VERSION	1	/* IB_MGMT_RMPP_VERSION */
#define UMAD_MAX_SEND		(32 * 1024)	/* the most one write sends */
#define UMAD_MAX_WAITING	4096	/* requests a file keeps waiting */

struct umad_agent {
	bool used;
	uint8_t qpn;			/* 0: SMI, 1: GSI */
	uint8_t mgmt_class;		/* 0: none, answers only */
	uint8_t class_version;
	uint8_t rmpp_version;
	uint32_t oui;
	uint64_t methods[2];		/* the methods it serves */
	uint32_t flags;			/* IB_USER_MAD_USER_RMPP */
	uint32_t hi_tid;		/* the top of its requests' TIDs */
};

/* A request waiting for its response, or to be sent again. */
struct umad_send {
	struct list_node link;		/* in the file's sends */
	uint32_t agent;
	struct ib_user_mad_hdr hdr;	/* as written */
	uint64_t deadline;		/* monotonic ns */
	uint32_t retries_left;
	uint32_t len;
	uint8_t mad[];			/* as sent, its TID the agent's */
};

struct umad_file {
	struct list_node link;		/* in the files list */
	struct sim_ctx *ctx;
	struct sim_port *port;
	uint32_t minor;
	bool issm;
	int peer;			/* the daemon's end of the program's */
	bool use_pkey_index;
	bool already_used;		/* an agent was registered */
	struct umad_agent agent[UMAD_MAX_AGENTS];
	struct list_node sends;
	uint32_t nsends;
	uint64_t dropped;		/* MADs its full socket lost */
};

/* Where a MAD comes from, as the receiving agent's header tells it. */
struct mad_source {
	struct sim_port *port;		/* NULL: the switch */
	uint16_t slid;
	uint32_t qpn;			/* 0 or 1 */
	uint8_t sl;
};

/* umad.c */
extern struct list_node umad_files;
size_t umad_hdr_size(const struct umad_file *f);
void umad_queue(struct umad_file *f, uint32_t agent,
		const struct ib_user_mad_hdr *hdr, const uint8_t *mad,
		size_t len);
struct sim_port *umad_port_of_minor(int host, uint32_t minor);
bool mad_class_is_rmpp(uint8_t mgmt_class);

/* ib-mad.c */
int mad_send(struct umad_file *f, uint32_t agent,
	     const struct ib_user_mad_hdr *hdr, uint8_t *mad, size_t len);
void mad_agent_gone(struct umad_file *f, uint32_t agent);
bool mad_method_in_use(const struct umad_file *f,
		       const struct umad_agent *a);

#endif

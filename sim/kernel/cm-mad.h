/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM MADs (IBTA volume 1, chapter 12: tables 106 to 120): a 24-byte
 * MAD header, then each message's fields at the byte offsets below,
 * counted from the end of the header, big-endian, with the sub-byte
 * fields as the comments say (bits counted from the byte's top).  Shared
 * by cm.c, which sends, and cm-recv.c, which receives.
 */
#ifndef MLX4SIM_CM_MAD_H
#define MLX4SIM_CM_MAD_H

#include "cma.h"
#include "../fabric/mad.h"

#define CM_CLASS_VERSION	2

#define CM_REQ_ATTR_ID		0x0010
#define CM_MRA_ATTR_ID		0x0011
#define CM_REJ_ATTR_ID		0x0012
#define CM_REP_ATTR_ID		0x0013
#define CM_RTU_ATTR_ID		0x0014
#define CM_DREQ_ATTR_ID		0x0015
#define CM_DREP_ATTR_ID		0x0016
#define CM_SIDR_REQ_ATTR_ID	0x0017
#define CM_SIDR_REP_ATTR_ID	0x0018

/* REQ (table 106) */
#define REQ_LOCAL_COMM_ID	0
#define REQ_SERVICE_ID		8
#define REQ_LOCAL_CA_GUID	16
#define REQ_LOCAL_QKEY		28
#define REQ_LOCAL_QPN		32	/* 24 bits */
#define REQ_RESPONDER_RESOURCES	35
#define REQ_INITIATOR_DEPTH	39
#define REQ_REMOTE_CM_TIMEOUT	43	/* 5 | transport 2 | flow ctrl 1 */
#define REQ_STARTING_PSN	44	/* 24 bits */
#define REQ_LOCAL_CM_TIMEOUT	47	/* 5 | (3) | retry count 3 */
#define REQ_PKEY		48
#define REQ_PATH_MTU		50	/* 4 | RDC 1 | RNR retry count 3 */
#define REQ_MAX_CM_RETRIES	51	/* 4 | SRQ 1 | ext. transport 3 */
#define REQ_PRIMARY_LOCAL_LID	52
#define REQ_PRIMARY_REMOTE_LID	54
#define REQ_PRIMARY_LOCAL_GID	56
#define REQ_PRIMARY_REMOTE_GID	72
#define REQ_PRIMARY_FLOW_LABEL	88	/* 20 | (6) | packet rate 6 */
#define REQ_PRIMARY_TRAFFIC_CLASS 92
#define REQ_PRIMARY_HOP_LIMIT	93
#define REQ_PRIMARY_SL		94	/* 4 | subnet local 1 */
#define REQ_PRIMARY_ACK_TIMEOUT	95	/* 5 */
#define REQ_PRIVATE_DATA	140

/* REJ (table 108) */
#define REJ_LOCAL_COMM_ID	0
#define REJ_REMOTE_COMM_ID	4
#define REJ_MESSAGE_REJECTED	8	/* 2 */
#define REJ_INFO_LENGTH		9	/* 7 */
#define REJ_REASON		10
#define REJ_ARI			12
#define REJ_PRIVATE_DATA	84
#define CM_MSG_REQ		0
#define CM_MSG_REP		1
#define CM_MSG_OTHER		2

/* MRA (table 107) */
#define MRA_LOCAL_COMM_ID	0
#define MRA_REMOTE_COMM_ID	4
#define MRA_MESSAGE_MRAED	8	/* 2 */
#define MRA_SERVICE_TIMEOUT	9	/* 5 */
/* cma's MRA (CMA_CM_MRA_SETTING): about 67 s, sent only when asked */
#define CM_MRA_SERVICE_TIMEOUT	24

/* REP (table 110) */
#define REP_LOCAL_COMM_ID	0
#define REP_REMOTE_COMM_ID	4
#define REP_LOCAL_QKEY		8
#define REP_LOCAL_QPN		12	/* 24 bits */
#define REP_STARTING_PSN	20	/* 24 bits */
#define REP_RESPONDER_RESOURCES	24
#define REP_INITIATOR_DEPTH	25
#define REP_TARGET_ACK_DELAY	26	/* 5 | failover 2 | flow ctrl 1 */
#define REP_RNR_RETRY_COUNT	27	/* 3 | SRQ 1 */
#define REP_LOCAL_CA_GUID	28
#define REP_PRIVATE_DATA	36

/* RTU, DREP (tables 111, 113): the comm ids, then private data at 8 */
#define RTU_PRIVATE_DATA	8
#define DREP_PRIVATE_DATA	8

/* DREQ (table 112) */
#define DREQ_LOCAL_COMM_ID	0
#define DREQ_REMOTE_COMM_ID	4
#define DREQ_REMOTE_QPN		8	/* 24 bits */
#define DREQ_PRIVATE_DATA	12

/* SIDR_REQ, SIDR_REP (tables 119, 120) */
#define SIDR_REQ_REQUEST_ID	0
#define SIDR_REQ_PKEY		4
#define SIDR_REQ_SERVICE_ID	8
#define SIDR_REQ_PRIVATE_DATA	16
#define SIDR_REP_REQUEST_ID	0
#define SIDR_REP_STATUS		4
#define SIDR_REP_QPN		8	/* 24 bits */
#define SIDR_REP_SERVICE_ID	12
#define SIDR_REP_QKEY		20
#define SIDR_REP_PRIVATE_DATA	96

/* The 24-bit fields (QPNs, PSNs) the CM MADs carry, big-endian. */
static inline void cm_put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static inline uint32_t cm_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | p[1] << 8 | p[2];
}

/* A MAD on its way: it lands on the next pass of the loop. */
struct cm_wire {
	struct sim_timer timer;
	struct sim_port *from, *to;
	uint8_t gid_type;		/* RoCE: the version it travels as */
	uint8_t sgid[16], dgid[16];	/* RoCE: its GRH's */
	uint8_t mad[MAD_SIZE];
};

/* cm.c, for cm-recv.c */
#define CMA_CM_RESPONSE_TIMEOUT	20	/* cma.c: both response timeouts */
#define CMA_MAX_CM_RETRIES	15
#define CM_CA_ACK_DELAY		CX3_LOCAL_ACK_DELAY

uint64_t cm_iba_time_ms(uint8_t iba_time);
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);
struct cm_id *cm_new(struct cma_id *owner);
void cm_free(struct cm_id *cm);
struct cm_id *cm_find(uint32_t local_id);
struct cm_id *cm_find_remote(uint32_t remote_id, uint64_t remote_ca_guid);
void cm_send(struct cm_id *cm, const uint8_t *mad);
void cm_wire_send(struct sim_port *from, struct sim_port *to,
		  uint8_t gid_type, const uint8_t *sgid, const uint8_t *dgid,
		  const uint8_t *mad);
void cm_wire_reply(const struct cm_wire *w, const uint8_t *mad);
void cm_enter_timewait(struct cm_id *cm);
void cm_mad_header(uint8_t *mad, uint16_t attr_id, uint64_t tid);
void cm_rej_mad(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote,
		uint8_t msg, uint16_t reason);
void cm_mra_mad(uint8_t *mad, const struct cm_id *cm);

/* cm-recv.c */
void cm_recv(struct cm_wire *w);
void cm_trace_mad(const struct sim_port *from, const struct sim_port *to,
		  const uint8_t *mad);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Management datagrams as they cross the wire (IB specification, chapters
 * 13-16): the 256-byte MAD, its common header, the subnet management
 * packet (LID-routed and directed-route) and the offsets of the
 * attributes the simulated SMAs and PMAs answer.  Every field is
 * big-endian; the helpers below read and write them in place.
 */
#ifndef MLX4SIM_MAD_H
#define MLX4SIM_MAD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAD_SIZE		256

/* The common header (13.4.2) */
#define MAD_BASE_VERSION	0
#define MAD_CLASS		1
#define MAD_CLASS_VERSION	2
#define MAD_METHOD		3
#define MAD_STATUS		4
#define MAD_HOP_PTR		6	/* directed route only */
#define MAD_HOP_CNT		7
#define MAD_TID			8
#define MAD_ATTR_ID		16
#define MAD_ATTR_MOD		20
#define MAD_HDR_LEN		24
#define MAD_RMPP_HDR_LEN	36	/* with the RMPP header */

/* The RMPP header, after the common one */
#define RMPP_FLAGS		26
#define RMPP_FLAG_ACTIVE	0x01

/* Subnet management packets (14.2.1) */
#define SMP_MKEY		24
#define SMP_DR_SLID		32
#define SMP_DR_DLID		34
#define SMP_DATA		64
#define SMP_DATA_LEN		64
#define SMP_INITIAL_PATH	128
#define SMP_RETURN_PATH		192
#define SMP_MAX_HOPS		63
#define SMP_DIRECTION		0x8000	/* in the status: a DR response */

/* Performance management: the data after 40 reserved bytes */
#define PMA_DATA		64

/* Management classes */
#define MAD_CLASS_SUBN_LID	0x01
#define MAD_CLASS_SUBN_ADM	0x03
#define MAD_CLASS_PERF		0x04
#define MAD_CLASS_BM		0x05
#define MAD_CLASS_DEVICE_MGMT	0x06
#define MAD_CLASS_CM		0x07
#define MAD_CLASS_DEVICE_ADM	0x10
#define MAD_CLASS_BIS		0x12
#define MAD_CLASS_VENDOR2_FIRST	0x30
#define MAD_CLASS_VENDOR2_LAST	0x4f
#define MAD_CLASS_SUBN_DR	0x81

/* Methods */
#define MAD_METHOD_GET		0x01
#define MAD_METHOD_SET		0x02
#define MAD_METHOD_SEND		0x03
#define MAD_METHOD_TRAP		0x05
#define MAD_METHOD_TRAP_REPRESS	0x07
#define MAD_METHOD_RESP		0x80
#define MAD_METHOD_GET_RESP	0x81

/* Status */
#define MAD_STATUS_BAD_VERSION		0x0004
#define MAD_STATUS_METHOD_UNSUPPORTED	0x0008
#define MAD_STATUS_METHOD_ATTR_UNSUPPORTED 0x000c
#define MAD_STATUS_INVALID_ATTR		0x001c

/* Subnet management attributes */
#define SMP_ATTR_NOTICE		0x0002
#define SMP_ATTR_NODE_DESC	0x0010
#define SMP_ATTR_NODE_INFO	0x0011
#define SMP_ATTR_SWITCH_INFO	0x0012
#define SMP_ATTR_GUID_INFO	0x0014
#define SMP_ATTR_PORT_INFO	0x0015
#define SMP_ATTR_PKEY_TABLE	0x0016
#define SMP_ATTR_SL_TO_VL	0x0017
#define SMP_ATTR_VL_ARB		0x0018
#define SMP_ATTR_LFT		0x0019
#define SMP_ATTR_MFT		0x001b
#define SMP_ATTR_SM_INFO	0x0020
#define SMP_ATTR_MLNX_EXT_PORT_INFO 0xff90	/* Mellanox's: FDR10 (none here) */

/* Performance management attributes */
#define PMA_ATTR_CLASS_PORT_INFO	0x0001
#define PMA_ATTR_PORT_COUNTERS		0x0012
#define PMA_ATTR_PORT_COUNTERS_EXT	0x001d

/* NodeInfo (14.2.5.3) */
#define NI_BASE_VERSION		0
#define NI_CLASS_VERSION	1
#define NI_NODE_TYPE		2
#define NI_NUM_PORTS		3
#define NI_SYS_IMAGE_GUID	4
#define NI_NODE_GUID		12
#define NI_PORT_GUID		20
#define NI_PARTITION_CAP	28
#define NI_DEVICE_ID		30
#define NI_REVISION		32
#define NI_LOCAL_PORT		36
#define NI_VENDOR_ID		37
#define NODE_TYPE_CA		1
#define NODE_TYPE_SWITCH	2

/* PortInfo (14.2.5.6) */
#define PI_MKEY			0
#define PI_GID_PREFIX		8
#define PI_LID			16
#define PI_SM_LID		18
#define PI_CAP_MASK		20
#define PI_LOCAL_PORT		28
#define PI_WIDTH_ENABLED	29
#define PI_WIDTH_SUPPORTED	30
#define PI_WIDTH_ACTIVE		31
#define PI_SPEED_STATE		32	/* speed supported, port state */
#define PI_PHYS_STATE		33	/* physical state, link down default */
#define PI_LMC			34
#define PI_SPEED_ACTIVE_ENABLED	35
#define PI_MTU_SM_SL		36	/* neighbour MTU, master SM SL */
#define PI_VL_CAP		37
#define PI_VL_HIGH_LIMIT	38
#define PI_VL_ARB_HIGH_CAP	39
#define PI_VL_ARB_LOW_CAP	40
#define PI_MTU_CAP		41
#define PI_VL_STALL_HOQ		42
#define PI_OPER_VLS		43
#define PI_MKEY_VIOLATIONS	44
#define PI_PKEY_VIOLATIONS	46
#define PI_QKEY_VIOLATIONS	48
#define PI_GUID_CAP		50
#define PI_SUBNET_TIMEOUT	51	/* client reregister in the top bit */
#define PI_RESP_TIME		52
#define PI_SPEED_EXT		62	/* extended speed active, supported */
#define PI_SPEED_EXT_ENABLED	63
#define PI_CLIENT_REREG		0x80

/* Port states and physical states (PortInfo, sysfs, query_port) */
#define PORT_STATE_NOP		0
#define PORT_STATE_DOWN		1
#define PORT_STATE_INIT		2
#define PORT_STATE_ARMED	3
#define PORT_STATE_ACTIVE	4
#define PHYS_STATE_POLLING	2
#define PHYS_STATE_LINK_UP	5

/* SwitchInfo (14.2.5.4) */
#define SWI_LFT_CAP		0
#define SWI_MFT_CAP		4
#define SWI_LFT_TOP		6
#define SWI_LIFE_STATE		11
#define SWI_PARTITION_CAP	14
#define SWI_PORT_STATE_CHANGE	0x04	/* in the LIFE_STATE byte */

/* PortCounters and PortCountersExtended (16.1.3) */
#define PC_PORT_SELECT		1
#define PC_COUNTER_SELECT	2
#define PC_XMIT_DATA		24
#define PC_RCV_DATA		28
#define PC_XMIT_PKTS		32
#define PC_RCV_PKTS		36
#define PC_SELECT_XMIT_DATA	(1u << 12)
#define PC_SELECT_RCV_DATA	(1u << 13)
#define PC_SELECT_XMIT_PKTS	(1u << 14)
#define PC_SELECT_RCV_PKTS	(1u << 15)
#define PCE_XMIT_DATA		8
#define PCE_RCV_DATA		16
#define PCE_XMIT_PKTS		24
#define PCE_RCV_PKTS		32
#define PCE_UNICAST_XMIT	40
#define PCE_UNICAST_RCV		48

/* ClassPortInfo (13.4.8.1) */
#define CPI_BASE_VERSION	0
#define CPI_CLASS_VERSION	1
#define CPI_CAP_MASK		2
#define CPI_RESP_TIME		4	/* low 5 bits of a 32-bit word */
#define PMA_CAP_EXT_WIDTH	0x0200	/* PortCountersExtended in full */
#define PMA_CAP_XMIT_WAIT	0x1000

static inline uint16_t mad_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t mad_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t mad_get64(const uint8_t *p)
{
	return (uint64_t)mad_get32(p) << 32 | mad_get32(p + 4);
}

static inline void mad_put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void mad_put32(uint8_t *p, uint32_t v)
{
	mad_put16(p, v >> 16);
	mad_put16(p + 2, v);
}

static inline void mad_put64(uint8_t *p, uint64_t v)
{
	mad_put32(p, v >> 32);
	mad_put32(p + 4, v);
}

/*
 * A response, as ib_response_mad() tells one: the method's top bit, a
 * TrapRepress, or a BM MAD whose attribute modifier's low bit says so.
 */
static inline bool mad_is_response(const uint8_t *mad)
{
	uint8_t method = mad[MAD_METHOD];

	return (method & MAD_METHOD_RESP) || method == MAD_METHOD_TRAP_REPRESS ||
	       (mad[MAD_CLASS] == MAD_CLASS_BM &&
		(mad_get32(mad + MAD_ATTR_MOD) & 1));
}

static inline bool mad_is_smp(const uint8_t *mad)
{
	return mad[MAD_CLASS] == MAD_CLASS_SUBN_LID ||
	       mad[MAD_CLASS] == MAD_CLASS_SUBN_DR;
}

#endif

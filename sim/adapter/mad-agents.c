/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The management datagrams a ConnectX-3's firmware answers itself (the
 * MAD_IFC command mlx4_ib's process_mad hands them to): the SMA's
 * NodeInfo, NodeDescription, PortInfo, GUIDInfo, PKeyTable, SLtoVL and
 * VLArbitration tables, and the PMA's ClassPortInfo, PortCounters and
 * PortCountersExtended, counting what the simulator really carried.
 *
 * Which MADs reach the firmware is mlx4_ib's rule (ib_process_mad):
 * subnet management Get, Set and TrapRepress except SMInfo, and
 * performance management Get and Set.  Everything else goes on to the
 * kernel's agents.
 */
#include <errno.h>
#include <string.h>

#include "adapter.h"
#include "../fabric/mad.h"

#define CAP_MASK_IS_SM		0x00000002
#define CX3_REVISION		0x00000001
#define PMA_CLASS_VERSION	1

uint32_t port_cap_mask(const struct sim_port *port)
{
	if (port->link_layer == IBV_LINK_LAYER_ETHERNET)
		return CX3_ETH_PORT_CAP_FLAGS;
	return CX3_PORT_CAP_FLAGS | (port->is_sm ? CAP_MASK_IS_SM : 0);
}

/* ------------------------------------------------------------------ */
/* The SMA                                                             */
/* ------------------------------------------------------------------ */

static void node_info(const struct sim_port *port, uint8_t *ni)
{
	const struct sim_hca *hca = port->hca;

	ni[NI_BASE_VERSION] = 1;
	ni[NI_CLASS_VERSION] = 1;
	ni[NI_NODE_TYPE] = NODE_TYPE_CA;
	ni[NI_NUM_PORTS] = hca->nports;
	mad_put64(ni + NI_SYS_IMAGE_GUID, hca->sys_image_guid);
	mad_put64(ni + NI_NODE_GUID, hca->node_guid);
	mad_put64(ni + NI_PORT_GUID, port->guid);
	mad_put16(ni + NI_PARTITION_CAP, CX3_PKEY_TBL_LEN);
	mad_put16(ni + NI_DEVICE_ID, CX3_PCI_DEVICE);
	mad_put32(ni + NI_REVISION, CX3_REVISION);
	ni[NI_LOCAL_PORT] = port->num;
	ni[NI_VENDOR_ID] = CX3_VENDOR_ID >> 16;
	mad_put16(ni + NI_VENDOR_ID + 1, CX3_VENDOR_ID & 0xffff);
}

/* @port's PortInfo, asked by an SMP that came in by @in. */
static void port_info(const struct sim_port *port, const struct sim_port *in,
		      uint8_t *pi)
{
	mad_put64(pi + PI_GID_PREFIX, SIM_SUBNET_PREFIX);
	mad_put16(pi + PI_LID, port->lid);
	mad_put16(pi + PI_SM_LID, port->sm_lid);
	mad_put32(pi + PI_CAP_MASK, port_cap_mask(port));
	port_info_link(pi, in->num, port->state, !port->down);
	pi[PI_MTU_SM_SL] |= port->sm_sl & 0x0f;
	pi[PI_GUID_CAP] = CX3_GID_TBL_LEN;
	mad_put16(pi + PI_QKEY_VIOLATIONS, port->qkey_violations);
}

/* The tables a port holds: one GUID, the default partition, 8 VLs. */
static int port_table(const struct sim_port *port, uint16_t attr,
		      uint32_t mod, uint8_t *data)
{
	switch (attr) {
	case SMP_ATTR_GUID_INFO:	/* 8 GUIDs a block */
		if (mod >= CX3_GID_TBL_LEN / 8)
			return MAD_STATUS_INVALID_ATTR;
		if (mod == 0)
			mad_put64(data, port->guid);
		return 0;
	case SMP_ATTR_PKEY_TABLE:
		return sma_pkey_block(mod & 0xffff, CX3_PKEY_TBL_LEN / 32, data);
	default:
		return sma_vl_tables(attr, mod, data);
	}
}

static int sma_get(const struct sim_port *port, uint16_t attr, uint32_t mod,
		   uint8_t *data)
{
	switch (attr) {
	case SMP_ATTR_NODE_INFO:
		node_info(port, data);
		return 0;
	case SMP_ATTR_NODE_DESC:
		/* mlx4_ib puts the kernel's own description in the answer. */
		snprintf((char *)data, SMP_DATA_LEN, "%s",
			 port->hca->node_desc);
		return 0;
	case SMP_ATTR_PORT_INFO:
		/* 0 is the port the SMP came in by. */
		if (mod && !hca_port(port->hca, mod))
			return MAD_STATUS_INVALID_ATTR;
		port_info(mod ? hca_port(port->hca, mod) : port, port, data);
		return 0;
	default:
		return port_table(port, attr, mod, data);
	}
}

/*
 * PortInfo Set (14.2.5.6): the LID, the SM's LID and SL, and the logical
 * state an SM moves the port to; a move the state machine does not
 * allow, or a multicast LID, refuses the whole Set.
 */
static int port_info_set(struct sim_port *port, const uint8_t *pi)
{
	uint8_t state = port->state;
	uint16_t lid = mad_get16(pi + PI_LID);

	if (lid >= SIM_LID_UNICAST_END ||
	    !port_state_set(&state, pi[PI_SPEED_STATE] & 0x0f))
		return MAD_STATUS_INVALID_ATTR;
	subnet_set_lid(port, lid);
	port->sm_lid = mad_get16(pi + PI_SM_LID);
	port->sm_sl = pi[PI_MTU_SM_SL] & 0x0f;
	port->state = state;
	return 0;
}

/*
 * A Set: PortInfo takes effect; the tables an SM programs (P_Keys,
 * GUIDs, VLs) are taken as set, and the answer carries them; NodeInfo
 * and NodeDescription are not the SM's to set.
 */
static int sma_set(struct sim_port *port, uint16_t attr, uint32_t mod,
		   const uint8_t *in, uint8_t *data)
{
	struct sim_port *target = mod ? hca_port(port->hca, mod) : port;
	int status;

	switch (attr) {
	case SMP_ATTR_PORT_INFO:
		if (!target)
			return MAD_STATUS_INVALID_ATTR;
		status = port_info_set(target, in);
		return status ? status : sma_get(port, attr, mod, data);
	default:
		return sma_set_as_is(attr, sma_get(port, attr, mod, data), in,
				     data);
	}
}

/* ------------------------------------------------------------------ */
/* The PMA                                                             */
/* ------------------------------------------------------------------ */

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* A Set clears the counters its CounterSelect names, then reads them. */
static void counters_clear(struct sim_port *port, uint16_t select)
{
	struct sim_port_counters *c = &port->counters;

	if (select & PC_SELECT_XMIT_DATA)
		c->xmit_data = 0;
	if (select & PC_SELECT_RCV_DATA)
		c->rcv_data = 0;
	if (select & PC_SELECT_XMIT_PKTS)
		c->xmit_pkts = 0;
	if (select & PC_SELECT_RCV_PKTS)
		c->rcv_pkts = 0;
}

static void port_counters(const struct sim_port *port, uint8_t *d)
{
	const struct sim_port_counters *c = &port->counters;

	mad_put32(d + PC_XMIT_DATA, sat32(c->xmit_data));
	mad_put32(d + PC_RCV_DATA, sat32(c->rcv_data));
	mad_put32(d + PC_XMIT_PKTS, sat32(c->xmit_pkts));
	mad_put32(d + PC_RCV_PKTS, sat32(c->rcv_pkts));
}

static void port_counters_ext(const struct sim_port *port, uint8_t *d)
{
	const struct sim_port_counters *c = &port->counters;

	mad_put64(d + PCE_XMIT_DATA, c->xmit_data);
	mad_put64(d + PCE_RCV_DATA, c->rcv_data);
	mad_put64(d + PCE_XMIT_PKTS, c->xmit_pkts);
	mad_put64(d + PCE_RCV_PKTS, c->rcv_pkts);
	/* Every packet here is unicast but multicast's copies; close enough. */
	mad_put64(d + PCE_UNICAST_XMIT, c->xmit_pkts);
	mad_put64(d + PCE_UNICAST_RCV, c->rcv_pkts);
}

static int pma(struct sim_port *port, uint8_t method, uint16_t attr,
	       const uint8_t *in, uint8_t *d)
{
	struct sim_port *sel;

	if (attr == PMA_ATTR_CLASS_PORT_INFO) {
		if (method != MAD_METHOD_GET)
			return MAD_STATUS_METHOD_ATTR_UNSUPPORTED;
		d[CPI_BASE_VERSION] = 1;
		d[CPI_CLASS_VERSION] = PMA_CLASS_VERSION;
		mad_put16(d + CPI_CAP_MASK, PMA_CAP_EXT_WIDTH | PMA_CAP_XMIT_WAIT);
		mad_put32(d + CPI_RESP_TIME, 18);
		return 0;
	}
	if (attr != PMA_ATTR_PORT_COUNTERS && attr != PMA_ATTR_PORT_COUNTERS_EXT)
		return MAD_STATUS_METHOD_ATTR_UNSUPPORTED;
	/* PortSelect names one of the adapter's ports. */
	sel = hca_port(port->hca, in[PC_PORT_SELECT]);
	if (!sel)
		return MAD_STATUS_INVALID_ATTR;
	d[PC_PORT_SELECT] = in[PC_PORT_SELECT];
	mad_put16(d + PC_COUNTER_SELECT, mad_get16(in + PC_COUNTER_SELECT));
	if (method == MAD_METHOD_SET)
		counters_clear(sel, attr == PMA_ATTR_PORT_COUNTERS ?
			       mad_get16(in + PC_COUNTER_SELECT) :
			       PC_SELECT_XMIT_DATA | PC_SELECT_RCV_DATA |
			       PC_SELECT_XMIT_PKTS | PC_SELECT_RCV_PKTS);
	if (attr == PMA_ATTR_PORT_COUNTERS)
		port_counters(sel, d);
	else
		port_counters_ext(sel, d);
	return 0;
}

/* ------------------------------------------------------------------ */
/* MAD_IFC                                                             */
/* ------------------------------------------------------------------ */

/* Whether the firmware takes @in at all (mlx4_ib's ib_process_mad). */
static bool firmware_takes(const uint8_t *in)
{
	uint8_t method = in[MAD_METHOD];

	if (mad_is_smp(in))
		return (method == MAD_METHOD_GET || method == MAD_METHOD_SET ||
			method == MAD_METHOD_TRAP_REPRESS) &&
		       mad_get16(in + MAD_ATTR_ID) != SMP_ATTR_SM_INFO;
	if (in[MAD_CLASS] == MAD_CLASS_PERF)
		return method == MAD_METHOD_GET || method == MAD_METHOD_SET;
	return false;
}

/*
 * A MAD that arrived on @port, to the firmware.  Returns MAD_IFC_REPLY
 * with the answer in @out, MAD_IFC_CONSUMED when it needs none (a
 * TrapRepress), MAD_IFC_PASS when it is not the firmware's to answer.
 */
enum mad_ifc adapter_mad_ifc(struct sim_port *port, const uint8_t *in,
			     uint8_t *out)
{
	uint16_t attr = mad_get16(in + MAD_ATTR_ID);
	uint32_t mod = mad_get32(in + MAD_ATTR_MOD);
	uint16_t status;

	if (port->link_layer != IBV_LINK_LAYER_INFINIBAND || !firmware_takes(in))
		return MAD_IFC_PASS;
	if (in[MAD_METHOD] == MAD_METHOD_TRAP_REPRESS)
		return MAD_IFC_CONSUMED;
	memcpy(out, in, MAD_SIZE);
	out[MAD_METHOD] = MAD_METHOD_GET_RESP;
	if (mad_is_smp(in)) {
		memset(out + SMP_DATA, 0, SMP_DATA_LEN);
		if (in[MAD_CLASS_VERSION] != 1)
			status = MAD_STATUS_BAD_VERSION;
		else if (in[MAD_METHOD] == MAD_METHOD_SET)
			status = sma_set(port, attr, mod, in + SMP_DATA,
					 out + SMP_DATA);
		else
			status = sma_get(port, attr, mod, out + SMP_DATA);
		if (in[MAD_CLASS] == MAD_CLASS_SUBN_DR)
			status |= SMP_DIRECTION;
	} else {
		memset(out + PMA_DATA, 0, MAD_SIZE - PMA_DATA);
		status = in[MAD_CLASS_VERSION] != PMA_CLASS_VERSION ?
			 MAD_STATUS_BAD_VERSION :
			 pma(port, in[MAD_METHOD], attr, in + PMA_DATA,
			     out + PMA_DATA);
	}
	mad_put16(out + MAD_STATUS, status);
	return MAD_IFC_REPLY;
}

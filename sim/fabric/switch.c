/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The switch: a 36-port InfiniBand switch (a SwitchX, as in an SX6036)
 * with base port 0, its management port, at LID 1, where the built-in
 * subnet manager runs.  Every InfiniBand port of every adapter is cabled
 * to one of its ports, in order (mlx4_0 port 1 to switch port 1, mlx4_0
 * port 2 to port 2, mlx4_1 port 1 to port 3, ...); the rest stay down.
 *
 * Here are what management datagrams meet on the wire: the switch's SMA
 * (NodeInfo, NodeDescription, SwitchInfo, PortInfo, the linear
 * forwarding table, and the tables an SM sets on every port), the way a
 * directed-route SMP walks its path (IB specification 14.2.2) and the
 * way a LID-routed packet follows the forwarding table.
 */
#include <errno.h>
#include <string.h>

#include "fabric.h"
#include "mad.h"

#define SWITCH_PORTS	36
#define SWITCH_GUID	0x0002c90300a1f000ULL
#define SWITCH_DEVICE	0xc738		/* SwitchX */
#define SWITCH_REVISION	0x000000a2
#define LFT_CAP		0xc000		/* unicast LIDs the table holds */
#define LFT_BLOCK	64		/* LIDs in one LFT MAD */
#define LFT_NONE	0xff		/* no port: the packet is dropped */
#define SWITCH_CAP_MASK	0x00004000	/* IsExtendedSpeedsSupported */
#define SWITCH_CAP_IS_SM	0x00000002	/* the built-in SM runs here */

static struct sim_port *peer[SWITCH_PORTS + 1];	/* by switch port */
static uint8_t lft[LFT_CAP];
static uint16_t lft_top;
/* What an SM set: port 0's LID and SM, each port's logical state. */
static uint16_t switch_lid, switch_sm_lid;
static uint8_t port_state[SWITCH_PORTS + 1];
static bool port_state_change;		/* SwitchInfo's PortStateChange */
static uint32_t trap_tid;

uint8_t switch_port_of(const struct sim_port *port)
{
	for (int p = 1; p <= SWITCH_PORTS; p++)
		if (peer[p] == port)
			return p;
	return 0;
}

struct sim_port *switch_peer(uint8_t swport)
{
	return swport >= 1 && swport <= SWITCH_PORTS ? peer[swport] : NULL;
}

/* A port's logical state when its link comes up: the SM's to raise. */
static uint8_t state_at_link_up(void)
{
	return sim.opt.external_sm ? PORT_STATE_INIT : PORT_STATE_ACTIVE;
}

/*
 * The cabling, and the forwarding table the built-in SM programs: each
 * adapter port's LID out of the switch port it is cabled to, the
 * switch's own LID to port 0.  With an external SM the table is empty
 * and the switch has no LID until the SM sweeps.
 */
void switch_init(void)
{
	int next = 1;

	memset(lft, LFT_NONE, sizeof(lft));
	port_state[0] = state_at_link_up();
	if (!sim.opt.external_sm) {
		switch_lid = switch_sm_lid = SIM_SM_LID;
		lft[SIM_SM_LID] = 0;
		lft_top = SIM_SM_LID;
	}
	for (int h = 0; h < sim.opt.nhcas; h++) {
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];

			if (port->link_layer != IBV_LINK_LAYER_INFINIBAND ||
			    next > SWITCH_PORTS)
				continue;
			peer[next] = port;
			port_state[next] = state_at_link_up();
			if (port->lid && port->lid < LFT_CAP) {
				lft[port->lid] = next;
				lft_top = MAX(lft_top, port->lid);
			}
			next++;
		}
	}
}

static bool cable_up(uint8_t swport)
{
	struct sim_port *port = switch_peer(swport);

	return port && !port->down;
}

/* ------------------------------------------------------------------ */
/* Routes                                                              */
/* ------------------------------------------------------------------ */

/*
 * A directed-route SMP leaves @from (hop 0) along its initial path.  As
 * a channel adapter sends one (smi_handle_dr_smp_send), the first hop
 * must leave by the sending port and no later hop may leave an adapter;
 * a switch sends it on by the port the path names.  Each node it reaches
 * records the port it came in by in the return path.  Returns 0 with
 * @to where it arrives, -EINVAL for a path the sender may not send, 1
 * when it is lost on the way (a port that is not there or not up).
 */
int fabric_dr_route(struct sim_port *from, uint8_t *smp, struct mad_node *to)
{
	uint8_t hops = smp[MAD_HOP_CNT];
	const uint8_t *path = smp + SMP_INITIAL_PATH;
	uint8_t *ret = smp + SMP_RETURN_PATH;

	if (hops > SMP_MAX_HOPS || smp[MAD_HOP_PTR] != 0)
		return -EINVAL;
	to->port = from;
	to->in_port = from->num;
	if (hops == 0)
		return 0;		/* the sender's own SMA */
	if (path[1] != from->num)
		return -EINVAL;
	for (int i = 1; i <= hops; i++) {
		uint8_t out = path[i];

		if (to->port) {
			/* Leaves an adapter: only at the first hop. */
			if (i > 1 || to->port->down)
				return 1;
			to->in_port = switch_port_of(to->port);
			to->port = NULL;
			if (!to->in_port)
				return 1;
		} else {
			if (!cable_up(out))
				return 1;
			to->port = switch_peer(out);
			to->in_port = to->port->num;
		}
		ret[i] = to->in_port;
	}
	smp[MAD_HOP_PTR] = hops;
	return 0;
}

/*
 * A LID-routed packet from @from to @dlid: to the sender itself (the
 * adapter loops it back), to the switch's port 0, or out of the port the
 * switch's forwarding table names.  0 with @to, 1 when it is lost.
 */
int fabric_lid_route(struct sim_port *from, uint16_t dlid, struct mad_node *to)
{
	uint8_t swport;

	if (dlid && dlid == from->lid) {
		to->port = from;
		to->in_port = from->num;
		return 0;
	}
	swport = switch_port_of(from);
	if (!swport || from->down || !dlid || dlid >= LFT_CAP)
		return 1;
	if (dlid == switch_lid) {
		to->port = NULL;
		to->in_port = swport;
		return 0;
	}
	if (lft[dlid] == LFT_NONE || !cable_up(lft[dlid]) ||
	    switch_peer(lft[dlid])->lid != dlid)
		return 1;
	to->port = switch_peer(lft[dlid]);
	to->in_port = to->port->num;
	return 0;
}

/* ------------------------------------------------------------------ */
/* What every IB port's PortInfo says of its link                      */
/* ------------------------------------------------------------------ */

/*
 * 4X at FDR (14.0625 Gb/s a lane, an extended speed), MTU 4096, VL0-7,
 * as a ConnectX-3 and a SwitchX negotiate; a port whose link is not up
 * is DOWN and polls (its width and speed stay those it would have).
 * The port the SMP came in by is the PortInfo's LocalPortNum.
 */
void port_info_link(uint8_t *pi, uint8_t in_port, uint8_t state, bool up)
{
	pi[PI_LOCAL_PORT] = in_port;
	pi[PI_WIDTH_ENABLED] = 0x03;		/* 1X or 4X */
	pi[PI_WIDTH_SUPPORTED] = 0x03;
	pi[PI_WIDTH_ACTIVE] = 0x02;		/* 4X */
	pi[PI_SPEED_STATE] = 0x70 | (up ? state : PORT_STATE_DOWN);
	pi[PI_PHYS_STATE] = (up ? PHYS_STATE_LINK_UP : PHYS_STATE_POLLING) << 4 |
			    PHYS_STATE_POLLING;
	pi[PI_SPEED_ACTIVE_ENABLED] = 0x40 | 0x07;
	pi[PI_MTU_SM_SL] = 5 << 4;		/* neighbour MTU 4096 */
	pi[PI_VL_CAP] = 4 << 4;			/* VL0-7, init type 0 */
	pi[PI_VL_HIGH_LIMIT] = 4;
	pi[PI_VL_ARB_HIGH_CAP] = 8;
	pi[PI_VL_ARB_LOW_CAP] = 8;
	pi[PI_MTU_CAP] = 5;
	pi[PI_VL_STALL_HOQ] = 7 << 5 | 0x1f;
	pi[PI_OPER_VLS] = 4 << 4;
	pi[PI_GUID_CAP] = 0;
	pi[PI_SUBNET_TIMEOUT] = 18;
	pi[PI_RESP_TIME] = 16;
	pi[PI_SPEED_EXT] = 0x10 | 0x01;		/* FDR */
	pi[PI_SPEED_EXT_ENABLED] = 0x01;
}

/* A block of 32 P_Keys of @blocks: the default partition, full member. */
int sma_pkey_block(uint32_t block, uint32_t blocks, uint8_t *data)
{
	if (block >= blocks)
		return MAD_STATUS_INVALID_ATTR;
	if (block == 0)
		mad_put16(data, 0xffff);
	return 0;
}

/*
 * What every port's SMA, an adapter's or the switch's, says of its
 * virtual lanes: SLs mapped to VL0-7 in turn, VL arbitration tables
 * empty, and no FDR10 (Mellanox's extended PortInfo, all zero); any
 * other attribute is not supported.
 */
int sma_vl_tables(uint16_t attr, uint32_t mod, uint8_t *data)
{
	switch (attr) {
	case SMP_ATTR_SL_TO_VL:
		for (int sl = 0; sl < 16; sl += 2)
			data[sl / 2] = (sl % 8) << 4 | ((sl + 1) % 8);
		return 0;
	case SMP_ATTR_VL_ARB:
		return mod >= 1 && mod <= 4 ? 0 : MAD_STATUS_INVALID_ATTR;
	case SMP_ATTR_MLNX_EXT_PORT_INFO:
		return 0;
	default:
		return MAD_STATUS_METHOD_ATTR_UNSUPPORTED;
	}
}

static int switch_set(uint16_t attr, uint32_t mod, uint8_t in_port,
		      const uint8_t *in, uint8_t *data);

/* ------------------------------------------------------------------ */
/* The switch's SMA                                                    */
/* ------------------------------------------------------------------ */

static void node_info(uint8_t *ni, uint8_t in_port)
{
	ni[NI_BASE_VERSION] = 1;
	ni[NI_CLASS_VERSION] = 1;
	ni[NI_NODE_TYPE] = NODE_TYPE_SWITCH;
	ni[NI_NUM_PORTS] = SWITCH_PORTS;
	mad_put64(ni + NI_SYS_IMAGE_GUID, SWITCH_GUID);
	mad_put64(ni + NI_NODE_GUID, SWITCH_GUID);
	mad_put64(ni + NI_PORT_GUID, SWITCH_GUID);
	mad_put16(ni + NI_PARTITION_CAP, 8);
	mad_put16(ni + NI_DEVICE_ID, SWITCH_DEVICE);
	mad_put32(ni + NI_REVISION, SWITCH_REVISION);
	ni[NI_LOCAL_PORT] = in_port;
	ni[NI_VENDOR_ID] = CX3_VENDOR_ID >> 16;
	mad_put16(ni + NI_VENDOR_ID + 1, CX3_VENDOR_ID & 0xffff);
}

static void switch_info(uint8_t *si)
{
	mad_put16(si + SWI_LFT_CAP, LFT_CAP);
	mad_put16(si + SWI_MFT_CAP, 0x1000);
	mad_put16(si + SWI_LFT_TOP, lft_top);
	si[SWI_LIFE_STATE] = 18 << 3 |
			     (port_state_change ? SWI_PORT_STATE_CHANGE : 0);
	mad_put16(si + SWI_PARTITION_CAP, 8);
}

/*
 * Port 0 is the management port, with the switch's LID and capabilities
 * (the SM runs there; extended speeds), the others its links.
 */
static int switch_port_info(uint32_t num, uint8_t in_port, uint8_t *pi)
{
	if (num > SWITCH_PORTS)
		return MAD_STATUS_INVALID_ATTR;
	mad_put64(pi + PI_GID_PREFIX, SIM_SUBNET_PREFIX);
	if (num == 0) {
		mad_put16(pi + PI_LID, switch_lid);
		mad_put16(pi + PI_SM_LID, switch_sm_lid);
		mad_put32(pi + PI_CAP_MASK, SWITCH_CAP_MASK |
			  (sim.opt.external_sm ? 0 : SWITCH_CAP_IS_SM));
		port_info_link(pi, in_port, port_state[0], true);
	} else {
		port_info_link(pi, in_port, port_state[num], cable_up(num));
	}
	return 0;
}

static int lft_block(uint32_t block, uint8_t *data)
{
	if (block >= LFT_CAP / LFT_BLOCK)
		return MAD_STATUS_INVALID_ATTR;
	memcpy(data, lft + block * LFT_BLOCK, LFT_BLOCK);
	return 0;
}

/* The tables every port has, with what the switch's ports hold. */
static int port_tables(uint16_t attr, uint32_t mod, uint8_t *data)
{
	switch (attr) {
	case SMP_ATTR_GUID_INFO:
		if (mod != 0)
			return MAD_STATUS_INVALID_ATTR;
		mad_put64(data, SWITCH_GUID);
		return 0;
	case SMP_ATTR_PKEY_TABLE:	/* the port in the top half */
		if (mod >> 16 > SWITCH_PORTS)
			return MAD_STATUS_INVALID_ATTR;
		return sma_pkey_block(mod & 0xffff, 1, data);
	default:
		return sma_vl_tables(attr, mod, data);
	}
}

static int switch_get(uint16_t attr, uint32_t mod, uint8_t in_port,
		      uint8_t *data)
{
	switch (attr) {
	case SMP_ATTR_NODE_INFO:
		node_info(data, in_port);
		return 0;
	case SMP_ATTR_NODE_DESC:
		strcpy((char *)data, "mlx4sim switch");
		return 0;
	case SMP_ATTR_SWITCH_INFO:
		switch_info(data);
		return 0;
	case SMP_ATTR_PORT_INFO:
		return switch_port_info(mod & 0xff, in_port, data);
	case SMP_ATTR_LFT:
		return lft_block(mod, data);
	default:
		return port_tables(attr, mod, data);
	}
}

/*
 * The switch's SMA answers a Get of what it has and a Set of what an SM
 * sets (switch_set).  The answer is built in @out from the request @in;
 * true when there is one.
 */
bool switch_smp(uint8_t in_port, const uint8_t *in, uint8_t *out)
{
	uint8_t method = in[MAD_METHOD];
	uint16_t status = 0;

	if (method != MAD_METHOD_GET && method != MAD_METHOD_SET)
		return false;
	memcpy(out, in, MAD_SIZE);
	memset(out + SMP_DATA, 0, SMP_DATA_LEN);
	out[MAD_METHOD] = MAD_METHOD_GET_RESP;
	if (in[MAD_CLASS_VERSION] != 1)
		status = MAD_STATUS_BAD_VERSION;
	else if (method == MAD_METHOD_SET)
		status = switch_set(mad_get16(in + MAD_ATTR_ID),
				    mad_get32(in + MAD_ATTR_MOD), in_port,
				    in + SMP_DATA, out + SMP_DATA);
	else
		status = switch_get(mad_get16(in + MAD_ATTR_ID),
				    mad_get32(in + MAD_ATTR_MOD), in_port,
				    out + SMP_DATA);
	if (in[MAD_CLASS] == MAD_CLASS_SUBN_DR)
		status |= SMP_DIRECTION;
	mad_put16(out + MAD_STATUS, status);
	return true;
}

/* ------------------------------------------------------------------ */
/* What an SM sets                                                     */
/* ------------------------------------------------------------------ */

/*
 * A port's logical state as an SM moves it (IB specification 7.2):
 * Armed from Init, Active from Armed, Down to retrain (back to Init);
 * NOP keeps it.  False for any other move, which is refused whole.
 */
bool port_state_set(uint8_t *state, uint8_t want)
{
	switch (want) {
	case PORT_STATE_NOP:
		return true;
	case PORT_STATE_DOWN:
		*state = PORT_STATE_INIT;
		return true;
	case PORT_STATE_ARMED:
		if (*state != PORT_STATE_INIT && *state != PORT_STATE_ARMED)
			return false;
		*state = want;
		return true;
	case PORT_STATE_ACTIVE:
		if (*state != PORT_STATE_ARMED && *state != PORT_STATE_ACTIVE)
			return false;
		*state = want;
		return true;
	default:
		return false;
	}
}

/*
 * A Set of a table an SM programs and the SMA takes as set (VLs,
 * partitions, GUIDs): the answer carries the request's data, when the
 * attribute and modifier are good (@get_status, a Get's of them).
 * NodeInfo and NodeDescription are not the SM's to set.
 */
int sma_set_as_is(uint16_t attr, int get_status, const uint8_t *in,
		  uint8_t *data)
{
	if (attr == SMP_ATTR_NODE_INFO || attr == SMP_ATTR_NODE_DESC)
		return MAD_STATUS_METHOD_ATTR_UNSUPPORTED;
	if (!get_status)
		memcpy(data, in, SMP_DATA_LEN);
	return get_status;
}

/* Port 0 takes the switch's LID and its SM; every port its state. */
static int switch_port_info_set(uint32_t num, const uint8_t *pi)
{
	uint8_t state = num <= SWITCH_PORTS ? port_state[num] : 0;
	uint16_t lid = mad_get16(pi + PI_LID);

	if (num > SWITCH_PORTS || (num && !cable_up(num)))
		return MAD_STATUS_INVALID_ATTR;
	if (!port_state_set(&state, pi[PI_SPEED_STATE] & 0x0f))
		return MAD_STATUS_INVALID_ATTR;
	if (num == 0) {
		if (lid >= LFT_CAP)
			return MAD_STATUS_INVALID_ATTR;
		switch_lid = lid;
		switch_sm_lid = mad_get16(pi + PI_SM_LID);
	}
	port_state[num] = state;
	return 0;
}

static int switch_info_set(const uint8_t *si)
{
	uint16_t top = mad_get16(si + SWI_LFT_TOP);

	if (top >= LFT_CAP)
		return MAD_STATUS_INVALID_ATTR;
	lft_top = top;
	/* PortStateChange: the SM writes 1 to clear it. */
	if (si[SWI_LIFE_STATE] & SWI_PORT_STATE_CHANGE)
		port_state_change = false;
	return 0;
}

/*
 * A Set: what routes packets (port 0's LID, the ports' states, the
 * forwarding table) takes effect; the rest, the SM's tables for VLs and
 * partitions, is taken as set.  The answer is a Get's after it, or the
 * request's own data for what is taken as set.
 */
static int switch_set(uint16_t attr, uint32_t mod, uint8_t in_port,
		      const uint8_t *in, uint8_t *data)
{
	int status;

	switch (attr) {
	case SMP_ATTR_PORT_INFO:
		status = switch_port_info_set(mod & 0xff, in);
		break;
	case SMP_ATTR_SWITCH_INFO:
		status = switch_info_set(in);
		break;
	case SMP_ATTR_LFT:
		if (mod >= LFT_CAP / LFT_BLOCK)
			return MAD_STATUS_INVALID_ATTR;
		memcpy(lft + mod * LFT_BLOCK, in, LFT_BLOCK);
		return switch_get(attr, mod, in_port, data);
	default:
		return sma_set_as_is(attr, switch_get(attr, mod, in_port, data),
				     in, data);
	}
	return status ? status : switch_get(attr, mod, in_port, data);
}

/*
 * A link of the switch went down or came up (`mlx4sim fault`): its
 * port's state follows, and SwitchInfo's PortStateChange is set.  True
 * when the switch has an SM to tell, with Trap 128 in @trap (a Notice
 * from the switch's LID, LID-routed to the SM): *dlid is where it goes.
 */
bool switch_link_changed(const struct sim_port *port, uint8_t *trap,
			 uint16_t *dlid)
{
	uint8_t num = switch_port_of(port);
	uint8_t *notice = trap + SMP_DATA;

	if (!num)
		return false;
	port_state[num] = port->down ? PORT_STATE_DOWN : state_at_link_up();
	port_state_change = true;
	if (!switch_sm_lid || !switch_lid)
		return false;
	memset(trap, 0, MAD_SIZE);
	trap[MAD_BASE_VERSION] = 1;
	trap[MAD_CLASS] = MAD_CLASS_SUBN_LID;
	trap[MAD_CLASS_VERSION] = 1;
	trap[MAD_METHOD] = MAD_METHOD_TRAP;
	mad_put64(trap + MAD_TID, 0x5357000000000000ULL | ++trap_tid);
	mad_put16(trap + MAD_ATTR_ID, SMP_ATTR_NOTICE);
	notice[0] = 0x80 | 1;		/* generic, urgent */
	mad_put16(notice + 2, NODE_TYPE_SWITCH);	/* producer type */
	mad_put16(notice + 4, 128);	/* trap number: link state change */
	mad_put16(notice + 6, switch_lid);	/* issuer LID */
	mad_put16(notice + 10, switch_lid);	/* the switch's LID */
	*dlid = switch_sm_lid;
	return true;
}

/* Where a LID-routed packet the switch sends goes: its forwarding table. */
int switch_route(uint16_t dlid, struct mad_node *to)
{
	if (dlid >= LFT_CAP || lft[dlid] == LFT_NONE || !cable_up(lft[dlid]))
		return 1;
	to->port = switch_peer(lft[dlid]);
	to->in_port = to->port->num;
	return 0;
}

uint16_t switch_lid_now(void)
{
	return switch_lid;
}

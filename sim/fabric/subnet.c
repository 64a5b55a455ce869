/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The subnet: one switch, where the subnet manager runs (LID 1), and the
 * adapters cabled to it.  The SM has swept the fabric before any process
 * looks: every port is ACTIVE with a LID, GID 0 is the default subnet
 * prefix and the port GUID, and the P_Key table holds the default
 * partition.  LIDs and GUIDs are fixed by adapter and port number, so runs
 * are repeatable.  With an external SM (--sm external) the ports wait in
 * INIT with no LID until it sweeps them (adapter/mad-agents.c, switch.c).  A port in Ethernet mode has no LID: ether.c gives it
 * its MAC, interface and GIDs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "mad.h"

#define NODE_GUID_BASE	0x0002c90300a1b200ULL	/* Mellanox OUI 00:02:c9 */
#define FIRST_LID	2
#define FIRST_QPN	0x48

static struct sim_port **port_of_lid;	/* by unicast LID */

int subnet_init(void)
{
	int nhcas = sim.opt.nhcas, nports = sim.opt.nports;
	uint16_t lid = FIRST_LID;

	sim.hca = calloc(nhcas, sizeof(*sim.hca));
	port_of_lid = calloc(SIM_LID_UNICAST_END, sizeof(*port_of_lid));
	if (!sim.hca || !port_of_lid)
		return -ENOMEM;

	for (int h = 0; h < nhcas; h++) {
		struct sim_hca *hca = &sim.hca[h];

		hca->index = h;
		/* --hosts: each host names its own adapters from mlx4_0. */
		hca->host = h / sim.opt.hcas_per_host;
		hca->local = h % sim.opt.hcas_per_host;
		snprintf(hca->name, sizeof(hca->name), "mlx4_%d", hca->local);
		/* As rdma-ndd names a host's adapter: by the host's name. */
		if (sim.opt.nhosts)
			snprintf(hca->node_desc, sizeof(hca->node_desc),
				 "node%d %s", hca->host + 1, hca->name);
		else
			snprintf(hca->node_desc, sizeof(hca->node_desc),
				 "mlx4sim %s", hca->name);
		/* Runs on one segment differ by --host-id (uplink.c). */
		hca->node_guid = NODE_GUID_BASE + ((uint64_t)h << 4) +
				 ((uint64_t)sim.opt.host_id << 8);
		hca->sys_image_guid = hca->node_guid + 3;
		hca->nports = nports;
		/*
		 * Resource numbers start where a ConnectX-3's reserved ones
		 * end, and differ between adapters to make mix-ups visible.
		 */
		hca->next_qpn = FIRST_QPN + h * 0x1000;
		hca->next_cqn = 0x80 + h * 0x100;
		hca->next_srqn = 0x40 + h * 0x100;
		hca->next_pdn = 1;
		hca->next_mpt = 0x80;	/* past the firmware's entries */
		hca->key_tag = 0x5a + h;
		for (int p = 0; p < nports; p++) {
			struct sim_port *port = &hca->port[p];

			port->hca = hca;
			port->num = p + 1;
			port->guid = hca->node_guid + 1 + p;
			port->state = PORT_STATE_ACTIVE;
			ether_port_init(port);
			if (port->link_layer == IBV_LINK_LAYER_ETHERNET)
				continue;	/* no subnet manager, no LID */
			if (sim.opt.external_sm) {
				/* Up, waiting for an SM to sweep: no LID. */
				port->state = PORT_STATE_INIT;
				continue;
			}
			port->sm_lid = SIM_SM_LID;
			port->lid = lid;
			port_of_lid[lid++] = port;
		}
	}
	switch_init();
	return 0;
}

struct sim_port *port_by_lid(uint16_t lid)
{
	return lid < SIM_LID_UNICAST_END ? port_of_lid[lid] : NULL;
}

/*
 * The LID an SM gave @port (PortInfo Set): 0 or a unicast LID, else
 * -EINVAL.  Two ports the SM gave one LID: the last has it.
 */
int subnet_set_lid(struct sim_port *port, uint16_t lid)
{
	if (lid >= SIM_LID_UNICAST_END)
		return -EINVAL;
	if (port->lid && port_of_lid[port->lid] == port)
		port_of_lid[port->lid] = NULL;
	port->lid = lid;
	if (lid)
		port_of_lid[lid] = port;
	return 0;
}

/* Whether @port carries packets: its link up, the SM made it ACTIVE. */
bool port_active(const struct sim_port *port)
{
	return !port->down && port->state == PORT_STATE_ACTIVE;
}

/*
 * On an IB port only GID 0 is populated, as with no alias GUIDs; an
 * Ethernet port has the table ether.c built from its interface.
 */
void port_gid(const struct sim_port *port, int index, uint8_t gid[16])
{
	uint64_t prefix = htobe64(SIM_SUBNET_PREFIX);
	uint64_t guid = htobe64(port->guid);

	if (port->link_layer == IBV_LINK_LAYER_ETHERNET) {
		if (index >= 0 && index < port->ngids)
			memcpy(gid, port->gids[index].gid, 16);
		else
			memset(gid, 0, 16);
		return;
	}
	if (index != 0) {
		memset(gid, 0, 16);
		return;
	}
	memcpy(gid, &prefix, 8);
	memcpy(gid + 8, &guid, 8);
}

bool lid_is_multicast(uint16_t lid)
{
	return lid >= 0xc000 && lid != 0xffff;
}

/*
 * The PMA's counters (PortCounters, PortCountersExtended): a message's
 * packets, and its data in 4-byte words with each packet's LRH, BTH,
 * ICRC and VCRC (26 bytes), as the port's link carries them.
 */
void port_count(struct sim_port *from, struct sim_port *to, uint32_t len,
		uint32_t npkts)
{
	uint64_t words;

	npkts = npkts ? npkts : 1;
	words = ((uint64_t)len + 26ULL * npkts + 3) / 4;
	if (from) {
		from->counters.xmit_pkts += npkts;
		from->counters.xmit_data += words;
	}
	if (to) {
		to->counters.rcv_pkts += npkts;
		to->counters.rcv_data += words;
	}
}

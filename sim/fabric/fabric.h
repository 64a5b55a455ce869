/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fabric layer: the subnet and its ports, the Ethernet segment, the
 * packets held in flight, the fault rules each packet meets and the
 * capture of the wire.  It calls the host layer and nothing above.
 */
#ifndef MLX4SIM_FABRIC_H
#define MLX4SIM_FABRIC_H

#include "../host/host.h"

/* subnet.c */
int subnet_init(void);
struct sim_port *port_by_lid(uint16_t lid);
int subnet_set_lid(struct sim_port *port, uint16_t lid);
bool port_active(const struct sim_port *port);

/* Port @num (from 1) of @hca, or NULL: asked several times a message. */
static inline struct sim_port *hca_port(struct sim_hca *hca, uint8_t num)
{
	if (num < 1 || num > hca->nports)
		return NULL;
	return &hca->port[num - 1];
}
void port_gid(const struct sim_port *port, int index, uint8_t gid[16]);

/*
 * switch.c: the switch, its SMA, and the ways a management datagram
 * goes (mad.h has their format).  A MAD arrives at a node: the switch
 * (port NULL, by its port in_port) or an adapter's port.
 */
struct mad_node {
	struct sim_port *port;
	uint8_t in_port;
};
void switch_init(void);
uint8_t switch_port_of(const struct sim_port *port);
struct sim_port *switch_peer(uint8_t swport);
int fabric_dr_route(struct sim_port *from, uint8_t *smp, struct mad_node *to);
int fabric_lid_route(struct sim_port *from, uint16_t dlid, struct mad_node *to);
void port_info_link(uint8_t *pi, uint8_t in_port, uint8_t state, bool up);
bool switch_smp(uint8_t in_port, const uint8_t *in, uint8_t *out);
int sma_vl_tables(uint16_t attr, uint32_t mod, uint8_t *data);
int sma_pkey_block(uint32_t block, uint32_t blocks, uint8_t *data);
bool port_state_set(uint8_t *state, uint8_t want);
int sma_set_as_is(uint16_t attr, int get_status, const uint8_t *in,
		  uint8_t *data);
bool switch_link_changed(const struct sim_port *port, uint8_t *trap,
			 uint16_t *dlid);
int switch_route(uint16_t dlid, struct mad_node *to);
uint16_t switch_lid_now(void);
/* What a port carried, for its PMA: a message of @len bytes in @npkts. */
void port_count(struct sim_port *from, struct sim_port *to, uint32_t len,
		uint32_t npkts);

/* pcap.c: --pcap, the capture of the Ethernet ports' wire */
int pcap_open(const char *path);
void pcap_close(void);
void pcap_mad(const struct sim_port *from, const struct sim_port *to,
	      const uint8_t sgid[16], const uint8_t dgid[16], bool v2,
	      const uint8_t *mad, size_t len);

/* ether.c */
bool ether_ports(void);
/* The daemon's network namespace (made once), and ip(8) run in it. */
int sim_make_netns(void);
int sim_run_ip(const char *family, const char *script);
void ether_port_init(struct sim_port *port);
int ether_init(void);
struct sim_port *port_by_mac(const uint8_t mac[6]);
struct sim_port *port_by_gid(const uint8_t gid[16]);
bool lid_is_multicast(uint16_t lid);

/* fault.c: faults on demand (mlx4sim fault): the rules each packet meets */
enum fault_action {
	FAULT_NONE,
	FAULT_DROP,
	FAULT_DUPLICATE,
	FAULT_REORDER,
	FAULT_DELAY,
};
void fault_count_drop(void);
enum fault_action fault_packet(const struct sim_qp *qp, uint8_t port,
			       uint32_t *delay_ms);
bool fault_rnr(const struct sim_qp *qp);
#define FAULT_PPM	1000000u	/* rates are in parts per million */
struct mlx4sim_fault;
struct mlx4sim_fault_counts;
bool fault_is_packet_kind(uint32_t kind);
int fault_rules_add(const struct mlx4sim_fault *f);
void fault_rules_clear(void);
void fault_counts(struct mlx4sim_fault_counts *out);

/*
 * uplink.c: --uplink, the Ethernet ports on a real wire.  uplink_init()
 * runs before the daemon enters its namespaces (it opens the interface
 * and chooses the run's addresses), uplink_attach() in them (a port of
 * the switch whose frames the daemon carries to and from the wire).
 */
#define UPLINK_MAX_HOST_ID	200
int uplink_init(void);
int uplink_attach(void);
bool uplink_active(void);
/*
 * Frames from the wire reach the adapter: a RoCE frame for @port's MAC
 * its wire engine, any other frame its flow steering (@port NULL: for a
 * MAC no port owns, a broadcast or a multicast).
 */
typedef void uplink_rx_fn(struct sim_port *port, const uint8_t *frame,
			  size_t len);
void uplink_set_receivers(uplink_rx_fn *roce, uplink_rx_fn *raw);
/* A frame goes out, as the fault rules @qp meets on @port have it. */
void uplink_send(const struct sim_qp *qp, uint8_t port, const uint8_t *frame,
		 size_t len);
int uplink_fds(int fds[2]);
void uplink_poll(uint64_t now, uint64_t *deadline);
/* The MAC of @gid behind @port, from the kernel's neighbour table. */
int uplink_neigh(const struct sim_port *port, const uint8_t gid[16],
		 uint8_t mac[6]);

#endif

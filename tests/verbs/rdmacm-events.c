/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection manager's events, in order, at the rdma_cm ABI: two
 * files play the active and the passive side (no QP is needed: the kernel
 * takes the QP numbers it is given).  A rejected request (REJECTED with
 * the consumer's reason and private data), an accepted one (CONNECT_-
 * REQUEST's parameters, CONNECT_RESPONSE, ESTABLISHED, the PSNs and QP
 * numbers INIT_QP_ATTR gives both sides agreeing), a disconnection from
 * each side (DISCONNECTED on both, then TIMEWAIT_EXIT), a passive side
 * that goes before it accepts (REJECTED) and one that goes when
 * connected (DISCONNECTED), an active side that goes while its request
 * waits, a new id accepted before its request is read and then taken
 * with its listener; an ACCEPT later than the request's timeout (an MRA);
 * the adapter's reset (DEVICE_REMOVAL); a GET_EVENT waiting in one thread
 * while another closes the file.
 * Usage: rdmacm-events ADDRESS PORT (an IPv4 address of a simulated port
 * of the first adapter; $MLX4SIM, the command, for the reset)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "../tap.h"
#include "../wait.h"

#define RDMA_CM		"/dev/infiniband/rdma_cm"
#define EV_ADDR_RESOLVED	0
#define EV_ROUTE_RESOLVED	2
#define EV_CONNECT_REQUEST	4
#define EV_CONNECT_RESPONSE	5
#define EV_REJECTED		8
#define EV_ESTABLISHED		9
#define EV_DISCONNECTED		10
#define EV_DEVICE_REMOVAL	11
#define EV_TIMEWAIT_EXIT	15
#define REJ_CONSUMER_DEFINED	28
#define QPS_RTR			2
#define QPS_RTS			3

static struct sockaddr_in server_addr;

static int ucm(int fd, uint32_t op, const void *body, uint16_t in,
	       uint16_t out)
{
	struct {
		struct rdma_ucm_cmd_hdr hdr;
		uint8_t body[1024];
	} msg = { { op, in, out } };

	memcpy(msg.body, body, in);
	return write(fd, &msg, sizeof(msg.hdr) + in) < 0 ? -errno : 0;
}

static uint32_t create_id(int fd, uint64_t uid)
{
	struct rdma_ucm_create_id_resp resp = {};
	struct rdma_ucm_create_id c = {
		.uid = uid, .response = (uintptr_t)&resp, .ps = RDMA_PS_TCP,
	};

	if (ucm(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), sizeof(resp)))
		bail("CREATE_ID");
	return resp.id;
}

static int destroy_id(int fd, uint32_t id)
{
	struct rdma_ucm_destroy_id_resp resp;
	struct rdma_ucm_destroy_id d = { .response = (uintptr_t)&resp, .id = id };

	return ucm(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), sizeof(resp));
}

/* The file's next event within @ms, or event -1. */
static struct rdma_ucm_event_resp next_event(int fd, int ms)
{
	struct rdma_ucm_event_resp ev = { .event = (uint32_t)-1 };
	struct rdma_ucm_get_event g = { .response = (uintptr_t)&ev };
	struct pollfd p = { fd, POLLIN, 0 };

	if (poll(&p, 1, ms) == 1 &&
	    ucm(fd, RDMA_USER_CM_CMD_GET_EVENT, &g, sizeof(g), sizeof(ev)))
		ev.event = (uint32_t)-1;
	return ev;
}

static bool no_event(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 0;
}

static void listen_on(int fd, uint32_t id)
{
	struct rdma_ucm_bind_ip b = { .id = id };
	struct rdma_ucm_listen l = { .id = id, .backlog = 8 };

	memcpy(&b.addr, &server_addr, sizeof(server_addr));
	if (ucm(fd, RDMA_USER_CM_CMD_BIND_IP, &b, sizeof(b), 0) ||
	    ucm(fd, RDMA_USER_CM_CMD_LISTEN, &l, sizeof(l), 0))
		bail("BIND_IP, LISTEN");
}

/* An active id with its route: ADDR_RESOLVED, then ROUTE_RESOLVED. */
static uint32_t active_id(int fd, uint64_t uid)
{
	uint32_t id = create_id(fd, uid);
	struct rdma_ucm_resolve_ip r = { .id = id, .timeout_ms = 2000 };
	struct rdma_ucm_resolve_route rr = { .id = id, .timeout_ms = 2000 };

	memcpy(&r.dst_addr, &server_addr, sizeof(server_addr));
	if (ucm(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &r, sizeof(r), 0) ||
	    next_event(fd, 2000).event != EV_ADDR_RESOLVED ||
	    ucm(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &rr, sizeof(rr), 0) ||
	    next_event(fd, 2000).event != EV_ROUTE_RESOLVED)
		bail("address and route");
	return id;
}

/* CONNECT's and ACCEPT's parameters: a QPN, depths, private data. */
static void conn_param(struct rdma_ucm_conn_param *p, uint32_t qpn,
		       uint8_t responder, uint8_t initiator, const char *data)
{
	p->qp_num = qpn;
	p->responder_resources = responder;
	p->initiator_depth = initiator;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->valid = 1;
	p->private_data_len = strlen(data);
	memcpy(p->private_data, data, strlen(data));
}

static int connect_id(int fd, uint32_t id, uint32_t qpn, const char *data)
{
	struct rdma_ucm_connect c = { .id = id };

	conn_param(&c.conn_param, qpn, 4, 2, data);
	return ucm(fd, RDMA_USER_CM_CMD_CONNECT, &c, sizeof(c), 0);
}

/* ACCEPT, with parameters when @qpn is not 0 (the passive side's). */
static int accept_id(int fd, uint32_t id, uint64_t uid, uint32_t qpn,
		     const char *data)
{
	struct rdma_ucm_accept a = { .uid = uid, .id = id };

	if (qpn)
		conn_param(&a.conn_param, qpn, 2, 4, data);
	return ucm(fd, RDMA_USER_CM_CMD_ACCEPT, &a, sizeof(a), 0);
}

static int qp_attr(int fd, uint32_t id, uint32_t state,
		   struct ib_uverbs_qp_attr *attr)
{
	struct rdma_ucm_init_qp_attr q = {
		.response = (uintptr_t)attr, .id = id, .qp_state = state,
	};

	return ucm(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, &q, sizeof(q),
		   sizeof(*attr));
}

/* A request rejected with the consumer's reason and data. */
static void rejected(int server, int client)
{
	uint32_t id = active_id(client, 0xc1);
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_reject rej = { .reason = 0, .private_data_len = 3 };

	CHECK(!connect_id(client, id, 0x123, "hello"), "CONNECT");
	ev = next_event(server, 2000);
	CHECK(ev.event == EV_CONNECT_REQUEST && ev.uid == 0x5e &&
	      ev.param.conn.qp_num == 0x123 &&
	      ev.param.conn.responder_resources == 2 &&
	      ev.param.conn.initiator_depth == 4 &&
	      ev.param.conn.private_data_len == 56 &&
	      !memcmp(ev.param.conn.private_data, "hello", 5),
	      "CONNECT_REQUEST on the listener: the QPN, depths seen from its side, the private data (event %u, len %u)",
	      ev.event, ev.param.conn.private_data_len);
	rej.id = ev.id;
	memcpy(rej.private_data, "no!", 3);
	CHECK(!ucm(server, RDMA_USER_CM_CMD_REJECT, &rej, sizeof(rej), 0),
	      "REJECT");
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_REJECTED && ev.status == REJ_CONSUMER_DEFINED &&
	      ev.uid == 0xc1 && !memcmp(ev.param.conn.private_data, "no!", 3),
	      "REJECTED, reason 28 (consumer defined), with the private data (event %u status %d)",
	      ev.event, ev.status);
	CHECK(!destroy_id(server, rej.id) && !destroy_id(client, id) &&
	      no_event(server, 100) && no_event(client, 0),
	      "both ids destroyed, no other event");
}

/* The passive id of an accepted connection, both sides ESTABLISHED. */
static uint32_t connected(int server, int client, uint32_t *active)
{
	struct ib_uverbs_qp_attr crtr, crts, srtr, srts;
	bool got;
	struct rdma_ucm_event_resp ev;
	uint32_t conn;

	*active = active_id(client, 0xc2);
	if (connect_id(client, *active, 0x211, "x"))
		bail("CONNECT");
	ev = next_event(server, 2000);
	conn = ev.id;
	CHECK(ev.event == EV_CONNECT_REQUEST &&
	      !accept_id(server, conn, 0x5c, 0x311, "welcome"),
	      "CONNECT_REQUEST, ACCEPT");
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_CONNECT_RESPONSE && ev.param.conn.qp_num == 0x311 &&
	      !memcmp(ev.param.conn.private_data, "welcome", 7),
	      "CONNECT_RESPONSE on the active side, the passive QPN and data (event %u)",
	      ev.event);
	/* The attributes first: CHECK's arguments print them. */
	got = !qp_attr(client, *active, QPS_RTR, &crtr) &&
	      !qp_attr(client, *active, QPS_RTS, &crts) &&
	      !qp_attr(server, conn, QPS_RTR, &srtr) &&
	      !qp_attr(server, conn, QPS_RTS, &srts);
	CHECK(got && crtr.dest_qp_num == 0x311 && srtr.dest_qp_num == 0x211 &&
	      crts.sq_psn == srtr.rq_psn && srts.sq_psn == crtr.rq_psn &&
	      crtr.max_dest_rd_atomic == 4 && crts.max_rd_atomic == 2,
	      "INIT_QP_ATTR: each side's QPN the other's destination, each one's send PSN the other's receive PSN (%x/%x %x/%x)",
	      crts.sq_psn, srtr.rq_psn, srts.sq_psn, crtr.rq_psn);
	CHECK(!accept_id(client, *active, 0, 0, ""), "ACCEPT on the active side (the RTU)");
	ev = next_event(server, 2000);
	CHECK(ev.event == EV_ESTABLISHED && ev.uid == 0x5c && ev.id == conn,
	      "ESTABLISHED on the passive id, with the uid ACCEPT gave (event %u)",
	      ev.event);
	return conn;
}

/* DISCONNECT on one side (@what), DISCONNECTED on the other. */
static void disconnect(int fd, uint32_t id, int peer, uint32_t peer_id,
		       const char *what)
{
	struct rdma_ucm_disconnect d = { .id = id };
	struct rdma_ucm_event_resp ev;

	CHECK(!ucm(fd, RDMA_USER_CM_CMD_DISCONNECT, &d, sizeof(d), 0),
	      "DISCONNECT on the %s", what);
	ev = next_event(peer, 2000);
	CHECK(ev.event == EV_DISCONNECTED && ev.id == peer_id,
	      "DISCONNECTED heard from it (event %u)", ev.event);
}

/* A disconnection: both sides hear DISCONNECTED, then TIMEWAIT_EXIT. */
static void disconnected(int server, int client)
{
	struct rdma_ucm_event_resp ev;
	uint32_t active, conn = connected(server, client, &active);

	disconnect(client, active, server, conn, "active side (its DREQ)");
	disconnect(server, conn, client, active, "passive side (its DREP)");
	ev = next_event(client, 5000);
	CHECK(ev.event == EV_TIMEWAIT_EXIT, "then TIMEWAIT_EXIT (event %u)",
	      ev.event);
	ev = next_event(server, 5000);
	CHECK(ev.event == EV_TIMEWAIT_EXIT,
	      "and TIMEWAIT_EXIT on the passive side (event %u)", ev.event);
	destroy_id(client, active);
	destroy_id(server, conn);
}

/* The passive side's process goes when connected: DISCONNECTED. */
static void server_gone(int client)
{
	int server = open(RDMA_CM, O_RDWR);
	uint32_t listener = create_id(server, 0x5e), active;
	struct rdma_ucm_event_resp ev;

	listen_on(server, listener);
	connected(server, client, &active);
	close(server);
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_DISCONNECTED,
	      "the passive side's file closed: DISCONNECTED (event %u)",
	      ev.event);
	destroy_id(client, active);
}

/* It goes before it accepts: REJECTED (consumer defined). */
static void server_gone_early(int client)
{
	int server = open(RDMA_CM, O_RDWR);
	uint32_t listener = create_id(server, 0x5e);
	uint32_t active = active_id(client, 0xc3);
	struct rdma_ucm_event_resp ev;

	listen_on(server, listener);
	connect_id(client, active, 0x411, "?");
	ev = next_event(server, 2000);
	CHECK(ev.event == EV_CONNECT_REQUEST, "CONNECT_REQUEST (event %u)",
	      ev.event);
	close(server);
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_REJECTED && ev.status == REJ_CONSUMER_DEFINED,
	      "the passive side's file closed before ACCEPT: REJECTED, 28 (event %u status %d)",
	      ev.event, ev.status);
	destroy_id(client, active);
}

/*
 * A passive side slow to accept: the request is sent again after its
 * timeout (4.6 s on RoCE, 6.1 s on InfiniBand), ib_cm answers it with an
 * MRA (the capture shows it), and the active side waits on quietly; the
 * ACCEPT, 7 s late, still makes the connection.
 */
static void slow_accept(int server, int client)
{
	uint32_t active = active_id(client, 0xc6), conn;
	struct rdma_ucm_event_resp ev;

	connect_id(client, active, 0x711, "slow");
	ev = next_event(server, 2000);
	conn = ev.id;
	CHECK(ev.event == EV_CONNECT_REQUEST, "CONNECT_REQUEST (event %u)",
	      ev.event);
	CHECK(no_event(client, 7000) && no_event(server, 0),
	      "7 s without ACCEPT: no event on either side");
	CHECK(!accept_id(server, conn, 0x5d, 0x811, ""), "ACCEPT, late");
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_CONNECT_RESPONSE && ev.param.conn.qp_num == 0x811,
	      "CONNECT_RESPONSE all the same (event %u)", ev.event);
	CHECK(!accept_id(client, active, 0, 0, "") &&
	      next_event(server, 2000).event == EV_ESTABLISHED,
	      "the RTU: ESTABLISHED");
	destroy_id(client, active);
	destroy_id(server, conn);
	while (next_event(server, 500).event != (uint32_t)-1)
		;			/* its DISCONNECTED */
}

/*
 * The active side's file closes while its request waits: its REJ (reason
 * 2, timeout) reaches the new id, which the process has not accepted
 * (ucma drops its events), and ACCEPT then fails.
 */
static void client_gone(int server)
{
	int client = open(RDMA_CM, O_RDWR);
	uint32_t active = active_id(client, 0xc5);
	struct rdma_ucm_event_resp ev;

	connect_id(client, active, 0x711, "");
	ev = next_event(server, 2000);
	CHECK(ev.event == EV_CONNECT_REQUEST, "CONNECT_REQUEST (event %u)",
	      ev.event);
	close(client);
	usleep(100000);
	CHECK(accept_id(server, ev.id, 0x78, 0x811, "") == -EINVAL &&
	      no_event(server, 100),
	      "the active side's file closed before ACCEPT: no event, ACCEPT fails (EINVAL)");
	destroy_id(server, ev.id);
}

/*
 * A hostile order: the passive side accepts the new id (its number is the
 * lowest free one) before it reads the request, then destroys the
 * listener, whose unread request takes the new id with it: its own
 * ESTABLISHED goes too, and the active side hears DISCONNECTED.
 */
static void accept_unread(int client)
{
	int server = open(RDMA_CM, O_RDWR);
	uint32_t listener = create_id(server, 0x5e), active, guess;
	struct rdma_ucm_event_resp ev;
	struct pollfd p = { server, POLLIN, 0 };

	listen_on(server, listener);
	active = active_id(client, 0xc4);
	guess = create_id(server, 1);
	destroy_id(server, guess);
	connect_id(client, active, 0x511, "");
	CHECK(poll(&p, 1, 2000) == 1 &&
	      !accept_id(server, guess, 0x77, 0x611, ""),
	      "ACCEPT of the new id before its CONNECT_REQUEST is read");
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_CONNECT_RESPONSE && !accept_id(client, active, 0, 0, ""),
	      "CONNECT_RESPONSE, ACCEPT (event %u)", ev.event);
	usleep(100000);		/* its ESTABLISHED is queued behind the request */
	CHECK(!destroy_id(server, listener) && no_event(server, 200),
	      "the listener destroyed: its request, the new id and its ESTABLISHED gone");
	ev = next_event(client, 2000);
	CHECK(ev.event == EV_DISCONNECTED,
	      "the active side hears DISCONNECTED (event %u)", ev.event);
	CHECK(destroy_id(server, guess) == -ENOENT, "the new id is gone");
	destroy_id(client, active);
	close(server);
}

/* LISTEN on @id again: 0 or -errno. */
static int listen_again(int fd, uint32_t id)
{
	struct rdma_ucm_listen l = { .id = id, .backlog = 8 };

	return ucm(fd, RDMA_USER_CM_CMD_LISTEN, &l, sizeof(l), 0);
}

/* The next event of @fd is DEVICE_REMOVAL for @id. */
static bool removal_of(int fd, uint32_t id)
{
	struct rdma_ucm_event_resp ev = next_event(fd, 2000);

	return ev.event == EV_DEVICE_REMOVAL && ev.id == id && !ev.status;
}

/*
 * The adapter fails (`mlx4sim fault fatal`, the command in $MLX4SIM) and
 * is reset: every id on it hears DEVICE_REMOVAL (a listener on every
 * device nothing), a connection's two ends no DISCONNECTED; then only
 * DESTROY_ID takes those ids (ENXIO), and the address and port are free
 * for a new listener.
 */
static void device_removal(int client)
{
	const char *mlx4sim = getenv("MLX4SIM");
	int server = open(RDMA_CM, O_RDWR);
	uint32_t listener = create_id(server, 0x5e), any, active, conn;
	struct sockaddr_in wild = server_addr;
	struct rdma_ucm_bind_ip b;
	char cmd[4096];

	if (!mlx4sim) {
		printf("ok %d - # SKIP the adapter's reset: $MLX4SIM names no mlx4sim\n",
		       ++tap_count);
		close(server);
		return;
	}
	listen_on(server, listener);
	conn = connected(server, client, &active);
	any = create_id(server, 0xa1);
	b = (struct rdma_ucm_bind_ip){ .id = any };
	wild.sin_addr.s_addr = INADDR_ANY;
	wild.sin_port = htons(ntohs(server_addr.sin_port) + 1);
	memcpy(&b.addr, &wild, sizeof(wild));
	if (ucm(server, RDMA_USER_CM_CMD_BIND_IP, &b, sizeof(b), 0) ||
	    listen_again(server, any))
		bail("a listener on every device");
	snprintf(cmd, sizeof(cmd), "'%s' fault fatal --hca 0", mlx4sim);
	CHECK(system(cmd) == 0, "mlx4sim fault fatal --hca 0");
	CHECK(removal_of(server, listener) && removal_of(server, conn),
	      "DEVICE_REMOVAL for the listener and the passive id");
	CHECK(removal_of(client, active), "DEVICE_REMOVAL for the active id");
	CHECK(no_event(server, 300) && no_event(client, 0),
	      "nothing more: no DISCONNECTED, nothing for the listener on every device");
	CHECK(listen_again(server, listener) == -ENXIO &&
	      listen_again(server, conn) == -ENXIO,
	      "LISTEN on the removed ids: ENXIO");
	CHECK(!destroy_id(server, listener) && !destroy_id(server, conn) &&
	      !destroy_id(client, active), "DESTROY_ID takes them");
	listener = create_id(server, 0x5f);
	listen_on(server, listener);
	CHECK(!destroy_id(server, listener) && !destroy_id(server, any),
	      "the reset device and the freed port take a new listener");
	close(server);
}

/* A thread in GET_EVENT on @fd: how its call ended, if it did. */
struct waiter {
	int fd;
	pid_t tid;
	int done;
	int err;
};

static void *wait_for_event(void *arg)
{
	struct waiter *w = arg;
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_get_event g = { .response = (uintptr_t)&ev };

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
	w->err = ucm(w->fd, RDMA_USER_CM_CMD_GET_EVENT, &g, sizeof(g),
		     sizeof(ev));
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Whether thread @tid sleeps (in its GET_EVENT's wait), within 5 s. */
static bool sleeping(pid_t tid)
{
	uint64_t end = now_ms() + 5000;

	while (proc_state(tid) != 'S' && now_ms() < end)
		usleep(10000);
	return proc_state(tid) == 'S';
}

/*
 * rping's connection thread waits in GET_EVENT while its main thread
 * destroys the id and closes the file.  The kernel's call holds the
 * file, which lives on until the call ends: it waits on, and an event
 * that reaches the file (here a connection request to its listener)
 * may end it, never an error.  The waiter is left waiting.
 */
static void closed_while_waiting(void)
{
	struct waiter w = { .fd = open(RDMA_CM, O_RDWR) };
	int client = open(RDMA_CM, O_RDWR);
	uint32_t listener, active;
	pthread_t thread;

	if (w.fd < 0 || client < 0)
		bail("open " RDMA_CM);
	listener = create_id(w.fd, 0x71);
	listen_on(w.fd, listener);
	if (pthread_create(&thread, NULL, wait_for_event, &w))
		bail("pthread_create");
	while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK(sleeping(w.tid), "a thread waits in GET_EVENT");
	close(w.fd);
	active = active_id(client, 0x72);
	connect_id(client, active, 0x3456, "");
	usleep(300000);
	CHECK(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) || !w.err,
	      "the file closed under it, then a request for its listener: no error (%s)",
	      __atomic_load_n(&w.done, __ATOMIC_ACQUIRE) ?
	      strerror(-w.err) : "still waiting");
	destroy_id(client, active);
	close(client);
	pthread_detach(thread);
}

int main(int argc, char **argv)
{
	int server, client;
	uint32_t listener;

	if (argc < 3)
		return 2;
	server_addr.sin_family = AF_INET;
	server_addr.sin_port = htons(atoi(argv[2]));
	inet_pton(AF_INET, argv[1], &server_addr.sin_addr);
	server = open(RDMA_CM, O_RDWR);
	client = open(RDMA_CM, O_RDWR);
	if (server < 0 || client < 0)
		bail("open " RDMA_CM);
	listener = create_id(server, 0x5e);
	listen_on(server, listener);
	rejected(server, client);
	disconnected(server, client);
	client_gone(server);
	slow_accept(server, client);
	destroy_id(server, listener);
	close(server);
	server_gone(client);
	server_gone_early(client);
	accept_unread(client);
	device_removal(client);
	close(client);
	closed_while_waiting();
	return tap_finish();
}

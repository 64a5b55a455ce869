/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim-hostile: a client of the mlx4sim daemon that breaks the preload's
 * protocol on purpose, talking to the daemon's socket directly.
 *
 *   sim-hostile empty-datagram   an empty request, then a real one: the
 *                                daemon must answer the second and keep
 *                                the connection
 *   sim-hostile flood SECONDS    requests sent without ever reading a
 *                                reply, the connection held open for
 *                                SECONDS: other processes must not stall
 *   sim-hostile ioctl            malformed verbs ioctls, through the
 *                                preload and on the socket: each gets
 *                                uverbs' errno, and good ones work after;
 *                                prints "ok DESCRIPTION" or "not ok ..."
 *                                a line each (the .tap numbers them)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "../../sim/host/protocol.h"

static int connect_daemon(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *dir = getenv(MLX4SIM_ENV_DIR);
	int fd;

	if (!dir) {
		fprintf(stderr, "sim-hostile: %s is not set\n", MLX4SIM_ENV_DIR);
		exit(1);
	}
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir,
		 MLX4SIM_SOCKET_NAME);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("sim-hostile: connect");
		exit(1);
	}
	return fd;
}

static void send_open(int fd, int flags)
{
	struct mlx4sim_request req = { .op = MLX4SIM_OP_OPEN, .arg = 0 };

	if (send(fd, &req, sizeof(req), flags) != sizeof(req) &&
	    !(flags & MSG_DONTWAIT)) {
		perror("sim-hostile: send");
		exit(1);
	}
}

/* The reply's ret, or exits when the daemon closed the connection. */
static int read_reply(int fd)
{
	struct mlx4sim_reply reply;
	ssize_t n = recv(fd, &reply, sizeof(reply), 0);

	if (n != sizeof(reply)) {
		fprintf(stderr, "sim-hostile: no reply (%zd: %s)\n", n,
			n < 0 ? strerror(errno) : "connection closed");
		exit(1);
	}
	return reply.ret;
}

static int empty_datagram(void)
{
	int fd = connect_daemon();
	int ret;

	send_open(fd, 0);
	if ((ret = read_reply(fd))) {
		fprintf(stderr, "sim-hostile: open uverbs0: %d\n", ret);
		return 1;
	}
	if (send(fd, "", 0, 0) != 0) {
		perror("sim-hostile: send empty");
		return 1;
	}
	/* The context is still there: a second open is refused, EINVAL. */
	send_open(fd, 0);
	ret = read_reply(fd);
	if (ret != -EINVAL) {
		fprintf(stderr, "sim-hostile: second open: %d, not -EINVAL\n",
			ret);
		return 1;
	}
	printf("the connection survived an empty datagram\n");
	return 0;
}

static int flood(int seconds)
{
	int fd = connect_daemon();
	int sent = 0;

	/* Fill the daemon's way back to us; stop when our side is full. */
	for (int i = 0; i < 100000; i++) {
		struct mlx4sim_request req = { .op = MLX4SIM_OP_OPEN };

		if (send(fd, &req, sizeof(req), MSG_DONTWAIT) != sizeof(req))
			break;
		sent++;
	}
	printf("sent %d requests without reading a reply\n", sent);
	fflush(stdout);
	sleep(seconds);
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Malformed verbs ioctls                                              */
/* ------------------------------------------------------------------ */

#define MAX_ATTRS	254	/* (PAGE_SIZE - header) / attribute */

struct call {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[MAX_ATTRS + 1];
};

static int failures;

static void report(bool ok, const char *what, int got, int want)
{
	if (ok)
		printf("ok %s\n", what);
	else
		printf("not ok %s (errno %d, not %d)\n", what, got, want);
	failures += !ok;
	fflush(stdout);
}

static void set_attr(struct ib_uverbs_attr *a, uint16_t id, uint16_t len,
		     uint64_t data)
{
	memset(a, 0, sizeof(*a));
	a->attr_id = id;
	a->len = len;
	a->data = data;
}

static void header(struct call *c, uint16_t method, uint16_t nattrs)
{
	memset(&c->hdr, 0, sizeof(c->hdr));
	c->hdr.length = sizeof(c->hdr) + nattrs * sizeof(c->attrs[0]);
	c->hdr.object_id = UVERBS_OBJECT_DEVICE;
	c->hdr.method_id = method;
	c->hdr.num_attrs = nattrs;
	c->hdr.driver_id = RDMA_DRIVER_MLX4;
}

/* QUERY_GID_ENTRY of port 1, index 0, into @out (@len bytes). */
static void gid_entry_call(struct call *c, void *out, uint16_t len)
{
	header(c, UVERBS_METHOD_QUERY_GID_ENTRY, 4);
	set_attr(&c->attrs[0], UVERBS_ATTR_QUERY_GID_ENTRY_PORT, 8, 1);
	set_attr(&c->attrs[1], UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, 8, 0);
	set_attr(&c->attrs[2], UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 8, 0);
	set_attr(&c->attrs[3], UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, len,
		 (uintptr_t)out);
}

/* QUERY_GID_TABLE of entries of @size into @out (@len bytes), count to @n. */
static void gid_table_call(struct call *c, uint64_t size, void *out,
			   uint16_t len, void *n)
{
	header(c, UVERBS_METHOD_QUERY_GID_TABLE, 4);
	set_attr(&c->attrs[0], UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, 8, size);
	set_attr(&c->attrs[1], UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 8, 0);
	set_attr(&c->attrs[2], UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, len,
		 (uintptr_t)out);
	set_attr(&c->attrs[3], UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, 8,
		 (uintptr_t)n);
}

/* The ioctl on @fd with the header at @arg: 0 or its errno. */
static int call_at(int fd, const void *arg)
{
	return ioctl(fd, RDMA_VERBS_IOCTL, arg) ? errno : 0;
}

static void expect(int fd, const void *arg, int want, const char *what)
{
	int got = call_at(fd, arg);

	report(got == want, what, got, want);
}

/* An OP_IOCTL request on the socket with @len bytes of payload. */
static int socket_ioctl(int fd, const void *payload, size_t len)
{
	struct {
		struct mlx4sim_request req;
		uint8_t payload[16];
	} msg = { .req = { .op = MLX4SIM_OP_IOCTL } };

	memcpy(msg.payload, payload, len);
	if (send(fd, &msg, sizeof(msg.req) + len, 0) < 0) {
		perror("sim-hostile: send");
		exit(1);
	}
	return -read_reply(fd);
}

static void socket_cases(void)
{
	struct ib_uverbs_gid_entry entry;
	int fd = connect_daemon();
	static struct call c;
	uint64_t addr = (uintptr_t)&c;
	int got;

	got = socket_ioctl(fd, &addr, sizeof(addr));
	report(got == EBADF, "socket: an ioctl before the open: EBADF", got,
	       EBADF);
	send_open(fd, 0);
	if (read_reply(fd)) {
		report(false, "socket: open uverbs0", 0, 0);
		return;
	}
	got = socket_ioctl(fd, &addr, 4);
	report(got == EINVAL, "socket: an ioctl payload of 4 bytes: EINVAL",
	       got, EINVAL);
	got = socket_ioctl(fd, &addr, 0);
	report(got == EINVAL, "socket: an ioctl with no payload: EINVAL",
	       got, EINVAL);
	got = socket_ioctl(fd, (uint64_t[]){ addr, addr }, 16);
	report(got == EINVAL, "socket: an ioctl payload of 16 bytes: EINVAL",
	       got, EINVAL);
	gid_entry_call(&c, &entry, sizeof(entry));
	got = socket_ioctl(fd, &addr, sizeof(addr));
	report(got == EINVAL,
	       "socket: QUERY_GID_ENTRY on a file with no context (no GET_CONTEXT): EINVAL",
	       got, EINVAL);
	close(fd);
}

/*
 * Where the hostile calls point: the device file, and a readable page, a
 * hole and a read-only page in a row.
 */
struct arena {
	int fd;
	long page;
	uint8_t *hole, *ro;
};

/* ib_uverbs_ioctl(): the header. */
static void header_cases(const struct arena *a, struct call *c)
{
	struct ib_uverbs_gid_entry entry;
	int fd = a->fd;

	expect(fd, NULL, EFAULT, "a NULL header: EFAULT");
	expect(fd, a->hole, EFAULT, "a header in unmapped memory: EFAULT");
	expect(fd, a->hole - 8, EFAULT,
	       "a header that runs into unmapped memory: EFAULT");
	expect(fd, (void *)(uintptr_t)0xffff800000000000ULL, EFAULT,
	       "a header at a kernel address: EFAULT");
	gid_entry_call(c, &entry, sizeof(entry));
	c->hdr.length += 16;
	expect(fd, c, EINVAL, "a length one attribute longer than num_attrs says: EINVAL");
	c->hdr.length -= 17;
	expect(fd, c, EINVAL, "a length one byte short: EINVAL");
	header(c, UVERBS_METHOD_QUERY_GID_ENTRY, 0xffff);
	expect(fd, c, EINVAL, "num_attrs 65535 (its length does not fit 16 bits): EINVAL");
	header(c, UVERBS_METHOD_QUERY_GID_ENTRY, MAX_ATTRS + 1);
	expect(fd, c, EINVAL, "255 attributes: longer than a page, EINVAL");
	gid_entry_call(c, &entry, sizeof(entry));
	c->hdr.reserved1 = 1;
	expect(fd, c, EPROTONOSUPPORT, "reserved1 not zero: EPROTONOSUPPORT");
	c->hdr.reserved1 = 0;
	c->hdr.reserved2 = 0x80000000;
	expect(fd, c, EPROTONOSUPPORT, "reserved2 not zero: EPROTONOSUPPORT");
	c->hdr.reserved2 = 0;
	c->hdr.driver_id = RDMA_DRIVER_MLX5;
	expect(fd, c, EINVAL, "another driver's id: EINVAL");
	gid_entry_call(c, &entry, sizeof(entry));
	c->hdr.object_id = 0xffff;
	expect(fd, c, EPROTONOSUPPORT, "an unknown object: EPROTONOSUPPORT");
	gid_entry_call(c, &entry, sizeof(entry));
	c->hdr.method_id = 0x7fff;
	expect(fd, c, EPROTONOSUPPORT, "an unknown method: EPROTONOSUPPORT");
}

/* The attribute array. */
static void attribute_cases(const struct arena *a, struct call *c)
{
	struct ib_uverbs_gid_entry entry;
	struct call *edge;
	int fd = a->fd;

	edge = (struct call *)(a->hole - sizeof(c->hdr));
	gid_entry_call(c, &entry, sizeof(entry));
	memcpy(edge, &c->hdr, sizeof(c->hdr));
	expect(fd, edge, EFAULT, "attributes in unmapped memory: EFAULT");
	edge = (struct call *)(a->hole - sizeof(c->hdr) - 2 * sizeof(c->attrs[0]));
	memcpy(edge, c, sizeof(c->hdr) + 2 * sizeof(c->attrs[0]));
	expect(fd, edge, EFAULT, "attributes that run into unmapped memory: EFAULT");
	gid_entry_call(c, &entry, sizeof(entry));
	for (int i = 4; i < MAX_ATTRS; i++)
		set_attr(&c->attrs[i], 1000 + i, 8, i);
	header(c, UVERBS_METHOD_QUERY_GID_ENTRY, MAX_ATTRS);
	expect(fd, c, 0, "254 attributes, 250 of them unknown and optional: served");
	c->attrs[MAX_ATTRS - 1].flags = UVERBS_ATTR_F_MANDATORY;
	expect(fd, c, EPROTONOSUPPORT,
	       "an unknown attribute marked mandatory: EPROTONOSUPPORT");
	gid_entry_call(c, &entry, sizeof(entry));
	c->attrs[1].attr_data.reserved = 1;
	expect(fd, c, EINVAL, "an attribute's reserved field not zero: EINVAL");
	gid_entry_call(c, &entry, sizeof(entry));
	c->attrs[2] = c->attrs[1];
	expect(fd, c, EINVAL, "an attribute twice: EINVAL");
	gid_entry_call(c, &entry, sizeof(entry));
	c->hdr.num_attrs = 3;
	c->hdr.length -= sizeof(c->attrs[0]);
	expect(fd, c, EINVAL, "a mandatory attribute missing: EINVAL");
	gid_entry_call(c, &entry, sizeof(entry));
	c->attrs[0].len = 4;
	expect(fd, c, EINVAL, "a port attribute of 4 bytes: EINVAL");
	gid_entry_call(c, &entry, sizeof(entry));
	c->attrs[2].data = 1;
	expect(fd, c, EINVAL, "a flag set: EINVAL");
	gid_entry_call(c, &entry, sizeof(entry) - 1);
	expect(fd, c, EINVAL, "an entry buffer shorter than the entry: EINVAL");
}

/*
 * Where the outputs go: false when the read-only page cannot be made
 * writable for a moment, to lay the attributes in it.
 */
static bool output_cases(const struct arena *a, struct call *c)
{
	struct ib_uverbs_gid_entry entry;
	struct call *edge;
	int fd = a->fd;

	gid_entry_call(c, a->hole, sizeof(entry));
	expect(fd, c, EFAULT, "an entry pointer to unmapped memory: EFAULT");
	gid_entry_call(c, a->ro, sizeof(entry));
	expect(fd, c, EFAULT, "an entry pointer to read-only memory: EFAULT");
	gid_entry_call(c, a->hole - 8, sizeof(entry));
	expect(fd, c, EFAULT, "an entry buffer that runs into unmapped memory: EFAULT");
	gid_entry_call(c, a->hole - 16, sizeof(entry) + 64);
	expect(fd, c, EFAULT,
	       "an entry buffer whose zeroed tail runs into unmapped memory: EFAULT");
	/* The attribute array read-only: VALID_OUTPUT cannot be written. */
	edge = (struct call *)a->ro;
	if (mprotect(a->ro, a->page, PROT_READ | PROT_WRITE))
		return false;
	gid_entry_call(edge, &entry, sizeof(entry));
	if (mprotect(a->ro, a->page, PROT_READ))
		return false;
	expect(fd, edge, EFAULT,
	       "attributes in read-only memory (VALID_OUTPUT not writable): EFAULT");
	return true;
}

/* QUERY_GID_TABLE: the count of entries a well-formed call gives. */
static uint64_t table_cases(const struct arena *a, struct call *c)
{
	struct ib_uverbs_gid_entry entry, table[64];
	uint64_t n = 0;
	int fd = a->fd;

	gid_table_call(c, sizeof(entry), table, sizeof(table), &n);
	expect(fd, c, 0, "a well-formed QUERY_GID_TABLE works");
	report(n > 0 && n <= 64, "and reports its entries", (int)n, 0);
	gid_table_call(c, sizeof(entry), table, 2 * sizeof(entry) + 1, &n);
	expect(fd, c, EINVAL,
	       "a table buffer not a multiple of the entry size: EINVAL");
	gid_table_call(c, 0, table, sizeof(table), &n);
	expect(fd, c, EINVAL, "an entry size of 0: EINVAL");
	gid_table_call(c, 1ULL << 63, table, sizeof(table), &n);
	expect(fd, c, EINVAL, "an entry size of 2^63: EINVAL");
	gid_table_call(c, sizeof(entry), table, 0, &n);
	expect(fd, c, EINVAL, "a table buffer of no length: EINVAL");
	gid_table_call(c, 1, table, 65535, &n);
	expect(fd, c, 0, "entries of 1 byte into 65535: served");
	gid_table_call(c, sizeof(entry), a->hole, sizeof(table), &n);
	expect(fd, c, EFAULT, "a table pointer to unmapped memory: EFAULT");
	gid_table_call(c, sizeof(entry), table, sizeof(table), a->ro);
	expect(fd, c, EFAULT, "a count pointer to read-only memory: EFAULT");
	gid_table_call(c, sizeof(entry), table, sizeof(table), a->hole);
	expect(fd, c, EFAULT, "a count pointer to unmapped memory: EFAULT");
	return n;
}

static int hostile_ioctls(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) :
				  NULL;
	struct arena a = { .page = sysconf(_SC_PAGESIZE) };
	struct ib_uverbs_gid_entry entry;
	struct ibv_gid_entry entries[64];
	static struct call c;
	uint8_t *pages;
	uint64_t n;
	ssize_t got;

	if (!ctx) {
		printf("not ok open the first device\n");
		return 1;
	}
	a.fd = ctx->cmd_fd;
	/* A readable page, a hole, a read-only page. */
	pages = mmap(NULL, 3 * a.page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || mprotect(pages + a.page, a.page, PROT_NONE) ||
	    mprotect(pages + 2 * a.page, a.page, PROT_READ)) {
		perror("sim-hostile: mmap");
		return 1;
	}
	a.hole = pages + a.page;
	a.ro = pages + 2 * a.page;

	gid_entry_call(&c, &entry, sizeof(entry));
	expect(a.fd, &c, 0, "a well-formed QUERY_GID_ENTRY works");
	report(c.attrs[3].flags & UVERBS_ATTR_F_VALID_OUTPUT,
	       "and marks its output VALID_OUTPUT", 0, 0);
	header_cases(&a, &c);
	attribute_cases(&a, &c);
	if (!output_cases(&a, &c))
		return 1;
	n = table_cases(&a, &c);

	/* The daemon is still there, and the verbs work. */
	got = ibv_query_gid_table(ctx, entries, 64, 0);
	report(got == (ssize_t)n, "ibv_query_gid_table works after, with the count the ioctl gave",
	       (int)got, (int)n);
	socket_cases();
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "empty-datagram"))
		return empty_datagram();
	if (argc == 3 && !strcmp(argv[1], "flood"))
		return flood(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "ioctl"))
		return hostile_ioctls();
	fprintf(stderr, "usage: sim-hostile empty-datagram | flood SECONDS | ioctl\n");
	return 2;
}

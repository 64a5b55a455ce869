/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /dev/infiniband/rdma_cm at its ABI, as a hostile program meets it: the
 * write(2) header's checks and their errnos (ucma_write()), responses
 * that point nowhere, ids of another file or of none, GET_EVENT on an
 * O_NONBLOCK file, poll() seeing the file's events, read(), and a stream
 * of garbage commands, after which the daemon still serves a new file.
 * Usage: rdmacm-abi ADDRESS (an IPv4 address of a simulated port).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "../tap.h"

#define RDMA_CM	"/dev/infiniband/rdma_cm"

/* One command: the header, then @body; write(2)'s result and errno. */
static int cmd(int fd, uint32_t op, const void *body, uint16_t in,
	       uint16_t out, int *err)
{
	struct {
		struct rdma_ucm_cmd_hdr hdr;
		uint8_t body[512];
	} msg = { { op, in, out } };
	ssize_t n;

	if (in > sizeof(msg.body))
		return *err = E2BIG, -1;	/* a test's mistake */
	if (in)
		memcpy(msg.body, body, in);
	n = write(fd, &msg, sizeof(msg.hdr) + in);
	*err = n < 0 ? errno : 0;
	return n < 0 ? -1 : 0;
}

static int create_id(int fd, uint64_t uid, uint16_t ps, uint32_t *id)
{
	struct rdma_ucm_create_id c = { .uid = uid, .ps = ps };
	struct rdma_ucm_create_id_resp resp;
	int err;

	c.response = (uintptr_t)&resp;
	if (cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), sizeof(resp),
		&err))
		return -err;
	*id = resp.id;
	return 0;
}

static void header_checks(int fd)
{
	struct {
		struct rdma_ucm_cmd_hdr hdr;
		uint8_t body[8];
	} m = { { RDMA_USER_CM_CMD_CREATE_ID, 0, 0 } };
	struct rdma_ucm_create_id c = { .ps = RDMA_PS_TCP };
	int err;

	CHECK(write(fd, &m, 4) < 0 && errno == EINVAL,
	      "a write shorter than the header: EINVAL");
	CHECK(cmd(fd, 99, NULL, 0, 0, &err) && err == EINVAL,
	      "a command past the table: EINVAL");
	CHECK(cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, NULL, 0, 0, &err) &&
	      err == ENOSYS, "GET_OPTION, which ucma does not serve: ENOSYS");
	m.hdr.in = 200;
	CHECK(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "a header whose in reaches past the write: EINVAL");
	CHECK(cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), 2, &err) &&
	      err == ENOSPC, "CREATE_ID with no room for its response: ENOSPC");
	c.response = 8;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), 4, &err) &&
	      err == EFAULT, "CREATE_ID whose response points nowhere: EFAULT");
	c.response = 0;
	c.ps = 0x1234;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), 4, &err) &&
	      err == EINVAL, "CREATE_ID of an unknown port space: EINVAL");
	CHECK(read(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "read() of the file: EINVAL (ucma has no read)");
}

static void id_checks(int fd, int other)
{
	struct rdma_ucm_destroy_id d = { .id = 1000000 };
	struct rdma_ucm_destroy_id_resp dresp;
	struct rdma_ucm_bind_ip b = { .addr.sin6_family = AF_INET };
	struct rdma_ucm_connect conn = {};
	uint32_t mine, theirs, again;
	int err;

	CHECK(!create_id(fd, 1, RDMA_PS_TCP, &mine) &&
	      !create_id(other, 2, RDMA_PS_TCP, &theirs) && mine != theirs,
	      "ids are numbered among every file");
	d.response = (uintptr_t)&dresp;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), 4, &err) &&
	      err == ENOENT, "DESTROY_ID of no id: ENOENT");
	b.id = theirs;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_BIND_IP, &b, sizeof(b), 0, &err) &&
	      err == EINVAL, "BIND_IP of another file's id: EINVAL");
	d.id = theirs;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), 4, &err) &&
	      err == EINVAL, "DESTROY_ID of another file's id: EINVAL");
	conn.id = mine;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_CONNECT, &conn, sizeof(conn), 0, &err) &&
	      err == EINVAL, "CONNECT without valid parameters: EINVAL");
	conn.conn_param.valid = 1;
	CHECK(cmd(fd, RDMA_USER_CM_CMD_CONNECT, &conn, sizeof(conn), 0, &err) &&
	      err == EINVAL, "CONNECT of an id bound to no device: EINVAL");
	d.id = mine;
	CHECK(!cmd(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), 4, &err) &&
	      !create_id(fd, 3, RDMA_PS_TCP, &again) && again == mine,
	      "a destroyed id's number is the lowest free again");
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void event_checks(int fd, const char *address)
{
	struct rdma_ucm_resolve_ip r = { .timeout_ms = 2000 };
	struct sockaddr_in *dst = (struct sockaddr_in *)&r.dst_addr;
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_get_event g = { .response = (uintptr_t)&ev };
	uint32_t id;
	int err;

	fcntl(fd, F_SETFL, O_RDWR | O_NONBLOCK);
	CHECK(!readable(fd, 0) &&
	      cmd(fd, RDMA_USER_CM_CMD_GET_EVENT, &g, sizeof(g), sizeof(ev),
		  &err) && err == EAGAIN,
	      "no event: not readable, GET_EVENT on O_NONBLOCK is EAGAIN");
	CHECK(cmd(fd, RDMA_USER_CM_CMD_GET_EVENT, &g, sizeof(g), 8, &err) &&
	      err == ENOSPC, "GET_EVENT with too little room: ENOSPC");
	if (create_id(fd, 0x1234, RDMA_PS_TCP, &id))
		bail("CREATE_ID");
	r.id = id;
	dst->sin_family = AF_INET;
	inet_pton(AF_INET, address, &dst->sin_addr);
	CHECK(!cmd(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &r, sizeof(r), 0, &err),
	      "RESOLVE_IP %s", address);
	CHECK(readable(fd, 2000), "its event makes the file readable");
	memset(&ev, 0, sizeof(ev));
	CHECK(!cmd(fd, RDMA_USER_CM_CMD_GET_EVENT, &g, sizeof(g), sizeof(ev),
		   &err) && ev.event == 0 && ev.uid == 0x1234 && ev.id == id &&
	      !ev.status, "GET_EVENT: ADDR_RESOLVED for the id, with its uid (event %u status %d)",
	      ev.event, ev.status);
	CHECK(!readable(fd, 0), "read, the file is not readable any more");
	fcntl(fd, F_SETFL, O_RDWR);
}

/* Garbage: random commands, lengths and bytes; the daemon must stand. */
static void garbage(int fd, unsigned int seed)
{
	uint8_t buf[600];
	int other;
	uint32_t id;

	fcntl(fd, F_SETFL, O_RDWR | O_NONBLOCK);
	srandom(seed);
	for (int i = 0; i < 3000; i++) {
		struct rdma_ucm_cmd_hdr *hdr = (void *)buf;
		size_t len = random() % sizeof(buf);

		for (size_t j = 0; j < sizeof(buf); j++)
			buf[j] = random();
		hdr->cmd = random() % 26;
		hdr->in = random() % 2 ? (long)len - (long)sizeof(*hdr) :
					  random() % 600;
		hdr->out = random() % 600;
		if (write(fd, buf, len) < 0 && errno == EIO)
			break;
	}
	other = open(RDMA_CM, O_RDWR);
	CHECK(other >= 0 && !create_id(other, 7, RDMA_PS_UDP, &id),
	      "after 3000 garbage commands (seed %u) the daemon serves a new file",
	      seed);
	if (other >= 0)
		close(other);
}

int main(int argc, char **argv)
{
	struct stat st;
	int fd, other;

	if (argc < 2)
		return 2;
	fd = open(RDMA_CM, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		bail("open " RDMA_CM);
	CHECK(!fstat(fd, &st) && S_ISCHR(st.st_mode) && major(st.st_rdev) == 10,
	      "the file is a misc character device");
	other = open(RDMA_CM, O_RDWR);
	if (other < 0)
		bail("open " RDMA_CM " again");
	header_checks(fd);
	id_checks(fd, other);
	event_checks(fd, argv[1]);
	close(other);
	garbage(fd, argc > 2 ? (unsigned int)atoi(argv[2]) :
				 (unsigned int)getpid());
	close(fd);
	return tap_finish();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The umad ABI as the kernel's ib_umad answers it, on a simulated host
 * with two adapters: the files and their numbers, agents registered and
 * refused, MADs sent and answered (the adapter's SMA, the switch's),
 * timeouts and retries, the issm file, and a client that writes garbage,
 * lies about lengths and agents, and harms nobody.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <rdma/ib_user_mad.h>

#include <sys/socket.h>
#include <sys/un.h>

#include "../tap.h"
#include "../../sim/host/protocol.h"

#define HDR		sizeof(struct ib_user_mad_hdr)
#define MAD		256
#define NO_LID		40		/* no port has it */

struct umad {
	struct ib_user_mad_hdr hdr;
	uint8_t mad[MAD];
};

/* Big-endian fields of a MAD, wherever they lie. */
static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static int open_umad(int n, int flags)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/infiniband/umad%d", n);
	return open(path, O_RDWR | flags);
}

/* libibumad's way: the P_Key header first, then an agent. */
static int agent(int fd, uint8_t qpn, uint8_t mgmt_class, uint8_t version,
		 uint32_t oui, uint64_t methods)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = qpn, .mgmt_class = mgmt_class,
		.mgmt_class_version = version, .oui = oui,
		.method_mask = { methods, 0 },
	};

	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		return -errno;
	return req.id;
}

static void smp_get(struct umad *m, int id, uint16_t lid, uint16_t attr,
		    uint32_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.id = id;
	m->hdr.lid = htobe16(lid);
	m->hdr.qpn = 0;
	m->hdr.timeout_ms = 1000;
	m->mad[0] = 1;			/* base version */
	m->mad[1] = 0x01;		/* LID-routed SMP */
	m->mad[2] = 1;
	m->mad[3] = 0x01;		/* Get */
	*(uint32_t *)(m->mad + 12) = htobe32(tid);
	*(uint16_t *)(m->mad + 16) = htobe16(attr);
}

/* A directed-route SMP along @path (hop count @hops). */
static void dr_get(struct umad *m, int id, const uint8_t *path, int hops,
		   uint16_t attr, uint32_t tid)
{
	smp_get(m, id, 0xffff, attr, tid);
	m->mad[1] = 0x81;
	m->mad[7] = hops;
	*(uint16_t *)(m->mad + 32) = 0xffff;	/* DrSLID */
	*(uint16_t *)(m->mad + 34) = 0xffff;	/* DrDLID */
	memcpy(m->mad + 128, path, hops + 1);
}

static ssize_t read_wait(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	if (poll(&p, 1, ms) != 1)
		return -ETIME;
	return read(fd, buf, len) < 0 ? -errno : (ssize_t)len;
}

static uint64_t sysfs_guid(const char *path)
{
	unsigned int a, b, c, d;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%x:%x:%x:%x", &a, &b, &c, &d);
	fclose(f);
	return n == 4 ? (uint64_t)a << 48 | (uint64_t)b << 32 | c << 16 | d : 0;
}

static unsigned int sysfs_hex(const char *path)
{
	unsigned int v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%x", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* An ordinary user's open of a umad file: EACCES, as mode 0600 says. */
static void not_root_refused(void)
{
	int status = -1;
	pid_t pid;

	if (geteuid() != 0) {
		check(1, "# SKIP not root: an ordinary user's open is refused");
		return;
	}
	/* The run directory open to all, so that the name resolves. */
	chmod(getenv("MLX4SIM_DIR"), 0755);
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		_exit(open_umad(0, 0) < 0 && errno == EACCES ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	chmod(getenv("MLX4SIM_DIR"), 0700);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "an ordinary user's open of umad0: EACCES (%d)", status);
}

static void files(void)
{
	struct stat st;
	int fd = open_umad(3, 0);

	CHECK(fd >= 0, "umad3 opens (the 4th port: mlx4_1 port 2)");
	CHECK(!fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	      major(st.st_rdev) == 231 && minor(st.st_rdev) == 3,
	      "fstat: a character device 231:3");
	close(fd);
	CHECK(!stat("/dev/infiniband/issm1", &st) && minor(st.st_rdev) == 65,
	      "issm1 is 231:65");
	CHECK(open_umad(4, 0) < 0 && errno == ENOENT,
	      "umad4: no such file on a host of four ports");
	CHECK(sysfs_hex("/sys/class/infiniband_mad/abi_version") == 5,
	      "class infiniband_mad: abi_version 5");
	CHECK(!stat("/dev/infiniband/umad0", &st) &&
	      (st.st_mode & 0777) == 0600 && st.st_uid == 0,
	      "umad0 is root's alone, mode 0600 (0%o)", st.st_mode & 0777);
	not_root_refused();
}

static void registration(void)
{
	struct ib_user_mad_reg_req old = { .qpn = 1, .mgmt_class = 0x04,
					   .mgmt_class_version = 1 };
	struct ib_user_mad_reg_req2 req2 = { .qpn = 1, .flags = 0x80 };
	int fd = open_umad(0, 0), other = open_umad(1, 0), same = open_umad(0, 0);
	uint32_t id = 99;
	int i, n;

	CHECK(agent(fd, 2, 0, 0, 0, 0) == -EINVAL, "QPN 2: EINVAL");
	CHECK(agent(fd, 1, 0x60, 1, 0, 0) == -EINVAL, "class 0x60: EINVAL");
	CHECK(agent(fd, 1, 0x32, 1, 0, 2) == -EINVAL,
	      "a vendor class of the second range without an OUI: EINVAL");
	CHECK(agent(fd, 1, 0x01, 1, 0, 0) == -EINVAL,
	      "a subnet management class on QP1: EINVAL");
	CHECK(agent(fd, 0, 0x04, 1, 0, 0) == -EINVAL,
	      "performance management on QP0: EINVAL");
	CHECK(agent(fd, 1, 0x04, 8, 0, 0) == -EINVAL, "class version 8: EINVAL");
	CHECK(agent(fd, 1, 0x07, 2, 0, 1u << 3) == -EINVAL,
	      "the CM class's SEND: ib_cm's agent holds it on every port, EINVAL");
	CHECK(ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req2) && errno == EINVAL &&
	      req2.flags == IB_USER_MAD_USER_RMPP,
	      "unknown flags: EINVAL, and the flags the kernel knows written back");
	CHECK(ioctl(fd, IB_USER_MAD_REGISTER_AGENT, (void *)8) && errno == EFAULT,
	      "a register ioctl at a bad address: EFAULT");
	CHECK(ioctl(fd, _IO(0x1b, 9)) && errno == ENOTTY, "an unknown ioctl: ENOTTY");
	CHECK(ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) && errno == EINVAL,
	      "unregistering agent 99: EINVAL");
	CHECK(agent(fd, 1, 0x32, 1, 0x001405, 1u << 1) == 0,
	      "a vendor class agent (ibping's) is agent 0");
	CHECK(agent(same, 1, 0x32, 1, 0x001405, 1u << 1) == -EINVAL,
	      "another file of the port: the same method of the class is EINVAL");
	CHECK(agent(other, 1, 0x32, 1, 0x001405, 1u << 1) == 0,
	      "on another port the same method registers");
	CHECK(ioctl(fd, IB_USER_MAD_ENABLE_PKEY) && errno == EINVAL,
	      "ENABLE_PKEY after an agent: EINVAL");
	CHECK(ioctl(other, IB_USER_MAD_REGISTER_AGENT, &old) == 0 && old.id == 1,
	      "the old register ioctl: agent 1");
	for (i = 0, n = 0; i < 40; i++)
		n += agent(fd, 1, 0, 0, 0, 0) >= 0;
	CHECK(n == 31 && agent(fd, 1, 0, 0, 0, 0) == -ENOMEM,
	      "32 agents a file, then ENOMEM (%d more registered)", n);
	id = 5;
	CHECK(!ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) &&
	      ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) && errno == EINVAL,
	      "an agent unregisters once");
	close(fd);
	close(other);
	close(same);
	fd = open_umad(0, 0);
	CHECK(agent(fd, 1, 0x32, 1, 0x001405, 1u << 1) == 0,
	      "a closed file's agents are gone: the method registers again");
	close(fd);
}

/* Writes that ib_umad_write refuses. */
static void bad_writes(int fd, int smi)
{
	uint8_t path[4] = { 0, 2 }, longer[HDR + MAD + 8] = {};
	struct umad m;
	void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	smp_get(&m, smi, 2, 0x11, 1);
	CHECK(write(fd, &m, HDR + 35) < 0 && errno == EINVAL,
	      "a write shorter than the header and 36 bytes: EINVAL");
	m.hdr.id = 40;
	CHECK(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "agent 40: EINVAL");
	m.hdr.id = 7;
	CHECK(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "an agent the file does not have: EINVAL");
	CHECK(write(fd, none, sizeof(m)) < 0 && errno == EFAULT,
	      "a buffer that cannot be read: EFAULT");
	smp_get(&m, smi, 2, 0x11, 1);
	memcpy(longer, &m, sizeof(m));
	CHECK(write(fd, longer, sizeof(longer)) < 0 && errno == EINVAL,
	      "a MAD longer than 256 bytes, no RMPP: EINVAL");
	dr_get(&m, smi, path, 1, 0x11, 2);
	CHECK(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "a directed route whose first hop is not the file's port: EINVAL");
	dr_get(&m, smi, path, 1, 0x11, 2);
	m.mad[7] = 64;
	CHECK(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "a directed route of 64 hops: EINVAL");
	munmap(none, 4096);
}

static void sends(void)
{
	int fd = open_umad(0, O_NONBLOCK), smi, gsi;
	uint32_t dup;
	uint8_t path[4] = { 0, 1, 3 };
	struct umad m, r;
	ssize_t n;

	smi = agent(fd, 0, 0x01, 1, 0, 0);
	gsi = agent(fd, 1, 0x04, 1, 0, 0);
	CHECK(smi == 0 && gsi == 1, "SMI and GSI agents registered");
	CHECK(read(fd, &r, sizeof(r)) < 0 && errno == EAGAIN,
	      "O_NONBLOCK, nothing queued: EAGAIN");
	CHECK(read(fd, &r, HDR - 1) < 0 && errno == EINVAL,
	      "a read shorter than the header: EINVAL");
	bad_writes(fd, smi);

	dup = agent(fd, 0, 0x81, 1, 0, 0);
	smp_get(&m, dup, NO_LID, 0x11, 6);
	m.hdr.timeout_ms = 100000;
	CHECK(write(fd, &m, sizeof(m)) == sizeof(m) &&
	      write(fd, &m, sizeof(m)) < 0 && errno == EINVAL,
	      "the same TID again while the first waits: EINVAL");
	CHECK(!ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &dup),
	      "its agent unregisters, and its request waits no more");
	smp_get(&m, smi, 4, 0x11, 7);	/* NodeInfo of mlx4_1 port 1 */
	CHECK(write(fd, &m, sizeof(m)) == sizeof(m), "a NodeInfo Get is written");
	n = read_wait(fd, &r, HDR + 100, 2000);
	CHECK(n == -EINVAL, "a buffer too small for the answer: EINVAL (%zd)", n);
	n = read_wait(fd, &r, sizeof(r), 2000);
	CHECK(n == sizeof(r) && r.mad[3] == 0x81 && r.hdr.status == 0 &&
	      r.hdr.id == (uint32_t)smi && be16toh(r.hdr.lid) == 4 &&
	      r.hdr.length == sizeof(r),
	      "the answer stayed: a GetResp from LID 4 to agent %d", smi);
	CHECK(get64(r.mad + 64 + 12) ==
	      sysfs_guid("/sys/class/infiniband/mlx4_1/node_guid") &&
	      r.mad[64 + 36] == 1 && get32(r.mad + 12) == 7,
	      "NodeInfo: mlx4_1's node GUID, local port 1, our TID's low half");

	dr_get(&m, smi, path, 2, 0x11, 8);	/* through the switch to its port 3 */
	write(fd, &m, sizeof(m));
	n = read_wait(fd, &r, sizeof(r), 2000);
	CHECK(n > 0 && (get16(r.mad + 4) & 0x8000) &&
	      get64(r.mad + 64 + 20) ==
	      sysfs_guid("/sys/class/infiniband/mlx4_1/node_guid") + 1,
	      "directed route 0,1,3: mlx4_1 port 1 answers, the D bit set");
	CHECK(r.mad[192 + 1] == 1 && r.mad[192 + 2] == 1,
	      "the return path: in by switch port 1, then by mlx4_1's port 1");

	smp_get(&m, smi, NO_LID, 0x11, 9);
	m.hdr.timeout_ms = 50;
	m.hdr.retries = 2;
	write(fd, &m, sizeof(m));
	{
		struct timespec a, b;
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &a);
		n = read_wait(fd, &r, sizeof(r), 3000);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
		CHECK(n > 0 && r.hdr.status == ETIMEDOUT && ms >= 140 && ms < 1000,
		      "no port at LID %d: ETIMEDOUT after 3 tries of 50 ms (%ld ms)",
		      NO_LID, ms);
	}
	CHECK(r.hdr.retries == 2 && r.mad[3] == 0x01 && r.mad[16] == 0 &&
	      r.mad[17] == 0x11, "it comes back as sent, its MAD header only");

	memset(&m, 0, sizeof(m));	/* PortCounters of our own port */
	m.hdr.id = gsi;
	m.hdr.lid = htobe16(2);
	m.hdr.qpn = htobe32(1);
	m.hdr.timeout_ms = 1000;
	m.mad[0] = 1; m.mad[1] = 0x04; m.mad[2] = 1; m.mad[3] = 0x01;
	m.mad[17] = 0x12;
	m.mad[64 + 1] = 1;
	write(fd, &m, sizeof(m));
	n = read_wait(fd, &r, sizeof(r), 2000);
	CHECK(n > 0 && r.mad[3] == 0x81 && r.hdr.status == 0 &&
	      get32(r.mad + 64 + 32) > 0,
	      "the PMA: PortCounters of port 1, its PortXmitPkts counted (%u)",
	      get32(r.mad + 64 + 32));
	close(fd);
}

/* A NodeInfo Get from file @g to @lid is answered: @what. */
static void still_answered(int g, uint16_t lid, const char *what)
{
	struct umad m, r;
	ssize_t n;

	smp_get(&m, agent(g, 0, 0x01, 1, 0, 0), lid, 0x11, 1);
	write(g, &m, sizeof(m));
	n = read_wait(g, &r, sizeof(r), 2000);
	CHECK(n > 0 && r.mad[3] == 0x81 && r.hdr.status == 0, "%s", what);
}

/* A client writing noise: errors, never a crash; others go on. */
static void garbage(void)
{
	int fd = open_umad(1, O_NONBLOCK), g = open_umad(2, O_NONBLOCK);
	unsigned int seed = 12345, refused = 0;
	uint8_t buf[HDR + MAD + 64];
	struct umad r;

	agent(fd, 0, 0x81, 1, 0, 0);
	agent(fd, 1, 0x03, 2, 0, 0);
	for (int i = 0; i < 2000; i++) {
		size_t len = rand_r(&seed) % sizeof(buf);

		for (size_t k = 0; k < len; k++)
			buf[k] = rand_r(&seed);
		buf[0] = rand_r(&seed) % 3;	/* agent 0, 1 or none */
		buf[1] = buf[2] = buf[3] = 0;
		refused += write(fd, buf, len) < 0;
		while (read(fd, &r, sizeof(r)) > 0)
			;
	}
	CHECK(refused > 0, "2000 writes of noise: %u refused, none fatal", refused);
	still_answered(g, 3, "another file still gets its answers");
	close(fd);
	close(g);
}

static void issm(void)
{
	const char *cap = "/sys/class/infiniband/mlx4_0/ports/1/cap_mask";
	int a = open("/dev/infiniband/issm0", O_RDWR), b;
	char c;

	CHECK(a >= 0 && (sysfs_hex(cap) & 2), "issm0 held: IsSM in cap_mask (0x%x)",
	      sysfs_hex(cap));
	b = open("/dev/infiniband/issm0", O_RDWR | O_NONBLOCK);
	CHECK(b < 0 && errno == EAGAIN, "a second open, O_NONBLOCK: EAGAIN");
	CHECK(read(a, &c, 1) < 0 && errno == EINVAL, "issm has no read: EINVAL");
	CHECK(write(a, &c, 1) < 0 && errno == EINVAL, "nor write: EINVAL");
	CHECK(ioctl(a, IB_USER_MAD_ENABLE_PKEY) < 0 && errno == ENOTTY,
	      "nor ioctls: ENOTTY");
	close(a);
	b = open("/dev/infiniband/issm0", O_RDWR | O_NONBLOCK);
	CHECK(b >= 0 && (sysfs_hex(cap) & 2), "closed, it opens again");
	close(b);
	CHECK(!(sysfs_hex(cap) & 2), "and closed, IsSM is clear (0x%x)",
	      sysfs_hex(cap));
}

/* A connection of our own to the daemon, past the library. */
static int raw_connect(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int s;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s",
		 getenv("MLX4SIM_DIR"), MLX4SIM_SOCKET_NAME);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || !connect(s, (void *)&addr, sizeof(addr)))
		return s;
	close(s);
	return -1;
}

/* One request; the reply's ret, or -EPIPE when the daemon hung up. */
static int raw_request(int s, uint32_t op, uint32_t arg, const void *payload,
		       size_t len)
{
	uint8_t buf[sizeof(struct mlx4sim_request) + 512];
	struct mlx4sim_request req = { op, arg };
	struct mlx4sim_reply reply;
	ssize_t n;

	memcpy(buf, &req, sizeof(req));
	if (len)
		memcpy(buf + sizeof(req), payload, len);
	if (send(s, buf, sizeof(req) + len, MSG_NOSIGNAL) < 0)
		return -EPIPE;
	n = recv(s, buf, sizeof(buf), 0);
	if (n < (ssize_t)sizeof(reply))
		return -EPIPE;
	memcpy(&reply, buf, sizeof(reply));
	return reply.ret;
}

/* The protocol's umad requests, lied about, as a hostile client may. */
static void raw_requests(void)
{
	uint8_t junk[512] = { 1, 2, 3 };
	unsigned int seed = 777, answered = 0;
	int s = raw_connect(), g;

	CHECK(raw_request(s, MLX4SIM_OP_UMAD_WRITE, 0, junk, 100) == -EBADF,
	      "raw: a write before any open: EBADF");
	CHECK(raw_request(s, MLX4SIM_OP_UMAD_OPEN, 999, NULL, 0) == -ENXIO,
	      "raw: the open of minor 999: ENXIO");
	CHECK(raw_request(s, MLX4SIM_OP_UMAD_OPEN, 1, NULL, 0) == 0 &&
	      raw_request(s, MLX4SIM_OP_UMAD_OPEN, 1, NULL, 0) == -EINVAL,
	      "raw: a connection opens one file, a second open is EINVAL");
	CHECK(raw_request(s, MLX4SIM_OP_OPEN, 0, NULL, 0) == -EINVAL &&
	      raw_request(s, MLX4SIM_OP_FAULT, 0, junk, 40) == -EINVAL,
	      "raw: nor does it open a uverbs file or send a fault");
	CHECK(raw_request(s, MLX4SIM_OP_UMAD_IOCTL, IB_USER_MAD_REGISTER_AGENT2,
			  junk, 3) == -EFAULT,
	      "raw: a register ioctl whose structure is 3 bytes: EFAULT");
	for (int i = 0; i < 3000; i++) {
		uint32_t op = MLX4SIM_OP_UMAD_OPEN + rand_r(&seed) % 4;
		size_t len = rand_r(&seed) % sizeof(junk);

		for (size_t k = 0; k < len; k++)
			junk[k] = rand_r(&seed);
		answered += raw_request(s, op, rand_r(&seed) % 3 ?
					IB_USER_MAD_REGISTER_AGENT2 + rand_r(&seed) % 3 :
					(uint32_t)rand_r(&seed), junk, len) != -EPIPE;
	}
	CHECK(answered == 3000, "raw: 3000 requests of noise, all answered (%u)",
	      answered);
	close(s);
	g = open_umad(1, O_NONBLOCK);
	still_answered(g, 5, "and the daemon answers the next file as before");
	close(g);
}

/*
 * A PortInfo Set of our own port, along the empty directed route: @lid,
 * itself as the SM, @state.  The answer's status, its PortInfo in @pi.
 */
static int port_info_set(int fd, int smi, uint16_t lid, uint8_t state,
			 uint8_t *pi)
{
	static uint32_t tid = 100;
	uint8_t path[1] = { 0 };
	struct umad m, r;

	dr_get(&m, smi, path, 0, 0x15, tid++);
	m.mad[3] = 0x02;		/* Set */
	*(uint16_t *)(m.mad + 64 + 16) = htobe16(lid);
	*(uint16_t *)(m.mad + 64 + 18) = htobe16(lid);
	m.mad[64 + 32] = 0x70 | state;
	if (write(fd, &m, sizeof(m)) != sizeof(m) ||
	    read_wait(fd, &r, sizeof(r), 2000) < 0)
		return -1;
	memcpy(pi, r.mad + 64, 64);
	return get16(r.mad + 4) & 0x7fff;
}

/* A PortCounters Get to @lid: whether it is answered. */
static bool pma_answers(int fd, int gsi, uint16_t lid)
{
	static uint32_t tid = 200;
	struct umad m, r;

	memset(&m, 0, sizeof(m));
	m.hdr.id = gsi;
	m.hdr.lid = htobe16(lid);
	m.hdr.qpn = htobe32(1);
	m.hdr.timeout_ms = 100;
	m.mad[0] = 1; m.mad[1] = 0x04; m.mad[2] = 1; m.mad[3] = 0x01;
	m.mad[17] = 0x12;
	m.mad[64 + 1] = 1;
	*(uint32_t *)(m.mad + 12) = htobe32(tid++);
	return write(fd, &m, sizeof(m)) == sizeof(m) &&
	       read_wait(fd, &r, sizeof(r), 2000) > 0 && r.hdr.status == 0 &&
	       r.mad[3] == 0x81;
}

static unsigned int sysfs_text_lid(void)
{
	return sysfs_hex("/sys/class/infiniband/mlx4_0/ports/1/lid");
}

/*
 * With no SM (--sm none) we are the SM: the port waits in INIT with no
 * LID, and its PortInfo moves only as the state machine allows; until
 * it is ACTIVE, a GMP to its LID is lost.
 */
static int as_the_sm(void)
{
	const char *state = "/sys/class/infiniband/mlx4_0/ports/1/state";
	int fd = open_umad(0, 0), smi, gsi, status;
	uint8_t pi[64] = {};
	char text[32] = "";
	FILE *f;

	smi = agent(fd, 0, 0x81, 1, 0, 0);
	gsi = agent(fd, 1, 0x04, 1, 0, 0);
	status = port_info_set(fd, smi, 0, 0, pi);	/* NOP: a look */
	CHECK(status == 0 && get16(pi + 16) == 0 && (pi[32] & 0x0f) == 2,
	      "no SM: the port is INIT with LID 0 (state %u)", pi[32] & 0x0f);
	CHECK(port_info_set(fd, smi, 7, 4, pi) == 0x1c && sysfs_text_lid() == 0,
	      "INIT to ACTIVE at once: refused (invalid field), nothing set");
	CHECK(port_info_set(fd, smi, 7, 3, pi) == 0 && get16(pi + 16) == 7 &&
	      (pi[32] & 0x0f) == 3 && sysfs_text_lid() == 7,
	      "LID 7 and ARMED: the answer and sysfs say so");
	CHECK(!pma_answers(fd, gsi, 7),
	      "ARMED: a PortCounters Get to LID 7 is lost (a GMP needs ACTIVE)");
	CHECK(port_info_set(fd, smi, 7, 4, pi) == 0 && (pi[32] & 0x0f) == 4,
	      "ARMED to ACTIVE");
	f = fopen(state, "r");
	if (f) {
		if (!fgets(text, sizeof(text), f))
			text[0] = 0;
		fclose(f);
	}
	text[strcspn(text, "\n")] = 0;
	CHECK(!strcmp(text, "4: ACTIVE"), "sysfs: the port's state %s", text);
	CHECK(pma_answers(fd, gsi, 7), "ACTIVE: the PMA at LID 7 answers");
	CHECK(port_info_set(fd, smi, 7, 2, pi) == 0x1c,
	      "a Set to INIT: refused");
	close(fd);
	return tap_finish();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && !strcmp(argv[1], "sm"))
		return as_the_sm();
	files();
	registration();
	sends();
	garbage();
	raw_requests();
	issm();
	return tap_finish();
}

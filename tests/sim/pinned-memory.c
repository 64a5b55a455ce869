/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pinned-memory: the pages a program registers, as a real host pins them
 * for the device, and the simulator shares them with its daemon (sim/README,
 * "Pinned memory").  The device writes are RDMA WRITEs of a second QP of
 * this program; what is checked is what this program and a fork child
 * see, what the daemon maps (/proc/<daemon>/maps), and what it refuses
 * of a client that sends it bad descriptors.
 *
 * Runs on the simulator with either provider (tests/on-sim.sh); named
 * cases (tests/cases.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "../cases.h"
#include "../wait.h"
#include "loopback.h"

#define PAGE		4096
#define SRC_SIZE	(16 * PAGE)
#define ACCESS		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

static struct loopback lb;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp_a, *qp_b;	/* a writes into memory b's side */
static uint8_t *src;			/* a's buffer */
static struct ibv_mr *src_mr;

/* ------------------------------------------------------------------ */
/* The device, and the writes it makes                                 */
/* ------------------------------------------------------------------ */

static void set_up(void)
{
	loopback_open(&lb, "pinned-memory", 64);
	pd = lb.pd;
	cq = lb.cq;
	qp_a = loopback_qp(&lb, 16);
	qp_b = loopback_qp(&lb, 16);
	loopback_connect(&lb, qp_a, qp_b);
	src = aligned_alloc(PAGE, SRC_SIZE);
	if (!src)
		bail("aligned_alloc");
	src_mr = ibv_reg_mr(pd, src, SRC_SIZE, ACCESS);
	if (!src_mr)
		bail("ibv_reg_mr");
}

static void tear_down(void)
{
	ibv_dereg_mr(src_mr);
	free(src);
	ibv_destroy_qp(qp_a);
	ibv_destroy_qp(qp_b);
	loopback_close(&lb);
}

/* An RDMA operation of a on @len bytes at @addr (@rkey): its status. */
static int rdma(enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
		size_t len)
{
	struct ibv_sge sge = { (uintptr_t)src, len, src_mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp_a, &wr, &bad))
		return -1;
	if (poll_cq_within(cq, &wc, 5000) != 1)
		return -2;
	return wc.status;
}

/* The device writes @len bytes of @byte at @addr: its status. */
static int device_write(void *addr, uint32_t rkey, int byte, size_t len)
{
	memset(src, byte, len);
	return rdma(IBV_WR_RDMA_WRITE, (uintptr_t)addr, rkey, len);
}

/* The device reads @len bytes at @addr into src: its status. */
static int device_read(void *addr, uint32_t rkey, size_t len)
{
	memset(src, 0, len);
	return rdma(IBV_WR_RDMA_READ, (uintptr_t)addr, rkey, len);
}

static bool all_bytes(const void *p, int byte, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != byte)
			return false;
	return true;
}

static void *map_pages(size_t pages)
{
	void *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bail("mmap");
	return p;
}

/* @pages of @byte, mapped on their own and registered: their MR in *@mr. */
static uint8_t *registered_pages(size_t pages, int byte, struct ibv_mr **mr)
{
	uint8_t *p = map_pages(pages);

	memset(p, byte, pages * PAGE);
	*mr = ibv_reg_mr(pd, p, pages * PAGE, ACCESS);
	if (!*mr)
		bail("ibv_reg_mr");
	return p;
}

/* ------------------------------------------------------------------ */
/* What maps what                                                      */
/* ------------------------------------------------------------------ */

/*
 * The inode of the file mapped at @addr in process @pid ("self" for
 * this one), 0 for anonymous memory, -1 when nothing is mapped there.
 */
static long long inode_at(const char *pid, const void *addr)
{
	char path[64], line[4200], name[4096];
	uint64_t a = (uintptr_t)addr, lo, hi;
	long long ino = -1, i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		name[0] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*x %*x:%*x %lld %4095s",
			   &lo, &hi, &i, name) >= 3 && a >= lo && a < hi) {
			ino = i;
			break;
		}
	}
	fclose(f);
	return ino;
}

/* How many mappings of inode @ino the daemon has, or -1 if unreadable. */
static int daemon_maps(long long ino)
{
	char path[64], line[4200];
	long long i;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)sim_daemon_pid());
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*x-%*x %*s %*x %*x:%*x %lld", &i) == 1 &&
		    i == ino && ino > 0)
			n++;
	fclose(f);
	return n;
}

/* Whether the daemon maps @ino @want times within a second or two. */
static bool daemon_maps_soon(long long ino, int want)
{
	uint64_t end = now_ms() + 2000;

	while (daemon_maps(ino) != want && now_ms() < end)
		usleep(10000);
	return daemon_maps(ino) == want;
}

static bool is_mapped(const void *addr, size_t len)
{
	unsigned char vec[16];

	return mincore((void *)addr, len, vec) == 0;
}

/* ------------------------------------------------------------------ */
/* The cases                                                           */
/* ------------------------------------------------------------------ */

static void test_shared(void)
{
	struct ibv_mr *mr;
	uint8_t *buf = registered_pages(4, 0, &mr);
	long long ino = inode_at("self", buf);
	int maps;

	CHECK(ino > 0 && inode_at("self", buf + 3 * PAGE) == ino,
	      "a registered range's pages live on one file (inode %lld)", ino);
	CHECK(daemon_maps(ino) == 1, "which the daemon maps once (%d)",
	      daemon_maps(ino));
	CHECK(device_write(buf, mr->rkey, 0x5a, 4 * PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(buf, 0x5a, 4 * PAGE),
	      "the device's write lands where the program reads");
	maps = ibv_dereg_mr(mr) ? -2 : daemon_maps(ino);
	CHECK(maps == 0, "deregistered, the daemon maps it no more (%d)", maps);
	CHECK(all_bytes(buf, 0x5a, 4 * PAGE),
	      "and the program keeps its pages as they were");
	munmap(buf, 4 * PAGE);
}

static void test_close_drops(void)
{
	struct ibv_context *other = open_first_device("pinned-memory");
	struct ibv_pd *other_pd = ibv_alloc_pd(other);
	uint8_t *buf = map_pages(2);
	struct ibv_mr *mr = other_pd ? ibv_reg_mr(other_pd, buf, 2 * PAGE,
						  ACCESS) : NULL;
	long long ino = inode_at("self", buf);

	if (!mr)
		bail("ibv_reg_mr");
	CHECK(daemon_maps(ino) == 1, "a second context's region is mapped (%d)",
	      daemon_maps(ino));
	/* Closed with its objects: the kernel releases them, pins too. */
	ibv_close_device(other);
	CHECK(daemon_maps_soon(ino, 0),
	      "closing its device file drops the daemon's mapping (%d)",
	      daemon_maps(ino));
	munmap(buf, 2 * PAGE);
}

/*
 * After a fork, the device writes a registered buffer; the child sends
 * back what it saw: with ibv_fork_init (@dontfork) whether it had no page
 * there, else whether its copy kept the bytes of the fork.
 */
static void fork_case(bool dontfork)
{
	uint8_t *buf = aligned_alloc(PAGE, 2 * PAGE);
	struct ibv_mr *mr;
	int to_child[2], to_parent[2], status;
	char verdict = 0, go = 1;
	pid_t child;

	memset(buf, 0x11, 2 * PAGE);
	mr = ibv_reg_mr(pd, buf, 2 * PAGE, ACCESS);
	if (!mr || pipe(to_child) || pipe(to_parent))
		bail("set-up");
	child = fork();
	if (child < 0)
		bail("fork");
	if (!child) {
		/* Forked (the library's copy made): the device may write. */
		if (write(to_parent[1], &go, 1) != 1 ||
		    read(to_child[0], &go, 1) != 1)
			_exit(2);
		if (dontfork)
			verdict = !is_mapped(buf, 2 * PAGE);
		else
			verdict = all_bytes(buf, 0x11, 2 * PAGE);
		if (!dontfork)
			memset(buf, 0x33, 2 * PAGE);	/* the child's own */
		(void)!write(to_parent[1], &verdict, 1);
		_exit(0);
	}
	CHECK(read(to_parent[0], &go, 1) == 1 &&
	      device_write(buf, mr->rkey, 0x22, 2 * PAGE) == IBV_WC_SUCCESS,
	      "the device writes a registered buffer after a fork");
	(void)!write(to_child[1], &go, 1);
	CHECK(read(to_parent[0], &verdict, 1) == 1 && verdict,
	      dontfork ? "the child has no page there (MADV_DONTFORK)" :
			 "the child's copy does not see the device's write");
	waitpid(child, &status, 0);
	CHECK(all_bytes(buf, 0x22, 2 * PAGE),
	      "the parent sees it, and not the child's writes");
	CHECK(device_read(buf, mr->rkey, 2 * PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(src, 0x22, 2 * PAGE),
	      "and the device reads what the parent sees");
	ibv_dereg_mr(mr);
	free(buf);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

#define FORK_CHECKS	4	/* fork_case's */

static void test_fork_copy(void)
{
	fork_case(false);
}

/*
 * ibv_fork_init() must come before anything else of libibverbs: the
 * case runs in a fresh process (this program again, with --fork-init),
 * whose TAP lines it passes on as its own.
 */
static void test_fork_init(void)
{
	char line[512], self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int out[2], checks = 0, status = 0;
	pid_t child;
	FILE *f;

	if (n <= 0 || pipe(out))
		bail("readlink");
	self[n] = 0;
	fflush(stdout);
	child = fork();
	if (child < 0)
		bail("fork");
	if (!child) {
		dup2(out[1], 1);
		execl(self, self, "--fork-init", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		int ok = !strncmp(line, "ok ", 3);

		line[strcspn(line, "\n")] = 0;
		if (!ok && strncmp(line, "not ok ", 7)) {
			printf("# %s\n", line);	/* a bail-out, say */
			continue;
		}
		checks++;
		check(ok, "ibv_fork_init: %s", strstr(line, " - ") ?
		      strstr(line, " - ") + 3 : line);
	}
	if (f)
		fclose(f);
	waitpid(child, &status, 0);
	CHECK(checks == FORK_CHECKS && WIFEXITED(status) &&
	      !WEXITSTATUS(status),
	      "the ibv_fork_init process made its %d checks (%d, status %d)",
	      FORK_CHECKS, checks, status);
}

static int run_fork_init(void)
{
	if (ibv_fork_init())
		bail("ibv_fork_init");
	set_up();
	fork_case(true);
	tear_down();
	return tap_failures ? 1 : 0;
}

static void test_munmap(void)
{
	struct ibv_mr *mr;
	uint8_t *buf = registered_pages(2, 0x44, &mr), *again;

	munmap(buf, 2 * PAGE);
	again = mmap(buf, 2 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (again != buf)
		bail("mmap");
	CHECK(device_write(buf, mr->rkey, 0x55, 2 * PAGE) == IBV_WC_SUCCESS,
	      "the device writes a registered range the program unmapped");
	CHECK(all_bytes(buf, 0, 2 * PAGE),
	      "into the pinned pages: new memory there stays as it was");
	CHECK(device_read(buf, mr->rkey, 2 * PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(src, 0x55, 2 * PAGE),
	      "and reads back what it wrote");
	CHECK(ibv_dereg_mr(mr) == 0, "the daemon lives on: deregistered");
	munmap(buf, 2 * PAGE);
}

static void test_dontneed(void)
{
	struct ibv_mr *mr;
	uint8_t *buf = registered_pages(2, 0x66, &mr);

	CHECK(madvise(buf, 2 * PAGE, MADV_DONTNEED) == 0 &&
	      all_bytes(buf, 0, 2 * PAGE),
	      "MADV_DONTNEED on registered pages: the program reads zeros");
	CHECK(device_read(buf, mr->rkey, 2 * PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(src, 0x66, 2 * PAGE),
	      "the device still has the pinned pages, as they were");
	CHECK(device_write(buf, mr->rkey, 0x77, PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(buf, 0, 2 * PAGE),
	      "and its writes go there, unseen by the program");
	CHECK(madvise(buf, 2 * PAGE, MADV_REMOVE) != 0 || !all_bytes(buf, 0, 1),
	      "MADV_REMOVE is refused, as on private memory");
	ibv_dereg_mr(mr);
	munmap(buf, 2 * PAGE);
}

static void test_mremap(void)
{
	struct ibv_mr *mr;
	uint8_t *buf = registered_pages(4, 0x12, &mr), *moved;

	moved = mremap(buf, 4 * PAGE, 8 * PAGE, MREMAP_MAYMOVE);
	CHECK(moved != MAP_FAILED && all_bytes(moved, 0x12, 4 * PAGE) &&
	      all_bytes(moved + 4 * PAGE, 0, 4 * PAGE),
	      "a registered mapping grows: its bytes kept, zeros after");
	memset(moved + 4 * PAGE, 0x13, 4 * PAGE);
	CHECK(device_write(buf, mr->rkey, 0x14, 4 * PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(moved, 0x14, 4 * PAGE),
	      "the pinned pages moved with it: the device's write shows there");
	ibv_dereg_mr(mr);
	munmap(moved, 8 * PAGE);

	/* Two pages inside four registered: the move split the mapping. */
	buf = map_pages(4);
	memset(buf, 0x15, 4 * PAGE);
	mr = ibv_reg_mr(pd, buf + PAGE, 2 * PAGE, ACCESS);
	if (!mr)
		bail("ibv_reg_mr");
	moved = mremap(buf, 4 * PAGE, 6 * PAGE, MREMAP_MAYMOVE);
	CHECK(moved != MAP_FAILED && all_bytes(moved, 0x15, 4 * PAGE) &&
	      all_bytes(moved + 4 * PAGE, 0, 2 * PAGE),
	      "a mapping with registered pages inside it remaps whole");
	CHECK(moved != MAP_FAILED &&
	      device_write(buf + PAGE, mr->rkey, 0x16, 2 * PAGE) ==
	      IBV_WC_SUCCESS && all_bytes(moved + PAGE, 0x16, 2 * PAGE) &&
	      all_bytes(moved, 0x15, PAGE),
	      "and the device's writes follow its pages");
	ibv_dereg_mr(mr);
	munmap(moved, 6 * PAGE);
}

/* Memory the library cannot move: a file of the program's own, shared. */
static void test_fallback(void)
{
	int fd = memfd_create("mine", MFD_CLOEXEC);
	uint8_t *buf;
	struct ibv_mr *mr;
	long long ino;

	if (fd < 0 || ftruncate(fd, 2 * PAGE))
		bail("memfd_create");
	buf = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED)
		bail("mmap");
	ino = inode_at("self", buf);
	mr = ibv_reg_mr(pd, buf, 2 * PAGE, ACCESS);
	if (!mr)
		bail("ibv_reg_mr");
	CHECK(inode_at("self", buf) == ino && daemon_maps(ino) == 0,
	      "a file mapped shared stays where it is, unshared");
	CHECK(device_write(buf, mr->rkey, 0x21, 2 * PAGE) == IBV_WC_SUCCESS &&
	      all_bytes(buf, 0x21, 2 * PAGE),
	      "and the device reaches it all the same");
	ibv_dereg_mr(mr);
	munmap(buf, 2 * PAGE);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* A client that lies: its own connection, bad descriptors             */
/* ------------------------------------------------------------------ */

static int raw_connect(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s",
		 getenv(MLX4SIM_ENV_DIR), MLX4SIM_SOCKET_NAME);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		bail("connect");
	return fd;
}

/*
 * One request (with @pass, a descriptor, if not -1): the reply's ret,
 * its data in @data (@len bytes).  INT32_MIN when the daemon is gone.
 */
static int32_t raw_request(int sock, uint32_t op, const void *payload,
			   size_t len, int pass, uint8_t *data, size_t *got)
{
	uint8_t buf[8192];
	struct mlx4sim_request req = { .op = op };
	struct iovec out[2] = { { &req, sizeof(req) }, { (void *)payload, len } };
	struct iovec in = { buf, sizeof(buf) };
	char control[MLX4SIM_FD_CONTROL];
	struct msghdr smsg = { .msg_iov = out, .msg_iovlen = 2 };
	struct msghdr rmsg = { .msg_iov = &in, .msg_iovlen = 1 };
	struct mlx4sim_reply reply;
	ssize_t n;

	if (pass >= 0)
		mlx4sim_pass_fd(&smsg, control, pass);
	if (sendmsg(sock, &smsg, MSG_NOSIGNAL) < 0)
		return INT32_MIN;
	n = recvmsg(sock, &rmsg, 0);
	if (n < (ssize_t)sizeof(reply))
		return INT32_MIN;
	memcpy(&reply, buf, sizeof(reply));
	if (data) {
		*got = n - sizeof(reply);
		memcpy(data, buf + sizeof(reply), *got);
	}
	return reply.ret;
}

static int32_t raw_command(int sock, void *cmd, size_t len, uint8_t *data,
			   size_t *got)
{
	return raw_request(sock, MLX4SIM_OP_WRITE, cmd, len, -1, data, got);
}

/* The device opened, a context and a PD on @sock: the PD's handle. */
static uint32_t raw_pd(int sock)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context core;
	} get = { { IB_USER_VERBS_CMD_GET_CONTEXT, sizeof(get) / 4, 64 } };
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd core;
	} alloc = { { IB_USER_VERBS_CMD_ALLOC_PD, sizeof(alloc) / 4, 4 } };
	uint8_t data[8192];
	size_t got;
	uint32_t handle;

	if (raw_request(sock, MLX4SIM_OP_OPEN, NULL, 0, -1, NULL, NULL) ||
	    raw_command(sock, &get, sizeof(get), NULL, NULL) < 0 ||
	    raw_command(sock, &alloc, sizeof(alloc), data, &got) < 0 ||
	    got < sizeof(handle))
		bail("a raw context");
	memcpy(&handle, data, sizeof(handle));
	return handle;
}

/*
 * REG_MR of [@buf, @buf + @len) on the raw connection; then a SHARE of
 * @share (the range asked when NULL) with @fd.  The SHARE's answer.
 */
static int32_t reg_then_share(int sock, uint32_t pd_handle, void *buf,
			      size_t len, const struct mlx4sim_share *share,
			      int fd)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_reg_mr core;
	} reg = { { IB_USER_VERBS_CMD_REG_MR, sizeof(reg) / 4,
		    sizeof(struct ib_uverbs_reg_mr_resp) / 4 } };
	struct mlx4sim_share asked = { 0 };
	uint8_t data[8192];
	size_t got;

	reg.core.start = reg.core.hca_va = (uintptr_t)buf;
	reg.core.length = len;
	reg.core.pd_handle = pd_handle;
	reg.core.access_flags = IBV_ACCESS_LOCAL_WRITE;
	if (raw_command(sock, &reg, sizeof(reg), data, &got) < 0)
		return INT32_MIN;
	/* The response (12 bytes), then the ranges asked. */
	if (got >= sizeof(struct ib_uverbs_reg_mr_resp) + sizeof(asked))
		memcpy(&asked, data + sizeof(struct ib_uverbs_reg_mr_resp),
		       sizeof(asked));
	return raw_request(sock, MLX4SIM_OP_SHARE, share ? share : &asked,
			   sizeof(asked), fd, NULL, NULL);
}

/* A memfd of @len bytes, sealable or not, with @buf's bytes. */
static int memfd_of(const void *buf, size_t len, unsigned int flags)
{
	int fd = memfd_create("pinned-memory-test", MFD_CLOEXEC | flags);

	if (fd < 0 || ftruncate(fd, len) ||
	    (buf && pwrite(fd, buf, len, 0) != (ssize_t)len))
		bail("memfd_create");
	return fd;
}

/* The file @fd mapped shared over [buf, buf + len). */
static void map_over(void *buf, size_t len, int fd)
{
	if (mmap(buf, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0) != buf)
		bail("mmap");
}

static void hostile_descriptors(int sock, uint32_t pdh, uint8_t *buf)
{
	struct mlx4sim_share wrong = { (uintptr_t)buf + PAGE, PAGE };
	int pipes[2], fd, ro;
	char path[64];

	if (pipe(pipes))
		bail("pipe");
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, &wrong, -1) == -EINVAL,
	      "a SHARE of a range other than the one asked: EINVAL");
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, pipes[0]) ==
	      -EINVAL, "a pipe: EINVAL");
	fd = memfd_of(NULL, 2 * PAGE, 0);
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, fd) == -EPERM,
	      "a memfd that cannot be sealed against shrinking: EPERM");
	close(fd);
	fd = memfd_of(NULL, 3 * PAGE, MFD_ALLOW_SEALING);
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, fd) == -EINVAL,
	      "a memfd of the wrong size: EINVAL");
	close(fd);
	fd = memfd_of(NULL, 2 * PAGE, MFD_ALLOW_SEALING);
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, fd) == -EINVAL,
	      "a memfd not mapped at those addresses: EINVAL");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, ro) == -EACCES,
	      "a memfd open read-only: EACCES");
	close(ro);
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) == 0 &&
	      reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, fd) == -EPERM,
	      "a memfd sealed against writes: EPERM");
	CHECK(daemon_maps(inode_at("self", buf)) == 0,
	      "the daemon maps none of them");
	close(fd);
	close(pipes[0]);
	close(pipes[1]);
}

static void test_hostile_fd(void)
{
	int sock = raw_connect();
	uint8_t *buf = map_pages(2);
	struct mlx4sim_share any = { (uintptr_t)buf, 2 * PAGE };
	uint32_t pdh;
	long long ino;
	int fd;

	CHECK(raw_request(sock, MLX4SIM_OP_SHARE, &any, sizeof(any), -1,
			  NULL, NULL) == -EBADF,
	      "a SHARE before the device is open: EBADF");
	pdh = raw_pd(sock);
	CHECK(raw_request(sock, MLX4SIM_OP_SHARE, &any, sizeof(any), -1,
			  NULL, NULL) == -EINVAL,
	      "a SHARE no command asked for: EINVAL");
	hostile_descriptors(sock, pdh, buf);
	memset(buf, 0x31, 2 * PAGE);
	fd = memfd_of(buf, 2 * PAGE, MFD_ALLOW_SEALING);
	map_over(buf, 2 * PAGE, fd);
	ino = inode_at("self", buf);
	CHECK(reg_then_share(sock, pdh, buf, 2 * PAGE, NULL, fd) == 0 &&
	      daemon_maps(ino) == 1,
	      "a memfd that passes every check is taken and mapped");
	CHECK(ftruncate(fd, PAGE) != 0 && errno == EPERM,
	      "and the daemon sealed it: ftruncate() fails with EPERM");
	munmap(buf, 2 * PAGE);
	close(fd);
	CHECK(raw_request(sock, MLX4SIM_OP_SHARE, &any, sizeof(any), -1,
			  NULL, NULL) == -EINVAL,
	      "the daemon answers on, its client's pages unmapped");
	close(sock);
	CHECK(daemon_maps_soon(ino, 0),
	      "the connection closed, the daemon maps it no more");
}

static const struct test_case cases[] = {
	{ "shared", test_shared,
	  "a region's pages on a file the daemon maps once; dereg unmaps it" },
	{ "close_drops", test_close_drops,
	  "closing the device file drops the daemon's mapping" },
	{ "fork_copy", test_fork_copy,
	  "a fork child's copy does not see the device's writes, nor the parent the child's" },
	{ "fork_init", test_fork_init,
	  "with ibv_fork_init, a fork child has no registered page" },
	{ "munmap", test_munmap,
	  "an unmapped registered range: the device writes it, unseen" },
	{ "dontneed", test_dontneed,
	  "MADV_DONTNEED: zeros for the program, the old pages for the device" },
	{ "mremap", test_mremap,
	  "pinned pages move with mremap; growing gives zeros; a split range remaps whole" },
	{ "fallback", test_fallback,
	  "a file mapped shared is not moved, and the device reaches it" },
	{ "hostile_fd", test_hostile_fd,
	  "SHAREs of wrong ranges and bad descriptors refused, a good one taken" },
};

int main(int argc, char **argv)
{
	int ret;

	if (argc == 2 && !strcmp(argv[1], "--fork-init"))
		return run_fork_init();
	ret = cases_select(cases, CASES_N(cases), argc, argv, 1);
	if (ret >= 0)
		return ret;
	if (!sim_daemon_pid())
		bail("no simulator (MLX4SIM_DIR/pid)");
	set_up();
	cases_run(cases, CASES_N(cases));
	tear_down();
	return tap_finish();
}

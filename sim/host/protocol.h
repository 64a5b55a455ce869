/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire between the preload library and the mlx4sim daemon.
 *
 * A process that opens /dev/infiniband/uverbsN gets, in place of the
 * character device, one end of a SOCK_SEQPACKET connection to the daemon.
 * Everything the kernel would do on that file is one request and one reply
 * on the connection: a uverbs command written to it, an mmap of one of its
 * pages, a read of one of the event files it created.  The daemon plays
 * the kernel: it answers with the bytes the kernel would copy to the
 * caller and, where the kernel would install a new file descriptor, passes
 * one with SCM_RIGHTS.
 *
 * Requests and replies are single datagrams; the preload holds the
 * connection's lock from request to reply, so they never interleave.
 */
#ifndef MLX4SIM_PROTOCOL_H
#define MLX4SIM_PROTOCOL_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* Environment of a process that sees a simulator. */
#define MLX4SIM_ENV_DIR		"MLX4SIM_DIR"	/* run directory */
#define MLX4SIM_SOCKET_NAME	"sock"		/* in the run directory */
#define MLX4SIM_SYSFS_NAME	"sys"		/* in the run directory */

/* The uverbs character devices: major 231, minors from 192. */
#define MLX4SIM_UVERBS_MAJOR	231
#define MLX4SIM_UVERBS_MINOR0	192
/* rdma_cm, a misc device: major 10, a minor the kernel chose at load. */
#define MLX4SIM_MISC_MAJOR	10
#define MLX4SIM_RDMA_CM_MINOR	58

/* Largest request or reply datagram. */
#define MLX4SIM_MAX_MSG		(64 * 1024)

enum mlx4sim_op {
	/*
	 * First request on a connection: which uverbsN was opened (arg).
	 * The reply passes the file of the context's pages (the UAR,
	 * BlueFlame and clock pages at mlx4_ib's mmap offsets), which the
	 * process keeps as its descriptor of the device.
	 */
	MLX4SIM_OP_OPEN		= 1,
	/* A write(2) of a uverbs command; the payload is what was written. */
	MLX4SIM_OP_WRITE	= 2,
	/*
	 * An mmap(2) of the page at page offset arg, checked as mlx4_ib
	 * checks it; the process then maps its descriptor itself.
	 */
	MLX4SIM_OP_MMAP		= 3,
	/* A read(2) of the event file arg, after its file gave a byte. */
	MLX4SIM_OP_EVENT	= 4,
	/*
	 * Not a system call: `mlx4sim fault` injecting a fault (struct
	 * mlx4sim_fault).  Only on a control connection: one whose first
	 * request is this, from the daemon's own user; a connection that
	 * opened a device can never make it, nor a control one open one.
	 */
	MLX4SIM_OP_FAULT	= 5,
	/*
	 * An ioctl(2) with RDMA_VERBS_IOCTL; the payload is its argument,
	 * the address of the caller's struct ib_uverbs_ioctl_hdr (a
	 * uint64_t), which the daemon reads, with the attributes, from
	 * the process's memory, and writes the outputs to.
	 */
	MLX4SIM_OP_IOCTL	= 6,
	/*
	 * Not a system call: the kernel's pinning of pages, shared.  A
	 * WRITE reply may ask for ranges of the process's memory to be
	 * shared with the device (shares, below): the library moves each
	 * onto a memfd mapped at the same addresses and sends one SHARE
	 * per range, in order, before the write() returns, with the
	 * payload a struct mlx4sim_share and the memfd (SCM_RIGHTS), or no
	 * descriptor when it could not move the range.  The reply's ret is
	 * 0 or -errno; the device reaches the range through process_vm_*
	 * when it is not shared.  See sim/README, "Pinned memory".
	 */
	MLX4SIM_OP_SHARE	= 7,
	/*
	 * The umad files (/dev/infiniband/umadN, issmN).  UMAD_OPEN is the
	 * first request of its connection: arg is the minor (N, or 64 + N
	 * for issmN); the reply passes the process's descriptor, a socket
	 * on which each MAD the file receives is one datagram, as read(2)
	 * returns it.  UMAD_WRITE: the payload is what write(2) was given;
	 * the reply's ret is its return.  UMAD_IOCTL: arg is the ioctl's
	 * request, the payload the structure its argument points to; the
	 * reply's bytes, if any, are copied back there.
	 */
	MLX4SIM_OP_UMAD_OPEN	= 16,
	MLX4SIM_OP_UMAD_WRITE	= 17,
	MLX4SIM_OP_UMAD_IOCTL	= 18,
	/*
	 * First request on a connection that opened /dev/infiniband/rdma_cm
	 * (ucma.c).  The reply passes the process's descriptor of the file,
	 * a socket the daemon keeps readable while the file has events (so
	 * poll, select and epoll see them), and its id in event_file, by
	 * which MIGRATE_ID names it.
	 */
	MLX4SIM_OP_UCMA_OPEN	= 24,
	/*
	 * A write(2) on the rdma_cm file: the payload is struct
	 * mlx4sim_ucma_write.  The daemon reads the command where it lies
	 * in the process, as the kernel copies it from user memory, and
	 * writes the responses where the command says.  ret is 0 (write(2)
	 * returns its count) or -errno; a GET_EVENT that finds no event is
	 * -EAGAIN, and the library waits for the descriptor unless it is
	 * O_NONBLOCK.
	 */
	MLX4SIM_OP_UCMA_WRITE	= 25,
};

/* A range of pages a WRITE reply asks to share (after the response). */
struct mlx4sim_share {
	uint64_t addr;		/* page-aligned */
	uint64_t len;		/* whole pages */
};

/* At most this many in one reply; what else a command pins is not shared. */
#define MLX4SIM_MAX_SHARES	8

/* The name of the files the library moves pinned pages onto. */
#define MLX4SIM_SHARE_NAME	"mlx4sim-pinned"

struct mlx4sim_request {
	uint32_t op;		/* enum mlx4sim_op */
	uint32_t arg;
	/* followed by the payload */
};

/* The payload of an MMAP request: the rest of the mmap(2) call. */
struct mlx4sim_mmap {
	uint64_t length;
	uint32_t prot;
	uint32_t flags;
};

/* The payload of an EVENT request: the count read(2) was given. */
struct mlx4sim_event {
	uint32_t count;
};

/* The payload of a UCMA_WRITE request. */
struct mlx4sim_ucma_write {
	uint64_t buf;		/* write(2)'s buffer, in the process */
	uint64_t count;		/* and its count */
	/*
	 * MIGRATE_ID names the file an id leaves by descriptor, which only
	 * the process can resolve: the daemon's id of that rdma_cm file, or
	 * one of these.
	 */
	uint32_t migrate_from;
	uint32_t reserved;
};
#define MLX4SIM_UCMA_NOT_UCMA	0xfffffffeu	/* open, another file */
#define MLX4SIM_UCMA_NO_FILE	0xffffffffu	/* no such descriptor */

/* The payload of a FAULT request; the reply's ret is 0 or -errno. */
#define MLX4SIM_FAULT_MAGIC	0x6d34666c	/* "m4fl": not a stray request */

enum mlx4sim_fault_kind {
	MLX4SIM_FAULT_CLEAR	= 1,	/* every fault off, every port up */
	MLX4SIM_FAULT_DROP,		/* packets: lost */
	MLX4SIM_FAULT_DUPLICATE,	/* packets: arrive twice */
	MLX4SIM_FAULT_REORDER,		/* packets: overtaken by the next */
	MLX4SIM_FAULT_DELAY,		/* packets: arrive delay_ms late */
	MLX4SIM_FAULT_RNR,		/* a QP's receive queue reads empty */
	MLX4SIM_FAULT_PORT_DOWN,
	MLX4SIM_FAULT_PORT_UP,
	MLX4SIM_FAULT_QP_FATAL,
	MLX4SIM_FAULT_FATAL,		/* the adapter's catastrophic error */
	MLX4SIM_FAULT_STATUS,		/* nothing: only the counts */
	MLX4SIM_FAULT_KIND_END,
};

/* Which of hca, port and qpn select what the fault acts on. */
#define MLX4SIM_FAULT_MATCH_HCA		(1u << 0)
#define MLX4SIM_FAULT_MATCH_PORT	(1u << 1)
#define MLX4SIM_FAULT_MATCH_QPN		(1u << 2)

struct mlx4sim_fault {
	uint32_t magic;		/* MLX4SIM_FAULT_MAGIC */
	uint32_t kind;		/* enum mlx4sim_fault_kind */
	uint32_t match;		/* MLX4SIM_FAULT_MATCH_* */
	uint32_t hca;		/* adapter index: mlx4_<hca> */
	uint32_t port;		/* 1 or 2 */
	uint32_t qpn;
	uint32_t next;		/* packet faults: the next N packets, or 0 */
	uint32_t rate_ppm;	/* or this many in a million of them */
	uint32_t delay_ms;	/* DELAY only */
	uint32_t reserved;	/* 0 */
};

/*
 * What follows a successful FAULT reply: the faults the daemon applied
 * since it started, so that a test can tell a fault fired.
 */
struct mlx4sim_fault_counts {
	uint64_t dropped;	/* packets lost (rules and down ports) */
	uint64_t duplicated;
	uint64_t reordered;
	uint64_t delayed;
	uint64_t rnr;		/* receive queues read empty by a rule */
	uint32_t rules;		/* rules in force */
	uint32_t reserved;
};

struct mlx4sim_reply {
	/*
	 * OPEN, IOCTL: 0 or -errno.  WRITE: the byte count write(2)
	 * returns, or -errno.  MMAP: the page offset to map in the device's
	 * file, or -errno.  EVENT: the event's size (its bytes follow), 0
	 * when the event the token stood for is gone, or -errno.
	 */
	int32_t ret;
	/* WRITE: bytes that follow, to be copied to the command's response. */
	uint32_t resp_len;
	/*
	 * When a descriptor comes with the reply: where, in the response,
	 * the kernel would have stored its number (a __u32), and the id of
	 * the event file it is, for later EVENT requests.  -1 otherwise.
	 */
	int32_t fd_offset;
	uint32_t event_file;
	/* WRITE: struct mlx4sim_share that follow the response */
	uint32_t shares;
	uint32_t reserved;
	/* followed by resp_len bytes, then the shares */
};

/*
 * Pass @fd with @msg (SCM_RIGHTS), its control data in @control, of
 * MLX4SIM_FD_CONTROL bytes: the daemon's replies and the library's
 * SHARE requests carry descriptors so.
 */
#define MLX4SIM_FD_CONTROL	CMSG_SPACE(sizeof(int))

static inline void mlx4sim_pass_fd(struct msghdr *msg, void *control, int fd)
{
	struct cmsghdr *cm;

	memset(control, 0, MLX4SIM_FD_CONTROL);
	msg->msg_control = control;
	msg->msg_controllen = MLX4SIM_FD_CONTROL;
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
}

#endif

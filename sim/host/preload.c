/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: the view of a host with ConnectX-3 adapters, for a process
 * started by mlx4sim.
 *
 * It stands at the system calls a process makes on /dev/infiniband: the
 * device files exist (stat, open, fstat), write() carries uverbs commands
 * to the daemon and their responses back, and ioctl() the verbs ioctl
 * (the daemon serves the methods the write interface lacks), mmap() maps
 * the pages the daemon shares, and reads of the event files the commands
 * created return their events.  RDMA netlink is absent, so libibverbs reads the simulated sysfs
 * tree (/sys in the daemon's mount namespace, else SYSFS_PATH).  Every
 * other call passes through untouched.
 *
 * One concern a file, their shared declarations in preload.h:
 *   preload.c         the real calls, whether the process runs on a
 *                     simulator, the daemon's namespaces, socket()
 *   preload-fd.c      the descriptors that are ours, and the calls that
 *                     copy or close descriptors (close, dup*, fcntl,
 *                     close_range, closefrom)
 *   preload-name.c    what a path names under /dev/infiniband
 *   preload-stat.c    stat, access, realpath, readlink, xattr on names
 *   preload-dir.c     /dev/infiniband listed (opendir, readdir, scandir,
 *                     glob)
 *   preload-uverbs.c  the device file: open, and write, ioctl, mmap as
 *                     requests to the daemon
 *   preload-event.c   read() of the event files
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

/* ------------------------------------------------------------------ */
/* The real calls                                                      */
/* ------------------------------------------------------------------ */

struct real_calls real;

char run_dir[RUN_DIR_SIZE];
bool active;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_once_t decided = PTHREAD_ONCE_INIT;

static void resolve(void)
{
#define REAL(name) real.name = dlsym(RTLD_NEXT, #name)
	REAL(open);
	REAL(openat);
	REAL(close);
	REAL(read);
	REAL(write);
	REAL(ioctl);
	REAL(mmap);
	REAL(munmap);
	REAL(mremap);
	REAL(madvise);
	REAL(socket);
	REAL(fstat);
	REAL(fstatat);
	REAL(statx);
	REAL(dup);
	REAL(dup2);
	REAL(dup3);
	REAL(fcntl);
	REAL(close_range);
	REAL(faccessat);
	REAL(opendir);
	REAL(closedir);
	REAL(readdir);
	REAL(readdir64);
	REAL(scandir);
	REAL(scandir64);
	REAL(realpath);
	REAL(glob);
	REAL(glob64);
	REAL(readlinkat);
	REAL(getxattr);
	REAL(lgetxattr);
	REAL(fgetxattr);
	REAL(listxattr);
	REAL(llistxattr);
	REAL(flistxattr);
#undef REAL
}

static void decide(void)
{
	const char *dir = getenv(MLX4SIM_ENV_DIR);

	if (dir && *dir && strlen(dir) < sizeof(run_dir)) {
		strcpy(run_dir, dir);
		active = true;
	}
}

/*
 * Whether this process runs on a simulator is decided once the C library
 * has set up the environment: a sanitizer's runtime calls us earlier,
 * from the program's preinit functions, where getenv() finds nothing.
 * Until then every call passes through.
 */
void init(void)
{
	pthread_once(&once, resolve);
	if (environ)
		pthread_once(&decided, decide);
}

/*
 * The daemon's namespaces, which a process joins as it loads, before it
 * makes any socket or reads sysfs.  With Ethernet ports the daemon keeps
 * their network interfaces in a network namespace of its own
 * (sim/ether.c), where the neighbour tables libibverbs asks to reach a
 * RoCE peer know them: all the sockets of a process, and those of the
 * programs it talks to over TCP, live in that one network ("netns" in the
 * run directory).  Its mount namespace has the simulated sysfs tree laid
 * over /sys (sim/sysview.c, "mntns"): a process that reads /sys by its
 * literal path sees the simulated host, and SYSFS_PATH, which libibverbs
 * reads, becomes /sys: the paths it gives (an ibv_device's ibdev_path,
 * which UCX resolves to the PCI function) are the host's.  A user namespace comes first when the daemon made one (it
 * runs as an ordinary user): it owns the others.  Raw system calls: our
 * own open() and read() are not ready yet.
 */
/* The identity of a namespace: its link's text, "net:[4026531840]". */
static bool ns_link(const char *pid, const char *kind, char *text, size_t len)
{
	char path[64];
	long n;

	snprintf(path, sizeof(path), "/proc/%s/ns/%s", pid, kind);
	n = syscall(SYS_readlinkat, AT_FDCWD, path, text, len - 1);
	if (n <= 0)
		return false;
	text[n] = 0;
	return true;
}

/*
 * 0 when this process is in @pid's namespace of @kind (now, or already);
 * -ENOENT, quietly, where the links cannot be read (a /proc that hides
 * them from an ordinary user): the process stays where it is.
 */
static int join_ns(const char *pid, const char *kind, int type)
{
	char path[64], theirs[64], mine[64];
	int fd, err = 0;

	if (!ns_link(pid, kind, theirs, sizeof(theirs)) ||
	    !ns_link("self", kind, mine, sizeof(mine)))
		return -ENOENT;
	if (!strcmp(theirs, mine))
		return 0;
	snprintf(path, sizeof(path), "/proc/%s/ns/%s", pid, kind);
	fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_setns, fd, type))
		err = -errno;
	if (fd >= 0)
		syscall(SYS_close, fd);
	errno = -err;		/* for the caller's message */
	return err;
}

static bool run_file(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", dir, name) < PATH_MAX &&
	       syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0;
}

/*
 * Joining a mount namespace takes the process to its root: the working
 * directory, the same path there (the namespace began as a copy of the
 * host's), comes back after.
 */
static void join_sysview(const char *pid)
{
	char cwd[PATH_MAX];
	bool has_cwd = syscall(SYS_getcwd, cwd, sizeof(cwd)) > 0;
	int err = join_ns(pid, "mnt", CLONE_NEWNS);

	if (err) {
		if (err == -ENOENT)
			return;
		fprintf(stderr, "libmlx4sim: cannot join the simulator's mount namespace (its /sys): %m; the devices are at SYSFS_PATH only\n");
		return;
	}
	if (has_cwd && syscall(SYS_chdir, cwd))
		fprintf(stderr, "libmlx4sim: %s is gone in the simulator's mount namespace\n",
			cwd);
	setenv("SYSFS_PATH", "/sys", 1);	/* /sys is the simulated host's */
}

/* The pid a run's file holds, as text: false when there is none. */
static bool read_pid(const char *path, char pid[16])
{
	ssize_t n;
	int fd;

	fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = syscall(SYS_read, fd, pid, 15);
	syscall(SYS_close, fd);
	if (n <= 0)
		return false;
	pid[n] = 0;
	pid[strcspn(pid, "\n")] = 0;
	return true;
}

/*
 * --hosts: a process already on a host (started there by mlx4sim-rsh,
 * or by a process that was) stays there, whatever its environment says
 * (MPI launchers pass theirs on); any other joins node1, whose keeper's
 * namespaces it takes: its user namespace, network, hostname and /sys.
 * @path gets the pid file of the keeper to join, or "" for none.
 */
static void host_pid_file(const char *dir, char *path, size_t len)
{
	char mine[64], theirs[64], pid[16];

	path[0] = 0;
	if (!ns_link("self", "net", mine, sizeof(mine)))
		return;
	for (int host = 1; host <= 64; host++) {
		snprintf(path, len, "%s/node%d/pid", dir, host);
		if (!read_pid(path, pid))
			break;
		if (ns_link(pid, "net", theirs, sizeof(theirs)) &&
		    !strcmp(mine, theirs)) {
			path[0] = 0;	/* on that host already */
			return;
		}
	}
	snprintf(path, len, "%s/node1/pid", dir);
}

__attribute__((constructor))
static void join_sim_namespaces(void)
{
	const char *dir = getenv(MLX4SIM_ENV_DIR);
	char path[PATH_MAX], pid[16] = "";
	bool net, mnt, hosts;
	int err;

	if (!dir)
		return;
	hosts = run_file(dir, "hosts");
	net = hosts || run_file(dir, "netns");
	mnt = hosts || run_file(dir, "mntns");
	if (!net && !mnt)
		return;
	if (hosts)
		host_pid_file(dir, path, sizeof(path));
	else
		snprintf(path, sizeof(path), "%s/pid", dir);
	if (!path[0] || !read_pid(path, pid))
		return;
	err = join_ns(pid, "user", CLONE_NEWUSER);
	if (err && err != -ENOENT)
		fprintf(stderr, "libmlx4sim: cannot join the simulator's user namespace: %m\n");
	err = net ? join_ns(pid, "net", CLONE_NEWNET) : 0;
	if (err && err != -ENOENT)
		fprintf(stderr, "libmlx4sim: cannot join the simulator's network namespace (its Ethernet ports' network): %m\n");
	err = hosts ? join_ns(pid, "uts", CLONE_NEWUTS) : 0;
	if (err && err != -ENOENT)
		fprintf(stderr, "libmlx4sim: cannot join the simulated host's hostname (UTS namespace): %m\n");
	if (mnt)
		join_sysview(pid);
}

/* ------------------------------------------------------------------ */
/* socket: no RDMA netlink, so libibverbs reads sysfs                  */
/* ------------------------------------------------------------------ */

EXPORT int socket(int domain, int type, int protocol)
{
	init();
	if (active && domain == AF_NETLINK && protocol == NETLINK_RDMA)
		return fail(-EPROTONOSUPPORT);
	return real.socket(domain, type, protocol);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --hosts N: a cluster of N hosts on one machine, node1 .. nodeN.
 *
 * A host is what a process on a machine of its own has apart: a network
 * namespace (its loopback and the interfaces of its own adapters' ports,
 * which the fabric's and the kernel's code move into it), a UTS namespace
 * (its hostname) and a mount namespace whose /sys shows its adapters only
 * (sysview.c), with /etc/hosts naming every host.  Namespaces live as long
 * as a process is in them, so each host has one of the daemon's children,
 * its keeper, which makes them, holds them, and starts the commands
 * mlx4sim-rsh asks it for there (rshd.c), as sshd starts them on a host.
 *
 * The daemon tells a process's host by the network namespace the process
 * is in (host_of_pid), never by anything the process says: a process can
 * enter another host only as mlx4sim-rsh does, and then it is a process
 * of that host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"

struct keeper {
	pid_t pid;
	ino_t net_ino;		/* its network namespace's identity */
	dev_t net_dev;
	int go;			/* the daemon's end: "make your /sys" */
	int ack;		/* the keeper's answers, a byte each */
};

static struct keeper keepers[SIM_MAX_HOSTS];
static int saved_net = -1;	/* the daemon's own, while it visits one */

static int host_path(char *buf, int host, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/node%d%s%s", sim.opt.dir,
			 host + 1, name ? "/" : "", name ? name : "");

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* The loopback up, as a host's boot brings it (and ipoib.c's network's). */
void host_loopback_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

void hosts_answer(int ack, char what, int err)
{
	char msg[2] = { what, (char)(err > 0 ? err : -err) };

	if (write(ack, msg, 2) != 2)
		_exit(1);
}

/*
 * A boot ID of the host's own over the kernel's: software tells machines
 * apart by it (UCX's system ID: two processes with the same one may reach
 * each other through shared memory, which two hosts cannot).  A fresh
 * random UUID, as the kernel makes one at boot.  Best effort: without it
 * the hosts look like one machine to such software, and the log says so.
 */
static void own_boot_id(int host)
{
	static const char kernel_id[] = "/proc/sys/kernel/random/boot_id";
	char path[PATH_MAX], uuid[64] = "";
	int fd = open("/proc/sys/kernel/random/uuid", O_RDONLY | O_CLOEXEC);
	int err = fd < 0 ? -errno : 0;

	if (!err && read(fd, uuid, sizeof(uuid) - 1) <= 0)
		err = -EIO;
	if (fd >= 0)
		close(fd);
	if (!err)
		err = host_path(path, host, "boot_id");
	if (!err)
		err = write_text(path, uuid, O_CREAT | O_TRUNC);
	if (!err && mount(path, kernel_id, NULL, MS_BIND, NULL))
		err = -errno;
	if (err)
		sim_log("--hosts: node%d keeps the machine's boot ID: %s",
			host + 1, strerror(-err));
}

/*
 * The host's mount namespace: its sysfs tree over /sys, the run's list
 * of hosts over /etc/hosts, so that node2 resolves node1 (MPI's
 * launchers give a rank's daemon the launcher's hostname), and a boot ID
 * of its own.
 */
static int make_mounts(int host)
{
	char tree[PATH_MAX], staging[PATH_MAX], etc_hosts[PATH_MAX];
	int err;

	if (host_path(tree, host, "sys") || host_path(staging, host, ".host-sys"))
		return -ENAMETOOLONG;
	err = sysview_create(tree, staging);
	if (err)
		return err;
	snprintf(etc_hosts, sizeof(etc_hosts), "%s/etc-hosts", sim.opt.dir);
	if (!access("/etc/hosts", F_OK) &&
	    mount(etc_hosts, "/etc/hosts", NULL, MS_BIND, NULL))
		return -errno;
	own_boot_id(host);
	return 0;
}

/*
 * A keeper: the namespaces of host @host, then, once the daemon has
 * built the host's sysfs tree and says go, its mounts and the service
 * of mlx4sim-rsh.  It dies with the daemon.
 */
static void keeper_main(int host, pid_t daemon, int go, int ack)
{
	char name[32], byte;
	int err = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != daemon)
		_exit(1);
	snprintf(name, sizeof(name), "node%d", host + 1);
	prctl(PR_SET_NAME, name);
	if (unshare(CLONE_NEWNET | CLONE_NEWUTS))
		err = -errno;
	else if (sethostname(name, strlen(name)))
		err = -errno;
	if (err) {
		hosts_answer(ack, 'e', err);
		_exit(1);
	}
	host_loopback_up();
	hosts_answer(ack, 'n', 0);
	if (read(go, &byte, 1) != 1)
		_exit(0);	/* the daemon gave up */
	err = make_mounts(host);
	if (err) {
		hosts_answer(ack, 'e', err);
		_exit(1);
	}
	rshd_serve(host, ack);
	_exit(0);
}

static int await(struct keeper *k, char want)
{
	char msg[2];

	if (read(k->ack, msg, 2) != 2)
		return -ECHILD;
	if (msg[0] != want)
		return -(int)(unsigned char)msg[1] ?: -EIO;
	return 0;
}

static int start_keeper(int host)
{
	struct keeper *k = &keepers[host];
	int go[2], ack[2];
	char path[PATH_MAX];
	struct stat st;
	pid_t daemon = getpid();

	if (host_path(path, host, NULL) || (mkdir(path, 0755) && errno != EEXIST))
		return -errno ?: -ENAMETOOLONG;
	if (pipe2(go, O_CLOEXEC) || pipe2(ack, O_CLOEXEC))
		return -errno;
	k->pid = fork();
	if (k->pid < 0)
		return -errno;
	if (k->pid == 0) {
		close(go[1]);
		close(ack[0]);
		keeper_main(host, daemon, go[0], ack[1]);
	}
	close(go[0]);
	close(ack[1]);
	k->go = go[1];
	k->ack = ack[0];
	if (await(k, 'n'))
		return -EPERM;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)k->pid);
	if (stat(path, &st))
		return -errno;
	k->net_ino = st.st_ino;
	k->net_dev = st.st_dev;
	return 0;
}

/*
 * Start the hosts' keepers: their network and UTS namespaces exist when
 * this returns, for the ports' interfaces to be moved into.
 */
int hosts_start(void)
{
	int err;

	if (!sim.opt.nhosts)
		return 0;
	if (geteuid() != 0 && sim_own_user_namespace()) {
		fprintf(stderr, "mlx4simd: --hosts needs user namespaces (an ordinary user makes the hosts' namespaces in one); this machine refuses them\n");
		return -EPERM;
	}
	for (int h = 0; h < sim.opt.nhosts; h++) {
		err = start_keeper(h);
		if (err) {
			fprintf(stderr, "mlx4simd: --hosts: cannot make node%d's network and UTS namespaces: %s\n",
				h + 1, strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * Once the hosts' sysfs trees and the run's etc-hosts exist: each keeper
 * makes its mount namespace and begins to serve; then its pid, which
 * processes join the host by (preload.c), is written.
 */
int hosts_publish(void)
{
	char path[PATH_MAX], text[16];
	int err;

	for (int h = 0; h < sim.opt.nhosts; h++) {
		struct keeper *k = &keepers[h];

		if (write(k->go, "g", 1) != 1)
			return -EIO;
		err = await(k, 'm');
		if (err) {
			fprintf(stderr, "mlx4simd: --hosts: node%d cannot lay its /sys and /etc/hosts: %s\n",
				h + 1, strerror(-err));
			return err;
		}
		snprintf(text, sizeof(text), "%d\n", (int)k->pid);
		if (host_path(path, h, "pid") || write_text(path, text, O_CREAT | O_TRUNC))
			return -EIO;
	}
	return 0;
}

void hosts_stop(void)
{
	for (int h = 0; h < sim.opt.nhosts; h++)
		if (keepers[h].pid > 0) {
			kill(keepers[h].pid, SIGTERM);
			waitpid(keepers[h].pid, NULL, 0);
			keepers[h].pid = 0;
		}
}

/*
 * The host of process @pid: the one whose network namespace it is in;
 * -1 for none (a process that never joined one).  Without --hosts
 * every process is on host 0.
 */
int host_of_pid(pid_t pid)
{
	char path[64];
	struct stat st;

	if (!sim.opt.nhosts)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &st))
		return -1;
	for (int h = 0; h < sim.opt.nhosts; h++)
		if (keepers[h].net_ino == st.st_ino &&
		    keepers[h].net_dev == st.st_dev)
			return h;
	return -1;
}

/*
 * The daemon steps into host @host's network namespace, to configure its
 * interfaces (ip(8), a child, inherits it) and read their addresses;
 * hosts_leave_net() steps back.  Without --hosts, both do nothing.
 */
int hosts_enter_net(int host)
{
	char path[64];
	int fd, err = 0;

	if (!sim.opt.nhosts)
		return 0;
	saved_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)keepers[host].pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (saved_net < 0 || fd < 0 || setns(fd, CLONE_NEWNET))
		err = -errno;
	if (fd >= 0)
		close(fd);
	return err;
}

void hosts_leave_net(void)
{
	if (saved_net < 0)
		return;
	if (setns(saved_net, CLONE_NEWNET))
		sim_log("hosts: cannot return to the daemon's network namespace: %m");
	close(saved_net);
	saved_net = -1;
}

/* The pid of host @host's keeper, to move an interface into its namespace. */
pid_t host_keeper_pid(int host)
{
	return keepers[host].pid;
}

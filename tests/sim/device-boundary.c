/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's boundary holds whichever way a program crosses it: the
 * device file's pages are mapped by the kernel itself, so a raw mmap
 * system call (as UCX's memory hooks make it) maps the device's UAR,
 * BlueFlame and clock pages, and sysfs read by its literal /sys path is
 * the simulated host's where the simulator could give the process a
 * view of /sys of its own.  The simulator's own descriptors stay out of
 * the program's way.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../tap.h"
#include "../cases.h"
#include "../device.h"

static struct ibv_context *ctx;	/* main's: the device, open */
static long page_size;

/* mmap as a program that bypasses the C library makes it. */
static void *raw_mmap(int fd, int prot, long page)
{
	return (void *)syscall(SYS_mmap, NULL, page_size, prot, MAP_SHARED, fd,
			       page * page_size);
}

static uint64_t clock_of(const volatile void *page)
{
	return be64toh(*(const volatile uint64_t *)page) & ((1ULL << 48) - 1);
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* The clock page, mapped behind the C library's back, runs. */
static void raw_clock_page(void)
{
	void *p = raw_mmap(ctx->cmd_fd, PROT_READ, 3);
	uint64_t first, later;

	if (p == MAP_FAILED) {
		check(0, "raw mmap of the clock page (offset 3): %s",
		      strerror(errno));
		return;
	}
	first = clock_of(p);
	nap_ms(50);
	later = clock_of(p);
	check(later > first,
	      "a raw mmap of the clock page maps the device's running clock (%llu -> %llu)",
	      (unsigned long long)first, (unsigned long long)later);
	munmap(p, page_size);
}

/* Both ways of mapping the UAR page reach one page: the device's. */
static void raw_uar_page(void)
{
	/* Past the doorbell registers: a word the device does not read. */
	const size_t spare = 0x800 / sizeof(uint32_t);
	volatile uint32_t *raw, *libc;

	raw = raw_mmap(ctx->cmd_fd, PROT_WRITE, 0);
	libc = mmap(NULL, page_size, PROT_WRITE, MAP_SHARED, ctx->cmd_fd, 0);
	if (raw == MAP_FAILED || libc == MAP_FAILED) {
		check(0, "mmap of the UAR page, raw and through the C library: %s",
		      strerror(errno));
		return;
	}
	raw[spare] = 0x5a5aa5a5;
	check(libc[spare] == 0x5a5aa5a5,
	      "a raw mmap of the UAR page maps the page the C library's does");
	raw[spare] = 0;
	munmap((void *)raw, page_size);
	munmap((void *)libc, page_size);
	check(raw_mmap(ctx->cmd_fd, PROT_WRITE, 1) != MAP_FAILED,
	      "a raw mmap of the BlueFlame page (offset 1) maps");
}

/* The file of the pages is the device's: no process resizes it. */
static void pages_keep_their_size(void)
{
	int ret = ftruncate(ctx->cmd_fd, 0), err = errno;

	check(ret == -1 && err == EPERM,
	      "ftruncate() of the device file fails with EPERM (%s)",
	      ret ? strerror(err) : "it succeeded");
	check(ibv_alloc_pd(ctx) != NULL, "the device still answers");
}

/* The simulator's socket for a device: a descriptor the program never had. */
static int conn_socket(void)
{
	char link[64], path[PATH_MAX];
	struct dirent *d;
	int found = -1;
	DIR *dir = opendir("/proc/self/fd");

	while (dir && (d = readdir(dir))) {
		int fd = atoi(d->d_name);
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0 || fd == dirfd(dir))
			continue;
		link[n] = 0;
		if (!strncmp(link, "socket:", 7) && fd > found)
			found = fd;
	}
	if (dir)
		closedir(dir);
	return found;
}

static void private_descriptors(void)
{
	int sock = conn_socket(), null;

	if (sock < 0) {
		check(0, "the simulator's socket is found in /proc/self/fd");
		return;
	}
	check(sock > ctx->cmd_fd + 16,
	      "the simulator's socket (%d) is far above the program's numbers (the device: %d)",
	      sock, ctx->cmd_fd);
	errno = 0;
	check(close(sock) == -1 && errno == EBADF,
	      "close() of its number fails with EBADF, as for a number never opened");
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	check(null >= 0 && dup2(null, sock) == sock,
	      "dup2() onto its number succeeds");
	check(ibv_alloc_pd(ctx) != NULL,
	      "the device still answers: its socket moved first");
	close(sock);
	close(null);
}

static void read_line(const char *path, char *buf, size_t len)
{
	int fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (fd >= 0)
		close(fd);
}

/*
 * /sys by its literal path, through raw system calls: the simulated host's
 * devices, laid out as the kernel lays them, beside the host's own.  Only
 * where the daemon could make a mount namespace ("mntns" in its run
 * directory): not as an ordinary user without user namespaces, nor in a
 * chroot.
 */
static void literal_sysfs(void)
{
	const char *dir = getenv("MLX4SIM_DIR"), *sysfs = getenv("SYSFS_PATH");
	char path[PATH_MAX], text[256];

	snprintf(path, sizeof(path), "%s/mntns", dir ? dir : "");
	if (access(path, F_OK)) {
		printf("ok %d - literal /sys paths # SKIP the simulator has no mount namespace on this machine (see its log)\n",
		       ++tap_count);
		return;
	}
	check(sysfs && !strcmp(sysfs, "/sys"), "SYSFS_PATH is /sys (%s)",
	      sysfs ? sysfs : "unset");
	read_line("/sys/class/infiniband/mlx4_0/device/vendor", text,
		  sizeof(text));
	check(!strcmp(text, "0x15b3"),
	      "/sys/class/infiniband/mlx4_0/device/vendor, read raw, is Mellanox's (%s)",
	      text);
	check(realpath("/sys/class/infiniband/mlx4_0", path) &&
	      !strcmp(path, "/sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx4_0"),
	      "the class entry leads into the PCI function's directory (%s)",
	      path);
	read_line("/sys/bus/pci/devices/0000:01:00.0/device", text,
		  sizeof(text));
	check(!strcmp(text, "0x1003") || !strcmp(text, "0x1007"),
	      "/sys/bus/pci/devices lists the adapter, a ConnectX-3 (%s)", text);
	/* DPDK's PCI scan passes a function with no driver link by. */
	check(realpath("/sys/bus/pci/devices/0000:01:00.0/driver", path) &&
	      !strcmp(path, "/sys/bus/pci/drivers/mlx4_core"),
	      "the function's driver is mlx4_core (%s)", path);
	check(realpath("/sys/bus/pci/drivers/mlx4_core/0000:01:00.0", path) &&
	      !strcmp(path, "/sys/devices/pci0000:00/0000:01:00.0"),
	      "mlx4_core's directory leads back to the function (%s)", path);
	read_line("/sys/class/infiniband_verbs/uverbs0/ibdev", text,
		  sizeof(text));
	check(!strcmp(text, "mlx4_0"), "infiniband_verbs/uverbs0 is mlx4_0's");
	check(access("/sys/class/net/lo", F_OK) == 0 &&
	      access("/sys/devices/system/cpu", F_OK) == 0,
	      "the host's own entries stay (class/net/lo, devices/system/cpu)");
}

/*
 * After the program closed the device, its async event file (a copy kept
 * open here) stays silent, as uverbs's does: never ready, a non-blocking
 * read finds nothing.  Only the driver's going posts DEVICE_FATAL.  (An
 * epoll loop that still watches the file, as DPDK's mlx4 PMD's does while
 * it closes a port, spun on a file that hung up.)
 */
static void async_file_after_close(void)
{
	struct ibv_context *own = open_first_device("device-boundary");
	struct pollfd p = { .events = POLLIN };
	char buf[16];
	ssize_t n;
	int ready;

	p.fd = fcntl(own->async_fd, F_DUPFD_CLOEXEC, 0);
	ibv_close_device(own);
	ready = p.fd >= 0 ? poll(&p, 1, 200) : -1;
	check(ready == 0,
	      "the async file of a closed device is not ready (poll: %d, revents 0x%x)",
	      ready, p.revents);
	fcntl(p.fd, F_SETFL, O_NONBLOCK);
	n = read(p.fd, buf, sizeof(buf));
	check(n < 0 && errno == EAGAIN,
	      "a non-blocking read of it finds nothing (%zd, %s)", n,
	      n < 0 ? strerror(errno) : "an event");
	close(p.fd);
}

/* The cases, in the order a full run takes them. */
static const struct test_case cases[] = {
	{ "raw_clock_page", raw_clock_page,
	  "the clock page mapped by a raw mmap system call runs" },
	{ "raw_uar_page", raw_uar_page,
	  "a raw mmap and the provider's reach the same UAR page" },
	{ "pages_keep_their_size", pages_keep_their_size,
	  "ftruncate() of the device file fails; the device still answers" },
	{ "private_descriptors", private_descriptors,
	  "the simulator's socket is out of the program's way" },
	{ "async_file_after_close", async_file_after_close,
	  "a closed device's async event file stays silent, as uverbs's" },
	{ "literal_sysfs", literal_sysfs,
	  "/sys by its literal path, through raw system calls, is the host's" },
};

/* Usage: device-boundary [--list | NAME...] */
int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	ctx = open_first_device("device-boundary");
	page_size = sysconf(_SC_PAGESIZE);
	cases_run(cases, CASES_N(cases));
	ibv_close_device(ctx);
	return tap_finish();
}

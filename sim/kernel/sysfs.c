/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The sysfs tree a host with these adapters would show: what libibverbs
 * reads to find devices and match providers (class/infiniband_verbs), and
 * what it and the diagnostic tools read about adapters and ports
 * (class/infiniband).  Processes see it through SYSFS_PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/ib_user_mad.h>
#include <rdma/rdma_user_cm.h>

#include "../host/protocol.h"
#include "kernel.h"

static char sysfs_root[PATH_MAX];	/* for the files that change */

/* A path in @buf (PATH_MAX bytes); -ENAMETOOLONG if it does not fit. */
static int pathf(char *buf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int put(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *f;

	if (pathf(path, "%s/%s", dir, name))
		return -ENAMETOOLONG;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) ? -errno : 0;
}

static void guid_str(uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x",
		 (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
		 (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
}

/* Where an adapter's PCI function is, relative to the tree's root. */
static void pci_function(const struct sim_hca *hca, char *rel, size_t len)
{
	snprintf(rel, len, "devices/pci0000:00/0000:%02x:00.0", hca->local + 1);
}

/*
 * The function's memory BARs: BAR 0, the device's registers (1 MiB),
 * and BAR 2, the UAR and BlueFlame pages (8 MiB, prefetchable), both
 * 64-bit, at addresses of each adapter's own.  pcilib, which perftest
 * uses, gives up on a function without its "resource" file.
 */
#define PCI_BAR0_SIZE	(1ULL << 20)
#define PCI_BAR2_SIZE	(8ULL << 20)
#define PCI_MEM64_FLAGS	0x140204ULL	/* IORESOURCE_MEM, _MEM_64, _SIZEALIGN */
#define PCI_PREFETCH_FLAGS 0x14220cULL	/* the same, _PREFETCH */

static uint64_t bar_base(const struct sim_hca *hca, int bar)
{
	return 0xf0000000ULL + hca->index * 0x1000000ULL +
	       (bar ? PCI_BAR0_SIZE * 4 : 0);
}

static int pci_resource(const char *pci_dir, const struct sim_hca *hca)
{
	char path[PATH_MAX];
	FILE *f;

	if (pathf(path, "%s/resource", pci_dir))
		return -ENAMETOOLONG;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	/* Six BARs, the expansion ROM and the bridge windows: 13 lines. */
	for (int i = 0; i < 13; i++) {
		uint64_t start = 0, end = 0, flags = 0;

		if (i == 0 || i == 2) {
			start = bar_base(hca, i);
			end = start + (i ? PCI_BAR2_SIZE : PCI_BAR0_SIZE) - 1;
			flags = i ? PCI_PREFETCH_FLAGS : PCI_MEM64_FLAGS;
		}
		fprintf(f, "0x%016llx 0x%016llx 0x%016llx\n",
			(unsigned long long)start, (unsigned long long)end,
			(unsigned long long)flags);
	}
	return fclose(f) ? -errno : 0;
}

static void le16_at(uint8_t *cfg, int off, uint16_t v)
{
	cfg[off] = v;
	cfg[off + 1] = v >> 8;
}

static void le32_at(uint8_t *cfg, int off, uint32_t v)
{
	le16_at(cfg, off, v);
	le16_at(cfg, off + 2, v >> 16);
}

/*
 * The first 256 bytes of its configuration space, as a reader without
 * privilege gets them: the header and the PCI Express capability (an
 * endpoint with relaxed ordering enabled; 8 GT/s, 8 lanes).
 */
static int pci_config(const char *pci_dir, const struct sim_hca *hca)
{
	uint8_t cfg[256] = {};
	char path[PATH_MAX];
	FILE *f;

	le16_at(cfg, 0x00, CX3_PCI_VENDOR_ID);
	le16_at(cfg, 0x02, CX3_PCI_DEVICE);
	le16_at(cfg, 0x04, 0x0406);	/* memory space, bus master, no INTx */
	le16_at(cfg, 0x06, 0x0010);	/* a capability list */
	le32_at(cfg, 0x08, 0x02070000);	/* class 02, subclass 07, revision 0 */
	le32_at(cfg, 0x10, (uint32_t)bar_base(hca, 0) | 0x4);
	le32_at(cfg, 0x14, bar_base(hca, 0) >> 32);
	le32_at(cfg, 0x18, (uint32_t)bar_base(hca, 2) | 0xc);
	le32_at(cfg, 0x1c, bar_base(hca, 2) >> 32);
	le16_at(cfg, 0x2c, CX3_PCI_VENDOR_ID);
	le16_at(cfg, 0x2e, 0x0051);
	cfg[0x34] = 0x60;		/* the first capability */
	cfg[0x3d] = 1;			/* INTA# */
	cfg[0x60] = 0x10;		/* PCI Express, the last */
	le16_at(cfg, 0x62, 0x0002);	/* version 2, an endpoint */
	le32_at(cfg, 0x64, 0x00008fe2);	/* device capabilities */
	le16_at(cfg, 0x68, 0x2810);	/* device control: relaxed ordering */
	le32_at(cfg, 0x6c, 0x00000083);	/* link: 8 GT/s, x8 */
	le16_at(cfg, 0x72, 0x0083);	/* link status: 8 GT/s, x8 */
	if (pathf(path, "%s/config", pci_dir))
		return -ENAMETOOLONG;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fwrite(cfg, 1, sizeof(cfg), f);
	return fclose(f) ? -errno : 0;
}

/*
 * The function's driver, mlx4_core: its "driver" link, and its entry in
 * the driver's directory on the bus.  DPDK's PCI scan passes a function
 * without a driver by.
 */
#define PCI_DRIVER	"mlx4_core"

/* A link @name to @target in @root's directory @sub, made if need be. */
static int link_in(const char *root, const char *sub, const char *name,
		   const char *target)
{
	char dir[PATH_MAX], link[PATH_MAX];
	int err;

	err = pathf(dir, "%s/%s", root, sub);
	if (!err)
		err = mkdir_p(dir);
	if (!err)
		err = pathf(link, "%s/%s", dir, name);
	if (err)
		return err;
	if (symlink(target, link) && errno != EEXIST)
		return -errno;
	return 0;
}

static int pci_driver(const char *root, const char *pci_dir, const char *rel)
{
	char text[PATH_MAX];
	int err;

	err = pathf(text, "../../../../%s", rel);
	if (!err)
		err = link_in(root, "bus/pci/drivers/" PCI_DRIVER,
			      strrchr(rel, '/') + 1, text);
	return err ?: link_in(pci_dir, ".", "driver",
			      "../../../bus/pci/drivers/" PCI_DRIVER);
}

/*
 * The adapter's PCI function, and its entry on the PCI bus.  The links
 * are relative, as the kernel's are: the tree reads the same at
 * SYSFS_PATH and where a process sees it as /sys (sysview.c).
 */
static int pci_device(const char *root, struct sim_hca *hca, char *pci_dir)
{
	char rel[64], text[PATH_MAX];
	const char *slot;
	int err;

	pci_function(hca, rel, sizeof(rel));
	slot = strrchr(rel, '/') + 1;
	err = pathf(pci_dir, "%s/%s", root, rel);
	if (!err)
		err = mkdir_p(pci_dir);
	if (!err)
		err = pathf(text, "../../../%s", rel);
	if (!err)
		err = link_in(root, "bus/pci/devices", slot, text);
	if (!err)
		err = pci_driver(root, pci_dir, rel);
	if (err)
		return err;
	put(pci_dir, "vendor", "0x%04x\n", CX3_PCI_VENDOR_ID);
	put(pci_dir, "device", "0x%04x\n", CX3_PCI_DEVICE);
	put(pci_dir, "subsystem_vendor", "0x%04x\n", CX3_PCI_VENDOR_ID);
	put(pci_dir, "subsystem_device", "0x0051\n");
	put(pci_dir, "class", "0x020700\n");
	put(pci_dir, "numa_node", "-1\n");
	put(pci_dir, "local_cpulist", "0-%ld\n", sysconf(_SC_NPROCESSORS_ONLN) - 1);
	/* A ConnectX-3's link: PCI Express 3.0, 8 lanes (UCX reads its speed). */
	put(pci_dir, "max_link_speed", "8.0 GT/s PCIe\n");
	put(pci_dir, "current_link_speed", "8.0 GT/s PCIe\n");
	put(pci_dir, "max_link_width", "8\n");
	put(pci_dir, "current_link_width", "8\n");
	put(pci_dir, "uevent", "DRIVER=" PCI_DRIVER "\nPCI_CLASS=20700\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:0051\nPCI_SLOT_NAME=%s\n",
	    CX3_PCI_VENDOR_ID, CX3_PCI_DEVICE, CX3_PCI_VENDOR_ID, slot);
	put(pci_dir, "modalias", "pci:v%08Xd%08Xsv%08Xsd00000051bc02sc07i00\n",
	    CX3_PCI_VENDOR_ID, CX3_PCI_DEVICE, CX3_PCI_VENDOR_ID);
	err = pci_resource(pci_dir, hca);
	return err ?: pci_config(pci_dir, hca);
}

/*
 * A class device of the adapter's, as the kernel lays it out: its
 * directory under the PCI function (@class/@name there, into @dir), the
 * class's entry a link to it, and its "device" link back to the function.
 */
static int class_device(const char *root, const struct sim_hca *hca,
			const char *class, const char *name, char *dir)
{
	char rel[64], text[PATH_MAX], link[PATH_MAX];
	int err;

	pci_function(hca, rel, sizeof(rel));
	err = pathf(dir, "%s/%s/%s/%s", root, rel, class, name);
	if (!err)
		err = mkdir_p(dir);
	if (!err)
		err = pathf(link, "%s/class/%s", root, class);
	if (!err)
		err = mkdir_p(link);
	if (!err)
		err = pathf(link, "%s/class/%s/%s", root, class, name);
	if (!err)
		err = pathf(text, "../../%s/%s/%s", rel, class, name);
	if (err)
		return err;
	if (symlink(text, link) && errno != EEXIST)
		return -errno;
	if (pathf(link, "%s/device", dir) ||
	    pathf(text, "../../../%s", strrchr(rel, '/') + 1))
		return -ENAMETOOLONG;
	if (symlink(text, link) && errno != EEXIST)
		return -errno;
	return 0;
}

static int gid_files(const char *dir, struct sim_port *port)
{
	char sub[PATH_MAX], name[16];
	uint8_t gid[16];
	int err;

	err = pathf(sub, "%s/gids", dir);
	if (!err)
		err = mkdir_p(sub);
	if (err)
		return err;
	for (int i = 0; i < CX3_GID_TBL_LEN; i++) {
		port_gid(port, i, gid);
		snprintf(name, sizeof(name), "%d", i);
		put(sub, name, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
		    gid[0], gid[1], gid[2], gid[3], gid[4], gid[5], gid[6],
		    gid[7], gid[8], gid[9], gid[10], gid[11], gid[12],
		    gid[13], gid[14], gid[15]);
	}
	return 0;
}

/*
 * The attributes of a RoCE port's GIDs: each entry's type and network
 * interface.  The kernel's files of an empty entry cannot be read; here
 * they do not exist.
 */
static int gid_attr_files(const char *dir, struct sim_port *port)
{
	char types[PATH_MAX], ndevs[PATH_MAX], name[16];
	int err;

	err = pathf(types, "%s/gid_attrs/types", dir);
	if (!err)
		err = pathf(ndevs, "%s/gid_attrs/ndevs", dir);
	if (!err)
		err = mkdir_p(types);
	if (!err)
		err = mkdir_p(ndevs);
	if (err)
		return err;
	for (int i = 0; i < port->ngids; i++) {
		snprintf(name, sizeof(name), "%d", i);
		put(types, name, "%s\n",
		    port->gids[i].type == IBV_GID_TYPE_ROCE_V2 ?
		    "RoCE v2" : "IB/RoCE v1");
		put(ndevs, name, "%s\n", port->gids[i].ndev);
	}
	return 0;
}

static int pkey_files(const char *dir, int len)
{
	char sub[PATH_MAX], name[16];
	int err;

	err = pathf(sub, "%s/pkeys", dir);
	if (!err)
		err = mkdir_p(sub);
	if (err)
		return err;
	for (int i = 0; i < len; i++) {
		snprintf(name, sizeof(name), "%d", i);
		put(sub, name, "0x%04x\n", i == 0 ? 0xffff : 0);
	}
	return 0;
}

/* An Ethernet port has no subnet manager: its LIDs read 0. */
static int ether_port_dir(const char *dir, struct sim_port *port)
{
	int err = gid_attr_files(dir, port);

	if (!err)
		err = pkey_files(dir, 1);
	if (err)
		return err;
	put(dir, "lid", "0x0\n");
	put(dir, "lid_mask_count", "0\n");
	put(dir, "sm_lid", "0x0\n");
	put(dir, "sm_sl", "0\n");
	put(dir, "rate", "40 Gb/sec (4X QDR)\n");
	put(dir, "cap_mask", "0x%08x\n", CX3_ETH_PORT_CAP_FLAGS);
	return put(dir, "link_layer", "Ethernet\n");
}

static int ib_port_dir(const char *dir, struct sim_port *port)
{
	int err = pkey_files(dir, CX3_PKEY_TBL_LEN);

	if (err)
		return err;
	put(dir, "lid", "0x%x\n", port->lid);
	put(dir, "lid_mask_count", "0\n");
	put(dir, "sm_lid", "0x%x\n", port->sm_lid);
	put(dir, "sm_sl", "%d\n", port->sm_sl);
	put(dir, "rate", "56 Gb/sec (4X FDR)\n");
	put(dir, "cap_mask", "0x%08x\n", port_cap_mask(port));
	return put(dir, "link_layer", "InfiniBand\n");
}

/* The "state" file: the logical state, as ib_core's sysfs spells it. */
static const char *state_text(const struct sim_port *port)
{
	static const char *const text[] = {
		"0: NOP\n", "1: DOWN\n", "2: INIT\n", "3: ARMED\n",
		"4: ACTIVE\n",
	};

	if (port->down || port->state >= ARRAY_SIZE(text))
		return text[1];
	return text[port->state];
}

static int port_dir(const char *ibdev, struct sim_port *port)
{
	char dir[PATH_MAX];
	int err;

	err = pathf(dir, "%s/ports/%d", ibdev, port->num);
	if (!err)
		err = gid_files(dir, port);
	if (err)
		return err;
	put(dir, "state", "%s", state_text(port));
	put(dir, "phys_state", "5: LinkUp\n");
	return port->link_layer == IBV_LINK_LAYER_ETHERNET ?
	       ether_port_dir(dir, port) : ib_port_dir(dir, port);
}

/*
 * The PCI function's network interfaces, as mlx4_en registers one for each
 * Ethernet port: where a program finds the interface of a device's port.
 */
static int net_dirs(const char *pci_dir, struct sim_hca *hca)
{
	char dir[PATH_MAX];
	int err;

	for (int p = 0; p < hca->nports; p++) {
		struct sim_port *port = &hca->port[p];
		const uint8_t *m = port->mac;

		if (port->link_layer != IBV_LINK_LAYER_ETHERNET)
			continue;
		err = pathf(dir, "%s/net/%s", pci_dir, port->ifname);
		if (!err)
			err = mkdir_p(dir);
		if (err)
			return err;
		put(dir, "address", "%02x:%02x:%02x:%02x:%02x:%02x\n",
		    m[0], m[1], m[2], m[3], m[4], m[5]);
		put(dir, "dev_port", "%d\n", p);
		put(dir, "ifindex", "%u\n", if_nametoindex(port->ifname));
	}
	return 0;
}

/*
 * The InfiniBand ports' IP interfaces (ipoib.c) as ib_ipoib shows them:
 * under the PCI function's net, a class/net entry each, their IPoIB
 * hardware address (the UD QP's number, the port's GID), type 32
 * (ARPHRD_INFINIBAND), the port behind each and its P_Key.
 */
static int ipoib_net_dirs(const char *root, struct sim_hca *hca)
{
	char dir[PATH_MAX], hex[3 * 20];
	uint8_t hw[20];
	int err;

	for (int p = 0; p < hca->nports; p++) {
		const char *name = ipoib_ifname(&hca->port[p]);

		if (!name)
			continue;
		err = class_device(root, hca, "net", name, dir);
		if (err)
			return err;
		ipoib_hwaddr(&hca->port[p], hw);
		for (int i = 0; i < 20; i++)
			snprintf(hex + 3 * i, 4, "%02x%s", hw[i], i < 19 ? ":" : "");
		put(dir, "address", "%s\n", hex);
		put(dir, "addr_len", "20\n");
		put(dir, "type", "32\n");
		put(dir, "dev_id", "0x0\n");
		put(dir, "dev_port", "%d\n", p);
		put(dir, "ifindex", "%u\n", if_nametoindex(name));
		put(dir, "mtu", "2044\n");
		put(dir, "pkey", "0xffff\n");
		put(dir, "mode", "datagram\n");
	}
	return 0;
}

/*
 * rdma_cm's misc device (/dev/infiniband/rdma_cm): its ABI version, which
 * librdmacm reads, and its device number.
 */
static int rdma_cm_device(const char *root)
{
	char dir[PATH_MAX], link[PATH_MAX];

	if (pathf(dir, "%s/devices/virtual/misc/rdma_cm", root) ||
	    pathf(link, "%s/class/misc", root))
		return -ENAMETOOLONG;
	if (mkdir_p(dir) || mkdir_p(link))
		return -EIO;
	strncat(link, "/rdma_cm", sizeof(link) - strlen(link) - 1);
	if (symlink("../../devices/virtual/misc/rdma_cm", link) &&
	    errno != EEXIST)
		return -errno;
	put(dir, "abi_version", "%d\n", RDMA_USER_CM_ABI_VERSION);
	return put(dir, "dev", "%d:%d\n", MLX4SIM_MISC_MAJOR,
		   MLX4SIM_RDMA_CM_MINOR);
}

static int ib_device(const char *root, struct sim_hca *hca)
{
	char dir[PATH_MAX], guid[32];
	int err;

	err = class_device(root, hca, "infiniband", hca->name, dir);
	if (err)
		return err;
	guid_str(hca->node_guid, guid, sizeof(guid));
	put(dir, "node_guid", "%s\n", guid);
	guid_str(hca->sys_image_guid, guid, sizeof(guid));
	put(dir, "sys_image_guid", "%s\n", guid);
	put(dir, "node_type", "1: CA\n");
	put(dir, "node_desc", "%s\n", hca->node_desc);
	put(dir, "fw_ver", "%s\n", CX3_FW_VER_STR);
	put(dir, "hw_rev", "0\n");
	put(dir, "hca_type", "MT%d\n", CX3_VENDOR_PART_ID);
	put(dir, "board_id", "%s\n", CX3_BOARD_ID);
	for (int p = 0; p < hca->nports; p++) {
		err = port_dir(dir, &hca->port[p]);
		if (err)
			return err;
	}
	return 0;
}

static int uverbs_device(const char *root, struct sim_hca *hca)
{
	char dir[PATH_MAX], name[16];
	int err;

	snprintf(name, sizeof(name), "uverbs%d", hca->local);
	err = class_device(root, hca, "infiniband_verbs", name, dir);
	if (err)
		return err;
	put(dir, "ibdev", "%s\n", hca->name);
	put(dir, "abi_version", "%d\n", MLX4_IB_UVERBS_ABI_VERSION);
	return put(dir, "dev", "%d:%d\n", 231, 192 + hca->local);
}

/*
 * ib_umad's devices: umadN and issmN for each port, numbered across the
 * host's ports in order, with their adapter and port (what libibumad
 * reads to find a port's file) and the character devices' numbers.
 */
static int umad_devices(const char *root, struct sim_hca *hca, int *next)
{
	static const struct { const char *name; int minor0; } kinds[] = {
		{ "umad", 0 }, { "issm", 64 },
	};
	char dir[PATH_MAX], name[16];
	int err;

	for (int p = 0; p < hca->nports; p++, (*next)++) {
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
			snprintf(name, sizeof(name), "%s%d", kinds[k].name,
				 *next);
			err = class_device(root, hca, "infiniband_mad", name,
					   dir);
			if (err)
				return err;
			put(dir, "ibdev", "%s\n", hca->name);
			put(dir, "port", "%d\n", p + 1);
			put(dir, "dev", "231:%d\n", kinds[k].minor0 + *next);
		}
	}
	return 0;
}

/*
 * A port's state after `mlx4sim fault port-down` or port-up (a link that
 * went down polls for its peer), or after an SM's PortInfo Set.  Each
 * file is replaced whole, so that a reader sees the old text or the new.
 */
static void replace(const char *dir, const char *name, const char *text)
{
	char tmp_name[32], tmp[PATH_MAX], path[PATH_MAX];

	snprintf(tmp_name, sizeof(tmp_name), ".%s.tmp", name);
	if (pathf(tmp, "%s/%s", dir, tmp_name) ||
	    pathf(path, "%s/%s", dir, name) ||
	    put(dir, tmp_name, "%s", text) || rename(tmp, path))
		sim_log("sysfs: cannot update %s/%s", dir, name);
}

/* The tree of @host: the run's, or with --hosts the host's own. */
static int tree_root(char *buf, int host)
{
	if (!sim.opt.nhosts)
		return pathf(buf, "%s", sysfs_root);
	return pathf(buf, "%s/node%d/sys", sim.opt.dir, host + 1);
}

void sysfs_port_state(const struct sim_port *port)
{
	char dir[PATH_MAX], root[PATH_MAX], text[16];

	if (tree_root(root, port->hca->host) ||
	    pathf(dir, "%s/class/infiniband/%s/ports/%d", root,
		  port->hca->name, port->num))
		return;
	replace(dir, "state", state_text(port));
	replace(dir, "phys_state", port->down ? "2: Polling\n" : "5: LinkUp\n");
	/* ... its capabilities while an SM holds its issm file ... */
	snprintf(text, sizeof(text), "0x%08x\n", port_cap_mask(port));
	replace(dir, "cap_mask", text);
	if (port->link_layer != IBV_LINK_LAYER_INFINIBAND)
		return;
	/* ... and what an SM set in its PortInfo. */
	snprintf(text, sizeof(text), "0x%x\n", port->lid);
	replace(dir, "lid", text);
	snprintf(text, sizeof(text), "0x%x\n", port->sm_lid);
	replace(dir, "sm_lid", text);
	snprintf(text, sizeof(text), "%d\n", port->sm_sl);
	replace(dir, "sm_sl", text);
}

/* The tree of host @host: its adapters only, numbered from 0. */
static int create_tree(const char *root, int host)
{
	char dir[PATH_MAX], pci_dir[PATH_MAX];
	int err, umad_next = 0;

	err = pathf(dir, "%s/class/infiniband_verbs", root);
	if (!err)
		err = mkdir_p(dir);
	if (err)
		return err;
	/* The uverbs ABI of the kernel's core; libibverbs wants 3 to 6. */
	put(dir, "abi_version", "6\n");
	err = pathf(dir, "%s/class/infiniband_mad", root);
	if (!err)
		err = mkdir_p(dir);
	if (err)
		return err;
	put(dir, "abi_version", "%d\n", IB_USER_MAD_ABI_VERSION);
	err = rdma_cm_device(root);
	if (err)
		return err;
	for (int h = 0; h < sim.opt.nhcas; h++) {
		struct sim_hca *hca = &sim.hca[h];

		if (hca->host != host)
			continue;
		err = pci_device(root, hca, pci_dir);
		if (!err)
			err = net_dirs(pci_dir, hca);
		if (!err)
			err = ipoib_net_dirs(root, hca);
		if (!err)
			err = ib_device(root, hca);
		if (!err)
			err = uverbs_device(root, hca);
		if (!err)
			err = umad_devices(root, hca, &umad_next);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The sysfs tree at @root; with --hosts, a tree for each host in its
 * directory of the run (node<N>/sys), @root a link to node1's.
 */
int sysfs_create(const char *root)
{
	char tree[PATH_MAX];
	int err = 0;

	snprintf(sysfs_root, sizeof(sysfs_root), "%s", root);
	if (!sim.opt.nhosts)
		return create_tree(root, 0);
	for (int h = 0; h < sim.opt.nhosts && !err; h++)
		err = tree_root(tree, h) ?: create_tree(tree, h);
	if (!err && symlink("node1/sys", root))
		err = -errno;
	return err;
}

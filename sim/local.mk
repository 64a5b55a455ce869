# mlx4sim: the daemon, the preload library and the command that runs them.

pkglibexec_PROGRAMS = sim/mlx4simd sim/mlx4sim-fault sim/mlx4sim-rsh-cmd
sim_mlx4simd_SOURCES = \
	sim/sim.h sim/sim.c sim/list.h sim/table.h sim/table.c \
	sim/host/host.h sim/fabric/fabric.h sim/adapter/adapter.h \
	sim/kernel/kernel.h \
	sim/host/protocol.h sim/host/uverbs-cmds.h sim/host/opcode.h \
	sim/host/opcode.c sim/host/dma.c sim/host/dma-share.c sim/host/vma.h \
	sim/host/vma.c sim/host/sysview.c \
	sim/host/trace.c sim/host/userns.c sim/host/memlock.c sim/host/hosts.c \
	sim/host/rshd.c sim/host/rsh.h \
	sim/fabric/wire.h sim/fabric/subnet.c sim/fabric/ether.c \
	sim/fabric/flight.c sim/fabric/fault.c sim/fabric/pcap.c sim/fabric/inet.c \
	sim/fabric/roce.h sim/fabric/roce.c sim/fabric/uplink.c \
	sim/fabric/mad.h sim/fabric/switch.c \
	sim/adapter/queue.h sim/adapter/doorbell.c sim/adapter/queue.c \
	sim/adapter/req.c sim/adapter/resp.c sim/adapter/comp.c \
	sim/adapter/raw.c sim/adapter/strict.c sim/adapter/eq.c \
	sim/adapter/cq.c sim/adapter/qp.c sim/adapter/srq.c sim/adapter/mpt.c \
	sim/adapter/rss.c sim/adapter/mad-agents.c \
	sim/adapter/wire.h sim/adapter/wire-req.c sim/adapter/wire-resp.c \
	sim/kernel/uverbs.h sim/kernel/ctx.c sim/kernel/ioctl.c \
	sim/kernel/event.c sim/kernel/device.c sim/kernel/pd.c sim/kernel/mr.c \
	sim/kernel/cq.c sim/kernel/qp.c sim/kernel/srq.c sim/kernel/wq.c \
	sim/kernel/rss.c sim/kernel/sysfs.c sim/kernel/fault-request.c \
	sim/kernel/trace-cmd.c sim/kernel/umad.h sim/kernel/umad.c \
	sim/kernel/ib-mad.c sim/kernel/umem.c \
	sim/daemon/main.c \
	sim/kernel/cma.h sim/kernel/ucma.h sim/kernel/cm-mad.h \
	sim/kernel/ucma.c sim/kernel/ucma-cmd.c sim/kernel/cma.c \
	sim/kernel/cma-conn.c sim/kernel/cma-addr.c sim/kernel/cma-attr.c \
	sim/kernel/cma-mcast.c sim/kernel/cm.c sim/kernel/cm-recv.c \
	sim/kernel/cm-timer.c sim/kernel/ipoib.c sim/kernel/hosts-net.c

# mlx4sim-rsh's part that asks a host's keeper to run a command.
sim_mlx4sim_rsh_cmd_SOURCES = sim/rsh-cmd.c sim/host/rsh.h

# `mlx4sim fault`: hands the daemon one fault over a control connection.
sim_mlx4sim_fault_SOURCES = sim/fault-cmd.c sim/host/protocol.h

pkglib_LTLIBRARIES += sim/libmlx4sim.la
sim_libmlx4sim_la_SOURCES = sim/host/preload.h sim/host/protocol.h \
	sim/host/preload.c sim/host/preload-fd.c sim/host/preload-name.c \
	sim/host/preload-stat.c sim/host/preload-dir.c sim/host/preload-event.c \
	sim/host/preload-uverbs.c sim/host/preload-umad.c \
	sim/host/preload-mem.c sim/host/preload-rdmacm.c \
	sim/host/vma.h sim/host/vma.c
sim_libmlx4sim_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
sim_libmlx4sim_la_LDFLAGS = -module -avoid-version -shared
sim_libmlx4sim_la_LIBADD = -ldl -lpthread

# The command finds the daemon and the library next to it in a build tree,
# and where they are installed otherwise.
bin_SCRIPTS += sim/mlx4sim
sim/mlx4sim: $(srcdir)/sim/mlx4sim.in Makefile
	$(AM_V_GEN)$(MKDIR_P) sim && sed \
		-e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' \
		-e 's|@pkglibdir[@]|$(pkglibdir)|g' \
		-e 's|@driverdir[@]|$(driverdir)|g' \
		-e 's|@libdir[@]|$(libdir)|g' \
		-e 's|@VERSION[@]|$(VERSION)|g' \
		$(srcdir)/sim/mlx4sim.in > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
CLEANFILES += sim/mlx4sim
EXTRA_DIST += sim/mlx4sim.in

# mlx4sim-rsh: ssh's stand-in for MPI launchers, to a host of the run.
bin_SCRIPTS += sim/mlx4sim-rsh
sim/mlx4sim-rsh: $(srcdir)/sim/mlx4sim-rsh.in Makefile
	$(AM_V_GEN)$(MKDIR_P) sim && sed \
		-e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' \
		$(srcdir)/sim/mlx4sim-rsh.in > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
CLEANFILES += sim/mlx4sim-rsh
EXTRA_DIST += sim/mlx4sim-rsh.in

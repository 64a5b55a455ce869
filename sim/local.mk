# mlx4sim: the daemon, the preload library and the command that runs them.

pkglibexec_PROGRAMS = sim/mlx4simd sim/mlx4sim-fault
sim_mlx4simd_SOURCES = \
	sim/sim.h sim/uverbs.h sim/uverbs-cmds.h sim/wire.h sim/opcode.h \
	sim/queue.h sim/protocol.h sim/list.h \
	sim/table.h sim/table.c \
	sim/main.c sim/strict.c sim/subnet.c sim/ether.c sim/sysfs.c sim/sysview.c sim/dma.c \
	sim/ctx.c sim/ioctl.c sim/event.c sim/device.c sim/pd.c sim/mr.c sim/cq.c \
	sim/qp.c sim/srq.c sim/wq.c \
	sim/doorbell.c sim/queue.c sim/opcode.c sim/req.c sim/resp.c sim/comp.c \
	sim/trace.c sim/pcap.c sim/raw.c sim/rss.c sim/fault.c sim/flight.c \
	sim/cma.h sim/ucma.h sim/cm-mad.h \
	sim/ucma.c sim/ucma-cmd.c sim/cma.c sim/cma-conn.c sim/cma-addr.c \
	sim/cma-attr.c sim/cma-mcast.c sim/cm.c sim/cm-recv.c sim/cm-timer.c \
	sim/ipoib.c

# `mlx4sim fault`: hands the daemon one fault over a control connection.
sim_mlx4sim_fault_SOURCES = sim/fault-cmd.c sim/protocol.h

pkglib_LTLIBRARIES += sim/libmlx4sim.la
sim_libmlx4sim_la_SOURCES = sim/preload.h sim/protocol.h \
	sim/preload.c sim/preload-fd.c sim/preload-name.c \
	sim/preload-stat.c sim/preload-dir.c sim/preload-event.c \
	sim/preload-uverbs.c sim/preload-rdmacm.c
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

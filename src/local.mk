# SPDX-License-Identifier: BSD-2-Clause
# The provider: libmlx4.so.1, also installed as libmlx4-rdmav$(PABI).so
# (34 or 65: the private interface of the libibverbs configure found).

MLX4_PROVIDER_SOURCES = \
	src/annotate.h \
	src/buf.c \
	src/clock.c \
	src/cq.c \
	src/cq_ex.c \
	src/cqe.h \
	src/dbrec.c \
	src/domain.c \
	src/driver.h \
	src/lock.h \
	src/mlx4.c \
	src/mlx4.h \
	src/mlx4dv.h \
	src/mmio.h \
	src/qp.c \
	src/qp_verbs.c \
	src/srq.c \
	src/verbs.c \
	src/wq.c \
	src/wqe.h \
	src/wr.c

lib_LTLIBRARIES += src/libmlx4.la
src_libmlx4_la_SOURCES = $(MLX4_PROVIDER_SOURCES)
src_libmlx4_la_LDFLAGS = -version-info 1:0:0 -no-undefined \
	-Wl,--version-script=$(srcdir)/src/libmlx4.map -Wl,-z,defs
src_libmlx4_la_LIBADD = -libverbs -lpthread
EXTRA_src_libmlx4_la_DEPENDENCIES = src/libmlx4.map

# Applications that drive the queues themselves include <infiniband/mlx4dv.h>.
mlx4dvincludedir = $(includedir)/infiniband
mlx4dvinclude_HEADERS = src/mlx4dv.h

# libibverbs reads its provider list from $(confdir)/*.driver ...
mlx4confdir = $(confdir)
mlx4conf_DATA = src/mlx4.driver

EXTRA_DIST += src/libmlx4.map src/mlx4.driver

# ... and loads libmlx4-rdmav$(PABI).so from its provider directory: a link
# to the library, relative so that it holds under DESTDIR too.
install-exec-hook: install-mlx4-provider
uninstall-hook: uninstall-mlx4-provider

install-mlx4-provider:
	$(MKDIR_P) '$(DESTDIR)$(driverdir)'
	rm -f '$(DESTDIR)$(driverdir)/libmlx4-rdmav$(PABI).so'
	ln -s -r '$(DESTDIR)$(libdir)/libmlx4.so.1' \
		'$(DESTDIR)$(driverdir)/libmlx4-rdmav$(PABI).so'

uninstall-mlx4-provider:
	rm -f '$(DESTDIR)$(driverdir)/libmlx4-rdmav$(PABI).so'

# make install and make uninstall never overwrite, shadow or delete a file
# of a distribution package (ibverbs-providers and libibverbs-dev on
# Debian, libibverbs and rdma-core-devel on Fedora): the package manager
# could not give it back, and would later overwrite ours.  Over the
# distribution's provider, install the packages (debian/, libmlx4-cx3.spec),
# which replace it with dpkg diversions.  A staged install (DESTDIR) is
# the packages' own and goes on.
MLX4_SYSTEM_PATHS = \
	'$(libdir)/libmlx4.so*' \
	'$(driverdir)/libmlx4-rdmav$(PABI).so' \
	'$(confdir)/mlx4.driver' \
	'$(includedir)/infiniband/mlx4dv.h' \
	'$(pkgconfigdir)/libmlx4.pc' \
	'$(mandir)/man3/mlx4dv_*' \
	'$(mandir)/man7/mlx4dv.7*' \
	'$(bindir)/mlx4sim' \
	'$(pkglibdir)/libmlx4sim.so' \
	'$(pkglibexecdir)/mlx4simd' \
	'$(mandir)/man1/mlx4sim.1*'

# Each target that writes or deletes installed files checks first (make
# runs a target's prerequisites before its recipe).
MLX4_INSTALL_TARGETS = binSCRIPTS libLTLIBRARIES pkglibLTLIBRARIES \
	pkglibexecPROGRAMS mlx4dvincludeHEADERS mlx4confDATA pkgconfigDATA \
	man1 man3 man7 mlx4-provider
$(MLX4_INSTALL_TARGETS:%=install-%) $(MLX4_INSTALL_TARGETS:%=uninstall-%): \
	mlx4-distribution-guard
mlx4-distribution-guard:
	@test -z '$(DESTDIR)' || exit 0; \
	owned=; \
	for f in $(MLX4_SYSTEM_PATHS); do \
		by=`dpkg-query -S "$$f" 2>/dev/null | sed -n 's/^\([^ ]*\): \(.*\)/\2 (\1)/p'`; \
		test -n "$$by" || by=`for x in $$f; do test -e "$$x" && \
			p=\`rpm -qf "$$x" 2>/dev/null\` && echo "$$x ($$p)"; done`; \
		test -n "$$by" || continue; \
		test -n "$$owned" || echo "libmlx4: not touching files of the distribution's packages:" >&2; \
		echo "$$by" | sed 's/^/    /' >&2; \
		owned=yes; \
	done; \
	test -z "$$owned" && exit 0; \
	echo "libmlx4: over the distribution's provider, install the packages instead" >&2; \
	echo "    (README, \"Installing\"):" >&2; \
	echo "    dpkg-buildpackage -b -us -uc && apt install ../libmlx4-1_*.deb ../libmlx4-dev_*.deb" >&2; \
	echo "libmlx4: or configure another prefix, e.g. ./configure --prefix=/opt/libmlx4," >&2; \
	echo "    and load that build with RDMAV_DRIVERS (README, \"Installing\")." >&2; \
	exit 1

# The build tree is a provider directory too:
# RDMAV_DRIVERS=$(abs_builddir)/src/libmlx4 loads this build.
all-local: src/libmlx4-rdmav$(PABI).so

src/libmlx4-rdmav$(PABI).so: src/libmlx4.la
	rm -f $@
	ln -s .libs/libmlx4.so.1 $@

CLEANFILES += src/libmlx4-rdmav$(PABI).so

.PHONY: install-mlx4-provider uninstall-mlx4-provider mlx4-distribution-guard

# SPDX-License-Identifier: BSD-2-Clause
# The provider: libmlx4.so.1, also installed as libmlx4-rdmav$(PABI).so
# (34 or 65: the private interface of the libibverbs configure found).

MLX4_PROVIDER_SOURCES = \
	src/annotate.h \
	src/buf.c \
	src/cq.c \
	src/dbrec.c \
	src/driver.h \
	src/lock.h \
	src/mlx4.c \
	src/mlx4.h \
	src/mlx4dv.h \
	src/mmio.h \
	src/qp.c \
	src/srq.c \
	src/verbs.c \
	src/wq.c

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
	rm -f '$(DESTDIR)$(driverdir)/libmlx4-rdmav34.so'
	ln -s '$(libdir)/libmlx4.so.1' '$(DESTDIR)$(driverdir)/libmlx4-rdmav34.so'

uninstall-mlx4-provider:
	rm -f '$(DESTDIR)$(driverdir)/libmlx4-rdmav34.so'

# The build tree is a provider directory too:
# RDMAV_DRIVERS=$(abs_builddir)/src/libmlx4 loads this build.
all-local: src/libmlx4-rdmav$(PABI).so

src/libmlx4-rdmav$(PABI).so: src/libmlx4.la
	rm -f $@
	ln -s .libs/libmlx4.so.1 $@

CLEANFILES += src/libmlx4-rdmav$(PABI).so

.PHONY: install-mlx4-provider uninstall-mlx4-provider mlx4-distribution-guard

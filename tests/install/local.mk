# make check-install: the Debian packages installed over ibverbs-providers
# and removed again, in a chroot of the machine's Debian release (needs
# root, debootstrap and the network; minutes, so not part of make check).  See the script.
EXTRA_DIST += tests/install/deb-chroot.sh tests/install/dv-probe.c

check-install: dist
	@$(SHELL) $(srcdir)/tests/install/deb-chroot.sh $(DIST_ARCHIVES); \
	status=$$?; test $$status -ne 77 || status=0; exit $$status

.PHONY: check-install

# SPDX-License-Identifier: BSD-2-Clause
# Mutation testing of the provider (tests/mutants/README): each mutant of
# the catalogue planted in a scratch copy of the tree, the tests on the
# simulator run against it.  Not part of make check: it takes minutes.
# MUTANTS='NAME...' runs only those.
check-mutants: all
	perl $(srcdir)/tests/mutants/run.pl $(MUTANTS)

EXTRA_DIST += tests/mutants/README tests/mutants/run.pl \
	tests/mutants/cq.mut tests/mutants/dbrec.mut tests/mutants/mmio.mut \
	tests/mutants/qp.mut tests/mutants/srq.mut tests/mutants/verbs.mut \
	tests/mutants/domain.mut tests/mutants/wq.mut tests/mutants/sim.mut
.PHONY: check-mutants

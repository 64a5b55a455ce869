#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# MPI on the simulator: tests/verbs/mpi-check.c, which sends, receives,
# puts and gets messages from 1 byte to 4 MiB and checks every byte, in 2
# and 4 ranks, with Open MPI's UCX path (pml ucx), its openib BTL, and
# MPICH (ch4:ucx).  UCX is kept to the adapter (UCX_TLS) as ranks on one
# host would otherwise talk through shared memory.
# Usage: mpi.sh project|system
. "$(dirname "$0")/../lib.sh"
provider=$1
src=$top_srcdir/tests/verbs/mpi-check.c
ib_tls=UCX_TLS=rc_verbs,ud_verbs,self
root_flag=
[ "$(id -u)" = 0 ] && root_flag=--allow-run-as-root

# mpi NAME RANKS PROGRAM CMD...: CMD runs PROGRAM in RANKS ranks, which
# must check all their transfers and exit 0, UCX warning of nothing.
mpi() {
	name=$1 ranks=$2 prog=$3
	shift 3
	guarded "$@" "$prog" >"$work/mpi.log" 2>&1
	status=$?
	want="mpi-check: $ranks ranks, $((ranks * 91)) transfers checked byte by byte"
	if [ $status -eq 0 ] && grep -qx "$want" "$work/mpi.log" &&
	   ! grep -q 'UCX  \(WARN\|ERROR\)' "$work/mpi.log"; then
		ok "$name, $ranks ranks"
	else
		not_ok "$name, $ranks ranks (status $status)"
		show "$work/mpi.log"
	fi
}

have_ompi= have_mpich=
if command -v mpicc.openmpi >/dev/null 2>&1; then
	mpicc.openmpi -O2 -o "$work/check-ompi" "$src" && have_ompi=1
fi
if command -v mpicc.mpich >/dev/null 2>&1; then
	mpicc.mpich -O2 -o "$work/check-mpich" "$src" && have_mpich=1
fi
if [ -z "$have_ompi$have_mpich" ]; then
	echo "1..0 # SKIP no MPI: install libopenmpi-dev and libmpich-dev (apt-get install libopenmpi-dev openmpi-bin libmpich-dev mpich)"
	exit 0
fi

sim_start --provider="$provider"
for ranks in 2 4; do
	if [ -z "$have_ompi" ]; then
		skip "Open MPI, $ranks ranks: mpicc.openmpi not found (libopenmpi-dev)"
	else
		# One-sided too: left to choose, Open MPI 4.1 takes osc/rdma
		# over its shared-memory and TCP BTLs here, past the adapter
		# (and that path loses puts now and then after a fence).
		mpi "Open MPI over UCX (pml ucx, osc ucx)" $ranks \
			"$work/check-ompi" \
			mpirun.openmpi $root_flag --oversubscribe -np $ranks \
			--mca pml ucx --mca osc ucx --mca btl ^openib \
			-x "$ib_tls"
		# Open MPI 4 leaves InfiniBand ports to UCX unless told.
		mpi "Open MPI over its openib BTL" $ranks "$work/check-ompi" \
			mpirun.openmpi $root_flag --oversubscribe -np $ranks \
			--mca pml ob1 --mca btl openib,self \
			--mca btl_openib_allow_ib 1
	fi
	if [ -z "$have_mpich" ]; then
		skip "MPICH, $ranks ranks: mpicc.mpich not found (libmpich-dev)"
	else
		mpi "MPICH over UCX (ch4:ucx)" $ranks "$work/check-mpich" \
			env "$ib_tls" mpirun.mpich -np $ranks
	fi
done
check "no strict-mode breach" sim_stop
finish

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Set up a Debian or Ubuntu machine for libmlx4, build everything, and
#   ./quickstart.sh         run libmlx4 on mlx4sim: ibv_devinfo and a pingpong
#   ./quickstart.sh check   run the whole test suite
# Installs what is missing with apt-get (as root).

set -e
cd "$(dirname "$0")"
mode=${1:-demo}
case $mode in
demo|check) ;;
*) echo "usage: $0 [demo|check]" >&2; exit 2 ;;
esac

# What the build and the demo need, then what only some tests use: a
# test skips without its tool and names the package, so a package this
# machine's release or CPU does not have (a cross compiler for its own
# CPU) is left out rather than failing the install.
PACKAGES="autoconf automake libtool pkg-config make gcc libc6-dev
	libibverbs-dev ibverbs-providers ibverbs-utils iproute2"
OPTIONAL="perftest valgrind clang libclang-rt-dev tshark debootstrap qemu-user
	ucx-utils openmpi-bin libopenmpi-dev mpich libmpich-dev rdmacm-utils
	dpdk-dev librte-net-mlx4-23 infiniband-diags opensm libfabric-bin
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
	gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross
	gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
	gcc-s390x-linux-gnu libc6-dev-s390x-cross
	gcc-i686-linux-gnu libc6-dev-i386-cross"

not_installed() {
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q "install ok installed" || echo "$p"
	done
}

install_missing() {
	# shellcheck disable=SC2086 # the lists: words
	missing=$(not_installed $PACKAGES) optional=$(not_installed $OPTIONAL)
	[ -z "$missing$optional" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null; then
			if [ -z "$missing" ]; then
				echo "quickstart: not installed (run as root to install them; their tests will be skipped):" $optional
				return 0
			fi
			echo "quickstart: run as root to install:" $missing $optional >&2
			exit 1
		fi
		sudo=sudo
	fi
	# Without the package lists, only what is required can fail below.
	$sudo apt-get update -q || echo "quickstart: apt-get update failed" >&2
	available=
	for p in $optional; do
		if LC_ALL=C apt-cache policy "$p" 2>/dev/null |
		   grep -q 'Candidate: [0-9]'; then
			available="$available $p"
		else
			echo "quickstart: $p is not available here: the tests that need it will be skipped"
		fi
	done
	if [ -n "$missing" ]; then
		echo "quickstart: installing" $missing
		apt_install $missing
	fi
	if [ -n "$available" ]; then
		echo "quickstart: installing" $available
		apt_install $available ||
			echo "quickstart: some of these could not be installed: the tests that need them will be skipped" >&2
	fi
}

apt_install() {
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
		--no-install-recommends "$@"
}

build() {
	[ -x configure ] || ./autogen.sh
	[ -f Makefile ] || ./configure
	make -j"$(nproc)"
}

demo() {
	sim/mlx4sim run --provider=project -- sh -c '
		out=$(mktemp -d)
		echo "--- ibv_devinfo (libmlx4 on mlx4sim)"
		ibv_devinfo || exit 1
		echo "--- ibv_rc_pingpong: server and client, 1000 iterations, data checked"
		# The server waits for its client at most a minute, and is ended
		# as soon as the client has failed: it would wait forever.
		timeout 60 ibv_rc_pingpong -g 0 -c -n 1000 -p 18515 >"$out/server" 2>&1 &
		server=$!
		# The client tries again while the server is not listening yet.
		tries=0
		while :; do
			timeout 60 ibv_rc_pingpong -g 0 -c -n 1000 -p 18515 localhost \
				>"$out/client" 2>&1
			client_status=$?
			[ $client_status -ne 0 ] && [ $tries -lt 50 ] &&
				grep -q "connect to" "$out/client" &&
				kill -0 $server 2>/dev/null || break
			tries=$((tries + 1))
			sleep 0.1
		done
		[ $client_status -eq 0 ] || kill $server 2>/dev/null
		wait $server
		server_status=$?
		sed "s/^/server: /" "$out/server"
		sed "s/^/client: /" "$out/client"
		rm -rf "$out"
		[ $server_status -eq 0 ] && [ $client_status -eq 0 ]'
}

# The Debian packages installed over the distribution's provider and
# removed again, in a chroot (make check-install): root only, and it says
# why when it skips (no debootstrap, no mirror).  Sets ipass ifail iskip.
check_install() {
	ipass=0 ifail=0 iskip=0
	if [ "$(id -u)" -ne 0 ]; then
		echo "check-install: skipped, it needs root"
		iskip=1
		return 0
	fi
	make check-install >check-install.log 2>&1
	istatus=$?
	cat check-install.log
	ipass=$(grep -c '^ok [0-9]' check-install.log)
	ifail=$(grep -c '^not ok' check-install.log)
	if grep -q '^1\.\.0 # SKIP' check-install.log; then
		iskip=1
	elif [ $istatus -ne 0 ] && [ $ifail -eq 0 ]; then
		ifail=1
	fi
	[ $ifail -eq 0 ]
}

# The suite, then one line: passed, failed, skipped.
check() {
	status=0
	make -j2 check || status=$?
	check_install || status=1
	log=test-suite.log
	count() { sed -n "s/^# $1: *\([0-9]*\)/\1/p" "$log" | head -n 1; }
	if [ -f "$log" ]; then
		pass=$(( $(count PASS) + ipass )) skip=$(( $(count SKIP) + iskip ))
		failed=$(( $(count FAIL) + $(count XPASS) + $(count ERROR) + ifail ))
		echo "$pass passed, $failed failed, $skip skipped"
	else
		echo "0 passed, 1 failed"
	fi
	return $status
}

install_missing
build
$mode

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The Debian packages installed over the distribution's provider and
# removed again, in a chroot of the machine's Debian release:
#   deb-chroot.sh libmlx4-VERSION.tar.gz      (make check-install)
# builds the packages from the release tarball, installs them beside
# ibverbs-providers, shows with running programs (a libibverbs program
# and one linked with -lmlx4) which file serves mlx4, runs a pingpong on
# mlx4sim, removes and purges them, and shows dpkg -V clean and the
# distribution's provider serving again.  Prints TAP.
#
# Needs root, debootstrap and the network (the first run makes a base
# chroot in $MLX4_CHROOT_WORK, default /var/tmp/libmlx4-install, and
# later runs copy it).  Exits 77 (skipped) with the reason otherwise.
# MLX4_DEBIAN_MIRROR chooses the mirror, MLX4_CHROOT_SUITE the release.

set -u
tarball=${1:?usage: $0 libmlx4-VERSION.tar.gz}
# The machine's own release, so that the packages meet the rdma-core
# (and private interface) users of this release have: "sid" for an
# unstable or testing system (its debian_version ends in /sid),
# bookworm where there is no Debian release to follow.
host_suite() {
	case $(cat /etc/debian_version 2>/dev/null) in
	*/sid) echo sid; return ;;
	esac
	. /etc/os-release 2>/dev/null
	[ "${ID:-}" = debian ] && [ -n "${VERSION_CODENAME:-}" ] &&
		{ echo "$VERSION_CODENAME"; return; }
	echo bookworm
}
suite=${MLX4_CHROOT_SUITE:-$(host_suite)}
mirror=${MLX4_DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=${MLX4_CHROOT_WORK:-/var/tmp/libmlx4-install}
base=$work/base-$suite
# The build dependencies, the distribution's packages that ours go over
# (with perftest, which apt would remove with them), and what the test runs.
packages=build-essential,debhelper,autoconf,automake,libtool,pkg-config,libibverbs-dev,ibverbs-providers,ibverbs-utils,perftest,rdma-core,procps

skip() {
	echo "1..0 # SKIP $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount, dpkg)"
command -v debootstrap >/dev/null || skip "needs debootstrap (apt-get install debootstrap)"
[ -f "$tarball" ] || { echo "Bail out! no tarball $tarball"; exit 1; }
tarball=$(realpath "$tarball")
start=$(date +%s)

if [ ! -f "$base/.complete" ]; then
	echo "# debootstrap $suite into $base"
	rm -rf "$base"
	mkdir -p "$work"
	debootstrap --variant=minbase --include="$packages" "$suite" "$base" \
		"$mirror" >"$work/debootstrap.log" 2>&1 ||
		skip "debootstrap failed (network?), see $work/debootstrap.log"
	touch "$base/.complete"
fi

root=$work/root.$$
# The chroot has its own /dev (debootstrap's device nodes) and only /proc
# mounted.  It is deleted only once nothing runs in it and nothing is
# mounted in it, and never across a file system boundary.
cleanup() {
	[ -d "$root" ] || return
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	sleep 0.2
	umount "$root/proc" 2>/dev/null || umount -l "$root/proc" 2>/dev/null
	if grep -q " $root/" /proc/mounts; then
		echo "# $root still has mounts: left in place"
		return
	fi
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cp -a "$base" "$root"
mount -t proc proc "$root/proc"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$root/etc/hosts"
cp "$tarball" "$root/tmp/"
cp "$(dirname "$0")/dv-probe.c" "$root/tmp/"
cp /etc/resolv.conf "$root/etc/" 2>/dev/null

n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

# Shell functions for the commands run in the chroot.  dpkg -V says what
# differs, and exits 0 all the same: clean is no output.
helpers='
verify_clean() {
	out=$(dpkg -V "$@" 2>&1)
	echo "dpkg -V $*: ${out:-clean}"
	[ -z "$out" ]
}'

# inside CMD: a shell command in the chroot, its output as TAP comments.
inside() {
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		/bin/sh -c "$helpers
$1" >"$work/out.$$" 2>&1
	status=$?
	sed 's/^/# /' "$work/out.$$"
	return $status
}
# step DESCRIPTION CMD: one TAP case.
step() {
	if inside "$2"; then ok "$1"; else not_ok "$1"; fi
}

ma=$(chroot "$root" dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=/usr/lib/$ma
ours=$lib/libmlx4.so.1.0.0
theirs=$(chroot "$root" dpkg-query -L ibverbs-providers | grep -x "$lib/libmlx4\.so\.1\.[0-9.]*")
# The provider link names the private interface of the release's
# rdma-core: libmlx4-rdmav34.so up to rdma-core 57, -rdmav65.so in 65.
link=$(chroot "$root" dpkg-query -L ibverbs-providers |
	sed -n "s|^$lib/libibverbs/\(libmlx4-rdmav[0-9]*\.so\)$|\1|p")
pabi=${link#libmlx4-rdmav}
pabi=${pabi%.so}
echo "# chroot $root ($suite, $ma); the distribution's library: $theirs, provider link $link"
[ -n "$theirs" ] && [ -n "$link" ] || { echo "Bail out! no libmlx4 in ibverbs-providers"; exit 1; }

# Which files serve mlx4 in a libibverbs program (ibv_rc_pingpong, as a
# server waiting for its client: its maps) and in a -lmlx4 program
# (dv-probe), each on its own simulator; and a pingpong with data checks.
# Each line of what serves must name the file $1, and only it.
serves() {
	inside "cd /tmp && gcc -o dv-probe dv-probe.c \$(pkg-config --cflags --libs libmlx4 libibverbs) &&
	mlx4sim run --provider=system -- sh -c '
		timeout 60 ibv_rc_pingpong -g 0 -c -n 100 -p 18617 >server.log 2>&1 &
		server=\$!
		sleep 1
		echo \"--- ibv_rc_pingpong server (libibverbs program), mapped:\"
		grep -o \"/[^ ]*libmlx4\.so[^ ]*\" /proc/\$(pgrep -P \$server)/maps | sort -u
		for i in 1 2 3 4 5 6 7 8 9 10; do
			timeout 60 ibv_rc_pingpong -g 0 -c -n 100 -p 18617 127.0.0.1 >client.log 2>&1 && break
			sleep 0.5
		done
		wait \$server && tail -n 1 server.log client.log' &&
	echo '--- dv-probe (-lmlx4 program):' &&
	mlx4sim run --provider=system -- ./dv-probe"
	status=$?
	cp "$work/out.$$" "$work/serves.$$"
	[ $status -eq 0 ] || return 1
	# Every libmlx4 file named, mapped or serving, is $1.
	others=$(grep -o "/[^ ]*libmlx4\.so[^ ]*" "$work/serves.$$" | sort -u | grep -vx "$1")
	[ -z "$others" ] || { echo "# also serving: $others"; return 1; }
	grep -q "^provider: $1\$" "$work/serves.$$" &&
		grep -q "^direct verbs: $1\$" "$work/serves.$$"
}

clean_distribution() {
	inside "verify_clean ibverbs-providers libibverbs-dev mlx4sim &&
		! dpkg-divert --list '*' | grep -w 'by libmlx4-[1a-z]*' &&
		! test -e $lib/libmlx4.diverted && ! test -e /usr/share/libmlx4 &&
		ls -l $lib/libmlx4.so.1 $lib/libibverbs/$link &&
		test \"\$(readlink -f $lib/libmlx4.so.1)\" = $theirs &&
		ldconfig -p | grep 'libmlx4\.so\.1 '"
}

step "packages build: dpkg-buildpackage -b -us -uc" \
	"cd /tmp && tar xzf $(basename "$tarball") && cd $(basename "$tarball" .tar.gz) &&
	 dpkg-buildpackage -b -us -uc >/tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }
	 ls /tmp/*.deb"
mkdir -p "$work/debs" && cp "$root"/tmp/*.deb "$work/debs/" 2>/dev/null
step "mlx4sim installs alone (no diversion)" \
	"apt-get install -y -q /tmp/mlx4sim_*.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
	 ! dpkg-divert --list '*' | grep libmlx4"
# make install and make uninstall by hand: with the distribution's prefix
# they refuse and change nothing; with another prefix they touch nothing
# outside it, and the README's way of using such a build serves mlx4 with
# our library.
changed_outside() {
	echo "find / -xdev -newer /tmp/stamp ! -type d ! -path '/tmp/*' ! -path '/root/*' ! -path '/var/cache/*' ! -path '/var/log/*' ! -path '$1*' -print"
}
step "make install/uninstall with the distribution's prefix refuse, change nothing" \
	"mkdir /tmp/src && cd /tmp/src && tar xzf ../$(basename "$tarball") && cd $(basename "$tarball" .tar.gz) &&
	 ./configure -q --prefix=/usr --libdir=$lib >/tmp/configure.log 2>&1 &&
	 make -j2 >/tmp/make.log 2>&1 || { tail -n 20 /tmp/configure.log /tmp/make.log; exit 1; }
	 grep -x 'driverdir = $lib/libibverbs' Makefile && grep -x 'confdir = /etc/libibverbs.d' Makefile &&
	 touch /tmp/stamp; sleep 1
	 ! make install && ! make uninstall && verify_clean ibverbs-providers libibverbs-dev mlx4sim &&
	 test -z \"\$($(changed_outside /nowhere))\" && make distclean >/dev/null"
step "make install/uninstall under another prefix touch only the prefix" \
	"cd /tmp/src/$(basename "$tarball" .tar.gz) && touch /tmp/stamp && sleep 1 &&
	 ./configure -q --prefix=/opt/libmlx4 >/tmp/configure.log 2>&1 &&
	 grep -x 'driverdir = \${libdir}/libibverbs' Makefile &&
	 grep -x 'confdir = \${sysconfdir}/libibverbs.d' Makefile &&
	 make -j2 >/tmp/make.log 2>&1 && make install >/tmp/install.log 2>&1 ||
		{ tail -n 20 /tmp/configure.log /tmp/make.log /tmp/install.log; exit 1; }
	 outside=\$($(changed_outside /opt/libmlx4)); echo \"\$outside\"; test -z \"\$outside\" &&
	 cd /tmp && gcc -o dv-probe-opt dv-probe.c -I/opt/libmlx4/include -L/opt/libmlx4/lib -lmlx4 -libverbs &&
	 /opt/libmlx4/bin/mlx4sim start --provider=project >/tmp/sim.env &&
	 (. /tmp/sim.env && echo RDMAV_DRIVERS=\$RDMAV_DRIVERS &&
	  test \$RDMAV_DRIVERS = /opt/libmlx4/lib/libibverbs/libmlx4 &&
	  LD_LIBRARY_PATH=/opt/libmlx4/lib ./dv-probe-opt | tee /tmp/probe.log
	  /opt/libmlx4/bin/mlx4sim stop) &&
	 grep -q '^provider: /opt/libmlx4/lib/libmlx4.so.1.0.0' /tmp/probe.log &&
	 grep -q '^direct verbs: /opt/libmlx4/lib/libmlx4.so.1.0.0' /tmp/probe.log &&
	 cd /tmp/src/$(basename "$tarball" .tar.gz) && make uninstall >/dev/null &&
	 test -z \"\$(find /opt/libmlx4 ! -type d)\" && verify_clean ibverbs-providers libibverbs-dev mlx4sim"
if serves "$theirs"; then ok "before: the distribution's library serves mlx4"; else not_ok "before: the distribution's library serves mlx4"; fi

step "libmlx4-1 and libmlx4-dev install beside ibverbs-providers" \
	"apt-get install -y -q /tmp/libmlx4-1_*.deb /tmp/libmlx4-dev_*.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
	 grep -i 'remov' /tmp/apt.log; dpkg -l libmlx4-1 libmlx4-dev ibverbs-providers libibverbs-dev perftest | grep '^[a-z][a-z] '
	 for p in libmlx4-1 libmlx4-dev ibverbs-providers libibverbs-dev perftest ibverbs-utils; do
		dpkg-query -W -f='\${Status}\n' \$p | grep -q 'install ok installed' || { echo \"\$p not installed\"; exit 1; }
	 done"
step "installed: dpkg -V clean, the distribution's files diverted out of ldconfig's sight" \
	"verify_clean ibverbs-providers libibverbs-dev libmlx4-1 libmlx4-dev mlx4sim &&
	 dpkg-divert --list '*' | grep libmlx4 && ls -lR $lib/libmlx4.diverted &&
	 ! ls $lib/libmlx4.so.1.* | grep -vx $ours &&
	 test \"\$(readlink -f $lib/libmlx4.so.1)\" = $ours &&
	 test \"\$(readlink -f $lib/libibverbs/$link)\" = $ours &&
	 test \$(ldconfig -p | grep -c 'libmlx4\.so\.1 ') -eq 1 &&
	 ldconfig -p | grep 'libmlx4\.so\.1 ' &&
	 ls $lib/libibverbs/ | grep -c rdmav$pabi && test -e $lib/libibverbs/libmlx5-rdmav$pabi.so &&
	 test -e $lib/libibverbs/librxe-rdmav$pabi.so"
if serves "$ours"; then ok "installed: our library serves mlx4 (libibverbs and -lmlx4 programs), pingpong passes"; else not_ok "installed: our library serves mlx4 (libibverbs and -lmlx4 programs), pingpong passes"; fi
step "installed: ibverbs-providers reinstalled over ours keeps ours" \
	"apt-get install -y -q --reinstall ibverbs-providers >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
	 verify_clean ibverbs-providers && test \"\$(readlink -f $lib/libmlx4.so.1)\" = $ours &&
	 test \$(ldconfig -p | grep -c 'libmlx4\.so\.1 ') -eq 1"

step "remove: apt-get remove libmlx4-1 libmlx4-dev" \
	"apt-get remove -y -q libmlx4-1 libmlx4-dev >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }"
if clean_distribution; then ok "removed: dpkg -V clean, no diversion left, the distribution's files back"; else not_ok "removed: dpkg -V clean, no diversion left, the distribution's files back"; fi
if serves "$theirs"; then ok "removed: the distribution's library serves mlx4 again"; else not_ok "removed: the distribution's library serves mlx4 again"; fi

step "again, then purge" \
	"apt-get install -y -q /tmp/libmlx4-1_*.deb /tmp/libmlx4-dev_*.deb >/tmp/apt.log 2>&1 &&
	 apt-get purge -y -q libmlx4-1 libmlx4-dev >>/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
	 ! test -e /etc/libibverbs.d/libmlx4.driver && cat /etc/libibverbs.d/mlx4.driver"
if clean_distribution; then ok "purged: dpkg -V clean, no diversion left, the distribution's files back"; else not_ok "purged: dpkg -V clean, no diversion left, the distribution's files back"; fi

# An upgrade of ibverbs-providers under ours whose library file has a new
# name (as each rdma-core release's has): ibverbs-providers rebuilt with
# libmlx4.so.1.0.99.0 (same version: libibverbs-dev wants exactly it).
# The trigger moves the new file aside as well.
step "upgrade: ibverbs-providers with a new library file name, under ours" \
	"apt-get install -y -q /tmp/libmlx4-1_*.deb /tmp/libmlx4-dev_*.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
	 mkdir /tmp/up && cd /tmp/up && apt-get download -q ibverbs-providers >/dev/null 2>&1 &&
	 dpkg-deb -R ibverbs-providers_*.deb x && cd x$lib &&
	 mv ${theirs##*/} libmlx4.so.1.0.99.0 && ln -sf libmlx4.so.1.0.99.0 libmlx4.so.1 &&
	 ln -sf ../libmlx4.so.1.0.99.0 libibverbs/$link && cd /tmp/up/x &&
	 find usr -type f -exec md5sum {} + >DEBIAN/md5sums && cd /tmp/up &&
	 dpkg-deb -b x up.deb >/dev/null && dpkg -i up.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }
	 verify_clean ibverbs-providers libmlx4-1 &&
	 dpkg-divert --list '*' | grep 'libmlx4.so.1.0.99.0 to $lib/libmlx4.diverted/' &&
	 ! ls $lib/libmlx4.so.1.* | grep -vx $ours &&
	 test \"\$(readlink -f $lib/libmlx4.so.1)\" = $ours &&
	 test \$(ldconfig -p | grep -c 'libmlx4\.so\.1 ') -eq 1"
theirs=$lib/libmlx4.so.1.0.99.0
if serves "$ours"; then ok "upgrade: our library still serves mlx4"; else not_ok "upgrade: our library still serves mlx4"; fi
step "upgrade: purge ours" \
	"apt-get purge -y -q libmlx4-1 libmlx4-dev >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }"
if clean_distribution; then ok "upgrade: purged: dpkg -V clean, the upgraded distribution's files back"; else not_ok "upgrade: purged: dpkg -V clean, the upgraded distribution's files back"; fi

echo "1..$n"
echo "# $(($(date +%s) - start)) s"
rm -f "$work/out.$$" "$work/serves.$$"
[ $fails -eq 0 ]

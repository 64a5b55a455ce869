# SPDX-License-Identifier: BSD-2-Clause
# Shared by the maintainer scripts of libmlx4-1 and libmlx4-dev (debian/rules
# puts it in each, with @PACKAGE@, @MULTIARCH@ and @FILES@ filled in).
#
# The package takes the place of files of ibverbs-providers and
# libibverbs-dev with dpkg diversions: dpkg moves the distribution's
# file aside, and keeps putting it there on its upgrades, until this
# package is removed and the file is moved back.  Library files are moved
# to a directory out of ldconfig's sight, so that libmlx4.so.1 names our
# library only: a library left beside it with a higher version number
# would take the name back at the next ldconfig run.

PACKAGE=@PACKAGE@
LIBDIR=/usr/lib/@MULTIARCH@
ARCH_STASH=$LIBDIR/libmlx4.diverted
INDEP_STASH=/usr/share/libmlx4/diverted

stash_of() {
	case $1 in
	"$LIBDIR"/*) echo "$ARCH_STASH/${1#"$LIBDIR"/}" ;;
	*) echo "$INDEP_STASH$1" ;;
	esac
}

divert() {
	to=$(stash_of "$1")
	mkdir -p "$(dirname "$to")"
	dpkg-divert --quiet --package "$PACKAGE" --rename --divert "$to" --add "$1"
}

# The distribution's library file is named after rdma-core's version
# (libmlx4.so.1.0.44.0 in Debian 12), which an upgrade of
# ibverbs-providers changes: find it in that package's file list.
distribution_libraries() {
	dpkg-query -L "ibverbs-providers:@ARCH@" 2>/dev/null |
		grep -x "$LIBDIR/libmlx4\.so\.1\.[0-9.]*" || true
}

divert_all() {
	for f in @FILES@; do
		divert "$f"
	done
	if [ "$PACKAGE" = libmlx4-1 ]; then
		for f in $(distribution_libraries); do
			divert "$f"
		done
	fi
}

undivert_all() {
	dpkg-divert --list '*' | sed -n "s/^diversion of \([^ ]*\) to [^ ]* by $PACKAGE\$/\1/p" |
	while read -r f; do
		dpkg-divert --quiet --package "$PACKAGE" --rename --remove "$f"
	done
	for d in "$ARCH_STASH" "$INDEP_STASH"; do
		[ -d "$d" ] && find "$d" -depth -type d -empty -delete
	done
	rmdir /usr/share/libmlx4 2>/dev/null || true
}

# The library files changed under ldconfig's links: have them remade.
relink() {
	[ "$PACKAGE" = libmlx4-1 ] || return 0
	dpkg-trigger --no-await ldconfig
}

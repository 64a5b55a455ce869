# SPDX-License-Identifier: BSD-2-Clause
# Sourced by a test program's wrapper (kernel-rules.sh, provider-verbs.sh):
# takes mlx4sim's options, each one word (--link-layer=eth), off the front
# of the wrapper's arguments into $options, and leaves the program's own
# (--list, --help or case names) in "$@".
options=
while [ $# -gt 0 ]; do
	case $1 in
	--list | --help | -h | [!-]*) break ;;
	esac
	options="$options $1"
	shift
done

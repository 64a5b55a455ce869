# SPDX-License-Identifier: BSD-2-Clause
#
# Helpers for the TAP test scripts that run programs on mlx4sim.
# A script sources this, calls sim_start, runs its cases and ends with
# finish.  Each case prints one TAP line; a failing case shows the logs
# of the programs it ran as TAP comments.

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
MLX4SIM=$top_builddir/sim/mlx4sim
TESTS_BIN=$top_builddir/tests
. "$(dirname "$0")/../probes.sh"

test_count=0
failures=0
work=$(mktemp -d "${TMPDIR:-/tmp}/mlx4sim-test.XXXXXX")
sim_running=

cleanup() {
	[ -n "$sim_running" ] && "$MLX4SIM" stop >/dev/null 2>&1
	for p in $claimed; do
		rmdir "$port_claims/$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
# Ended by a signal (a harness's timeout), clean up all the same.
trap 'exit 143' HUP INT TERM

ok() {
	test_count=$((test_count + 1))
	echo "ok $test_count - $*"
}

not_ok() {
	test_count=$((test_count + 1))
	failures=$((failures + 1))
	echo "not ok $test_count - $*"
}

skip() {
	test_count=$((test_count + 1))
	echo "ok $test_count - # SKIP $*"
}

# Show a file as TAP comments.
show() {
	[ -f "$1" ] && sed 's/^/# /' "$1"
}

# check DESCRIPTION COMMAND...: one case, passing when COMMAND does.
check() {
	desc=$1
	shift
	if "$@" >"$work/check.log" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc"
		show "$work/check.log"
	fi
}

finish() {
	echo "1..$test_count"
	[ $failures -eq 0 ]
	exit $?
}

# need_program PROGRAM PACKAGE: the script needs PROGRAM; without it the
# whole script is skipped with a reason that names the package to install.
# (A program that runs but finds no device is not skipped: it fails.)
need_program() {
	command -v "$1" >/dev/null 2>&1 && return 0
	echo "1..0 # SKIP $1 not found: install the $2 package (apt-get install $2)"
	exit 0
}

# need_root WHY: the script needs root; as another user the whole script
# is skipped, saying why.
need_root() {
	[ "$(id -u)" = 0 ] && return 0
	echo "1..0 # SKIP not root: $1"
	exit 0
}

# sim_start [mlx4sim options]: a simulator for this script, its
# environment exported here.
sim_start() {
	env_file=$work/env
	if ! "$MLX4SIM" start "$@" >"$env_file" 2>"$work/start.log"; then
		echo "Bail out! mlx4sim start failed"
		show "$work/start.log"
		exit 1
	fi
	. "$env_file"
	sim_running=1
}

# sim_stop: end the simulator; fails if it saw a strict-mode breach.
sim_stop() {
	sim_running=
	"$MLX4SIM" stop 2>"$work/stop.log"
	status=$?
	[ $status -eq 0 ] || show "$work/stop.log"
	return $status
}

# A TCP port for a server and its clients, different for each pair and
# each test script running at the same time: a port is claimed by making
# its directory (atomic), and given back when the script ends.  The ports
# lie below the kernel's ephemeral range, where no client connection's
# own port can hold one (a server then "couldn't listen").  Each user has
# a directory of claims: another's is not writable, and a claim in it
# could never be made.
port_claims=${TMPDIR:-/tmp}/mlx4sim-test-ports-$(id -u)
claimed=
port_low=10000
port_high=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
[ "${port_high:-0}" -gt $((port_low + 2000)) ] 2>/dev/null || port_high=32768
next_port=$(( ($$ * 37) % (port_high - port_low) + port_low ))
new_port() {
	_tries=0
	mkdir -p "$port_claims"
	while [ $_tries -lt $((port_high - port_low)) ]; do
		_tries=$((_tries + 1))
		next_port=$((next_port + 1))
		[ $next_port -lt $port_high ] || next_port=$port_low
		if mkdir "$port_claims/$next_port" 2>/dev/null; then
			port=$next_port
			claimed="$claimed $port"
			return
		fi
	done
	echo "Bail out! no TCP port can be claimed in $port_claims (is it writable? remove it if the runs that made it are gone)"
	exit 1
}

# A queue that stops (a lost doorbell, a CQ or SRQ that is never given
# back its entries) leaves its programs waiting for ever.  Rather than wait
# for their 120-second timeout, end them once the simulator has taken no
# command, fetched no WQE and written no CQE for this many seconds: long
# enough for one fetch of 8 MiB WRITEs on a machine busy with other work.
stall_seconds=15

# stall_watch PID COMMAND: end PID (a timeout(1), which passes the signal
# on) when the simulator stalls, saying so on the standard error.
stall_watch() {
	_w_daemon=$(cat "$MLX4SIM_DIR/pid" 2>/dev/null) || return 0
	_w_last= _w_still=0
	while kill -0 "$1" 2>/dev/null; do
		kill -USR2 "$_w_daemon" 2>/dev/null || return 0
		sleep 1
		_w_now=$(cat "$MLX4SIM_DIR/progress" 2>/dev/null)
		if [ -n "$_w_now" ] && [ "$_w_now" = "$_w_last" ]; then
			_w_still=$((_w_still + 1))
		else
			_w_still=0
		fi
		_w_last=$_w_now
		if [ $_w_still -ge $stall_seconds ]; then
			echo "stuck: in $stall_seconds s the simulator took no command, fetched no WQE and wrote no CQE; ended $2" >&2
			kill "$1" 2>/dev/null
			return 0
		fi
	done
}

# guarded CMD...: CMD on the running simulator, for 120 s at the most, and
# ended with a message as soon as the simulator stalls.
guarded() {
	timeout 120 "$@" &
	_g_pid=$!
	stall_watch $_g_pid "$*" &
	_g_watch=$!
	wait $_g_pid
	_g_status=$?
	kill $_g_watch 2>/dev/null
	wait $_g_watch 2>/dev/null
	return $_g_status
}

# run_client LOG CMD...: a client, retried while its server is not yet
# listening (the servers start in the background): while its log says so,
# as $refused says (a grep pattern; by default the TCP clients' words).
run_client() {
	log=$1
	shift
	tries=0
	while :; do
		guarded "$@" >"$log" 2>&1
		status=$?
		grep -qi "${refused:-couldn't connect\|unable to connect\|connection refused}" \
			"$log" || return $status
		tries=$((tries + 1))
		[ $tries -lt 50 ] || return $status
		sleep 0.1
	done
}

# pair NAME SERVER_ENV CLIENT_ENV TOOL ARGS...: TOOL as server and as client
# (to localhost) on the running simulator; passes if both exit 0.  The
# *_ENV arguments are prefixes for env(1), e.g. "-u RDMAV_DRIVERS".
#
# Tried again: a run whose server found its port taken by another program,
# and a perftest run that gave up calibrating its cycle
# counter against the clock because the machine was busy ("Correlation
# coefficient ... < 0.9").
pair() {
	name=$1 server_env=$2 client_env=$3
	shift 3
	attempt=1
	while :; do
		new_port
		guarded env $server_env "$@" -p $port >"$work/server.log" 2>&1 &
		server=$!
		run_client "$work/client.log" env $client_env "$@" -p $port localhost
		client_status=$?
		wait $server
		server_status=$?
		[ $server_status -ne 0 ] || [ $client_status -ne 0 ] || break
		grep -qi "Correlation coefficient\|couldn't listen\|unable to bind\|address already in use" \
			"$work/client.log" "$work/server.log" || break
		[ $attempt -lt 3 ] || break
		echo "# $name: port taken or clock not calibrated, again"
		attempt=$((attempt + 1))
	done
	verdict "$name" server $server_status "$work/server.log" \
		client $client_status "$work/client.log"
}

# verdict NAME WHO1 STATUS1 LOG1 WHO2 STATUS2 LOG2: a case of two
# programs, passing when both exited 0; else their logs are shown.
verdict() {
	if [ "$3" -eq 0 ] && [ "$6" -eq 0 ]; then
		ok "$1"
		return 0
	fi
	not_ok "$1 ($2 $3, $5 $6)"
	echo "# $2:"
	show "$4"
	echo "# $5:"
	show "$7"
	return 1
}

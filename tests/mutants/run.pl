#!/usr/bin/perl
# SPDX-License-Identifier: BSD-2-Clause
#
# make check-mutants: plant each mutant of the catalogue (tests/mutants/*.mut)
# in a scratch copy of the tree, rebuild the provider (or, for a mutant of
# the simulator, the daemon) and run the tests on the simulator against
# it, cheap and sharp ones first, stopping at the first that fails.  A
# mutant no test notices has survived: the suite has a hole.  See
# tests/mutants/README for the record format.
#
# Usage: run.pl [--head] [--tree DIR] [--budget SECONDS] [--no-baseline]
#               [--list] [NAME...]
#   --head         copy the tree from git HEAD, not from the working files
#   --tree DIR     the scratch tree (default $TMPDIR/libmlx4-mutants); kept,
#                  and brought up to date with the source on the next run
#   --budget S     the most one mutant may take (default 300 s)
#   --no-baseline  do not first run the tests on the unmutated provider
#   --no-sync      take the scratch tree as it is (say, with a test being
#                  written copied in)
#   --list         check the catalogue (STALE records) and list it
#   --tests T,...  run only these tests (say, to see a new test kill)
#   NAME...        only these mutants (default: all)
use strict;
use warnings;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use POSIX qw(setsid WNOHANG);
use Time::HiRes qw(time sleep);

my $srcdir = abs_path(dirname($0) . '/../..');
my ($head, $tree, $budget, $baseline, $list, $sync) =
	(0, ($ENV{TMPDIR} // '/tmp') . '/libmlx4-mutants', 300, 1, 0, 1);
my (@only, $only_tests);
while (@ARGV) {
	my $a = shift @ARGV;
	if ($a eq '--head') { $head = 1 }
	elsif ($a eq '--tree') { $tree = shift @ARGV }
	elsif ($a eq '--budget') { $budget = shift @ARGV }
	elsif ($a eq '--no-baseline') { $baseline = 0 }
	elsif ($a eq '--list') { $list = 1 }
	elsif ($a eq '--no-sync') { $sync = 0 }
	elsif ($a eq '--tests') { $only_tests = shift @ARGV }
	elsif ($a =~ /^-/) { die "run.pl: unknown option $a\n" }
	else { push @only, $a }
}

# The tests, in fail-fast order: each a TAP script under tests/ run on the
# simulator with our provider, or a unit test program.  Seconds each on an
# idle machine are in the comments; the order puts the sharpest per second
# first.  The unit tests run only for mutants whose record says that the
# simulator cannot tell (a "unit:" line), and then first: any other
# mutant must fail a test on the simulator, as the hardware would.
my @suite = (
	'verbs/kernel-rules-project.tap',       # 0.5
	'verbs/rdma-semantics-project.tap',     # 1
	'sim/pinned-memory-project.tap',        # 2
	'sim/fair-share-project.tap',           # 1
	'sim/write-order-project.tap',          # 3
	'verbs/memlock-project.tap',            # 0.5
	'verbs/wr-api-project.tap',             # 1.5
	'verbs/verbs-control-project.tap',      # 1
	'verbs/kernel-rules-eth-project.tap',   # 1
	'verbs/provider-dv.tap',                # 0.8
	'verbs/provider-verbs-eth-project.tap', # 1.3
	'verbs/raw-eth-project.tap',            # 3
	'verbs/domains-project.tap',            # 2
	'verbs/faults-project.tap',             # 4
	'verbs/provider-verbs-project.tap',     # 11
	'verbs/dv-library.tap',                 # 0.5
	'sim/device-boundary-project.tap',      # 1
	'verbs/interop.tap',                    # 4
	'verbs/devinfo-project.tap',            # 4
	'sim/fabric.tap',                       # 9
	'verbs/pingpong-cqe32-project.tap',     # 12
	'verbs/pingpong-project.tap',           # 16
	'sim/cleanup.tap',                      # 21
	'verbs/roce-project.tap',               # 25
	'verbs/difftrace.tap',                  # 93
	'verbs/perftest-project.tap',           # 79
	'verbs/wire-project.tap',               # 75, as root
);
my @unit = ('unit/unit-post', 'unit/unit-poll');
if ($only_tests) {
	my %t = map { $_ => 1 } split /,/, $only_tests;
	# A test is named with its directory under tests/ or without.
	my $asked = sub { $t{$_[0]} || $t{$_[0] =~ s{.*/}{}r} };
	@suite = grep { $asked->($_) } @suite;
	@unit = grep { $asked->($_) } @unit;
}

# ---------------------------------------------------------------------
# The catalogue

sub parse_catalogue {
	my @muts;
	my %seen;
	for my $path (sort glob("$srcdir/tests/mutants/*.mut")) {
		open my $fh, '<', $path or die "$path: $!\n";
		my $m;
		my $finish = sub {
			return unless $m;
			die "$path:$m->{line}: mutant $m->{name}: no file\n" unless $m->{file};
			die "$path:$m->{line}: mutant $m->{name}: no about\n" unless $m->{about};
			die "$path:$m->{line}: mutant $m->{name}: no original text\n" unless length $m->{orig};
			die "$path:$m->{line}: mutant $m->{name}: twice\n" if $seen{$m->{name}}++;
			push @muts, $m;
			$m = undef;
		};
		while (my $l = <$fh>) {
			if ($l =~ /^#/ || $l =~ /^\s*$/ && !$m) {
				next;
			} elsif ($l =~ /^mutant\s+(\S+)\s*$/) {
				$finish->();
				$m = { name => $1, line => $., orig => '', repl => '',
				       about => '', src => $path };
			} elsif (!$m) {
				die "$path:$.: text before the first 'mutant' line\n";
			} elsif ($l =~ /^(file|about|unit):\s*(.*?)\s*$/) {
				$m->{$1} .= ($m->{$1} && $1 ne 'file' ? ' ' : '') . $2;
			} elsif ($l =~ /^-(.*\n?)/s) {
				$m->{orig} .= $1;
			} elsif ($l =~ /^\+(.*\n?)/s) {
				$m->{repl} .= $1;
			} elsif ($l =~ /^\s*$/) {
				$finish->();
			} else {
				die "$path:$.: not a record line: $l";
			}
		}
		$finish->();
	}
	return @muts;
}

sub slurp {
	my ($path) = @_;
	open my $fh, '<', $path or die "$path: $!\n";
	local $/;
	return scalar <$fh>;
}

sub spew {
	my ($path, $text) = @_;
	open my $fh, '>', "$path.tmp" or die "$path.tmp: $!\n";
	print $fh $text;
	close $fh or die "$path.tmp: $!\n";
	rename "$path.tmp", $path or die "$path: $!\n";
}

sub occurrences {
	my ($text, $needle) = @_;
	my ($n, $at) = (0, 0);
	while (($at = index($text, $needle, $at)) >= 0) {
		$n++;
		$at += length $needle;
	}
	return $n;
}

# The original text must occur exactly once in the file as it is now: a
# record whose text moved away or was duplicated by a refactor is STALE.
sub stale {
	my ($m, $root) = @_;
	my $path = "$root/$m->{file}";
	return "no file $m->{file}" unless -f $path;
	my $n = occurrences(slurp($path), $m->{orig});
	return $n == 1 ? undef : "its original text occurs $n times in $m->{file}";
}

# ---------------------------------------------------------------------
# The scratch tree

sub run_quiet {
	my ($log, @cmd) = @_;
	my $pid = fork // die "fork: $!\n";
	if (!$pid) {
		open STDOUT, '>>', $log or die "$log: $!\n";
		open STDERR, '>&', \*STDOUT;
		exec @cmd or die "$cmd[0]: $!\n";
	}
	waitpid $pid, 0;
	return $?;
}

# Bring @tree up to date with the sources, file by file, so that make
# rebuilds only what changed; configure it the first time.
sub sync_tree {
	my $log = "$tree-setup.log";
	make_path($tree);
	unlink $log;
	my @files;
	my %content;
	if ($head) {
		@files = split /\0/, `git -C '$srcdir' ls-tree -r -z --name-only HEAD`;
		die "run.pl: --head needs a git checkout\n" if $? || !@files;
		for my $f (@files) {
			$content{$f} = `git -C '$srcdir' show 'HEAD:$f'`;
		}
	} elsif (-e "$srcdir/.git") {	# a directory, or a worktree's file
		@files = grep { -f "$srcdir/$_" }
			split /\0/, `git -C '$srcdir' ls-files -z`;
	} else {
		die "run.pl: $srcdir is not a git checkout: give --tree a configured copy\n"
			unless -f "$tree/Makefile";
	}
	my $changed = 0;
	for my $f (@files) {
		my $text = $head ? $content{$f} : slurp("$srcdir/$f");
		my $to = "$tree/$f";
		next if -f $to && slurp($to) eq $text;
		make_path(dirname($to));
		spew($to, $text);
		chmod((stat("$srcdir/$f"))[2] & 07777, $to) if -e "$srcdir/$f";
		$changed++;
	}
	if (!-f "$tree/Makefile") {
		print "setting up $tree (autogen, configure, build)\n";
		for my $step (['sh', 'autogen.sh'], ['sh', 'configure']) {
			chdir $tree or die "$tree: $!\n";
			run_quiet($log, 'nice', @$step) == 0
				or die "run.pl: @$step failed in $tree: see $log\n";
		}
	}
	print "$changed files brought up to date in $tree\n" if $changed;
	chdir $tree or die "$tree: $!\n";
	run_quiet($log, 'nice', 'make', '-j2') == 0
		&& run_quiet($log, 'nice', 'make', '-j2', 'check', 'TESTS=') == 0
		or die "run.pl: the unmutated tree does not build: see $log\n";
}

# ---------------------------------------------------------------------
# Running the tests

my $logdir;

# The processes of session @sid: a test and all it started, its
# simulator and the timeout(1)s that put themselves in groups of their own.
sub session_pids {
	my ($sid) = @_;
	my @pids;
	for my $stat (glob '/proc/[0-9]*/stat') {
		open my $fh, '<', $stat or next;
		my $line = <$fh> // next;
		# pid (comm) state ppid pgrp session ...
		my @f = split ' ', ($line =~ s/^.*\) //sr);
		push @pids, $stat =~ m{/proc/(\d+)/} if $f[3] == $sid;
	}
	return @pids;
}

sub end_session {
	my ($sid) = @_;
	for my $sig ('TERM', 'KILL') {
		my @pids = session_pids($sid);
		last unless @pids;
		kill $sig, @pids;
		for (1 .. 20) {
			waitpid $sid, WNOHANG;
			last unless session_pids($sid);
			sleep 0.1;
		}
	}
	waitpid $sid, WNOHANG;
}

# One test in the scratch tree, within @limit seconds: 0 passed, else why.
# The first failing case ends it: a killed mutant costs seconds.
sub run_test {
	my ($t, $limit, $tag) = @_;
	my $log = "$logdir/$tag-" . ($t =~ s{.*/}{}r) . ".log";
	unlink $log;
	$limit = 1 if $limit < 1;
	local $ENV{top_builddir} = $tree;
	local $ENV{top_srcdir} = $tree;
	my @cmd = $t =~ /\.tap$/ ? ('sh', "$tree/tests/$t") : ("$tree/tests/$t");
	my $pid = fork // die "fork: $!\n";
	if (!$pid) {
		setsid();
		open STDOUT, '>', $log or die "$log: $!\n";
		open STDERR, '>&', \*STDOUT;
		exec 'nice', @cmd or die "$cmd[0]: $!\n";
	}
	my $end = time + $limit;
	my ($why, $status);
	while (!defined $status) {
		if (waitpid($pid, WNOHANG) == $pid) {
			$status = $?;
			last;
		}
		my $out = -f $log ? slurp($log) : '';
		if ($out =~ /^(not ok .*|Bail out!.*)$/m) {
			$why = $1;
		} elsif (time > $end) {
			$why = sprintf 'timed out after %.0f s', $limit;
		}
		last if $why;
		sleep 0.2;
	}
	end_session($pid);
	return $why if $why;
	my ($first) = slurp($log) =~ /^(not ok .*|Bail out!.*|FAIL .*)$/m;
	return $first if $first;
	return "exit status " . ($status >> 8) if $status;
	return 0;
}

# What a mutant of @file needs rebuilt: the provider (which the mutant
# before may have left mutated: its source is restored, not rebuilt),
# and for a mutant of the simulator (sim/) the daemon and the programs
# beside it.
sub targets_of {
	my ($file) = @_;
	return ('src/libmlx4.la', $file =~ m{^sim/} ?
		('sim/mlx4simd', 'sim/mlx4sim-fault', 'sim/libmlx4sim.la') :
		());
}

sub build {
	my ($m, $log) = @_;
	my @targets = targets_of($m->{file});
	push @targets, map { "tests/$_" } @unit if $m->{unit};
	return run_quiet($log, 'nice', 'make', '-j2', @targets) == 0;
}

# ---------------------------------------------------------------------

my @muts = parse_catalogue();
my %want = map { $_ => 1 } @only;
for my $n (@only) {
	die "run.pl: no mutant $n in the catalogue\n" unless grep { $_->{name} eq $n } @muts;
}
@muts = grep { $want{$_->{name}} } @muts if @only;

if ($list) {
	my $bad = 0;
	for my $m (@muts) {
		my $why = stale($m, $srcdir);
		printf "%-6s %-32s %s: %s\n", $why ? 'STALE' : 'ok', $m->{name},
			$m->{file}, $why // $m->{about};
		$bad++ if $why;
	}
	printf "%d mutants, %d stale\n", scalar @muts, $bad;
	exit($bad ? 1 : 0);
}

if ($sync) {
	sync_tree();
} else {
	chdir $tree or die "$tree: $!\n";
}
$logdir = "$tree-logs";
make_path($logdir);
print "logs in $logdir\n";

my %pristine;
for my $m (@muts) {
	$pristine{$m->{file}} //= slurp("$tree/$m->{file}");
}

if ($baseline) {
	my $t0 = time;
	for my $t (@suite) {
		my $why = run_test($t, $budget, 'baseline');
		die "run.pl: $t fails on the unmutated provider ($why): see $logdir/baseline-$t.log\n"
			if $why;
	}
	printf "baseline: the unmutated provider passes the suite (%.0f s)\n", time - $t0;
}

my (%count, @survivors, @errors);
my ($longest, $longest_name) = (0, '');
my ($planted, $planted_text);
# Interrupted, leave the scratch tree unmutated all the same.
$SIG{INT} = $SIG{TERM} = sub {
	spew($planted, $planted_text) if $planted;
	die "run.pl: interrupted\n";
};
$| = 1;
for my $m (@muts) {
	my $t0 = time;
	my $why = stale($m, $tree);
	if ($why) {
		printf "STALE     %-32s %s\n", $m->{name}, $why;
		$count{stale}++;
		push @errors, $m->{name};
		next;
	}
	my $file = "$tree/$m->{file}";
	my $text = $pristine{$m->{file}};
	my $at = index($text, $m->{orig});
	($planted, $planted_text) = ($file, $text);
	spew($file, substr($text, 0, $at) . $m->{repl} .
		    substr($text, $at + length $m->{orig}));
	my $verdict;
	if (!build($m, "$logdir/$m->{name}-build.log")) {
		$verdict = 'BROKEN';
		$why = "does not build: see $logdir/$m->{name}-build.log";
		$count{broken}++;
		push @errors, $m->{name};
	} else {
		# A mutant only the unit tests can see goes to them first.
		my @tests = $m->{unit} ? (@unit, @suite) : @suite;
		for my $t (@tests) {
			my $left = $budget - (time - $t0);
			my $fail = run_test($t, $left, $m->{name});
			next unless $fail;
			# Out of time is no verdict: the suite must end within
			# the budget on any mutant.
			$verdict = $fail =~ /^timed out/ ? 'TIMEOUT' : 'killed';
			$why = "by $t: $fail";
			last;
		}
		if ($verdict && $verdict eq 'TIMEOUT') {
			$count{timeout}++;
			push @survivors, $m->{name};
		} elsif ($verdict) {
			$count{killed}++;
		} else {
			$verdict = 'SURVIVED';
			$why = $m->{about};
			$count{survived}++;
			push @survivors, $m->{name};
		}
	}
	# Back to the original, newer than the mutant's objects; a daemon
	# is rebuilt at once (the provider's next build is the next mutant's).
	spew($file, $text);
	$planted = undef;
	run_quiet("$logdir/$m->{name}-restore.log", 'nice', 'make', '-j2',
		  targets_of($m->{file})) if $m->{file} =~ m{^sim/};
	my $took = time - $t0;
	($longest, $longest_name) = ($took, $m->{name}) if $took > $longest;
	printf "%-9s %-32s %4.0f s  %s\n", $verdict, $m->{name}, $took, $why;
}
# Leave the scratch provider and simulator unmutated.
run_quiet("$logdir/restore-build.log", 'nice', 'make', '-j2',
	  targets_of('sim/'));

my $n = scalar @muts;
printf "\n%d mutants: %d killed, %d survived, %d out of time, %d stale, " .
	"%d broken; kill rate %.0f%%; longest run %.0f s (%s)\n",
	$n, $count{killed} // 0, $count{survived} // 0, $count{timeout} // 0,
	$count{stale} // 0, $count{broken} // 0,
	$n ? 100 * ($count{killed} // 0) / $n : 0, $longest, $longest_name;
print "not killed: @survivors\n" if @survivors;
print "errors in the catalogue: @errors\n" if @errors;
exit(@survivors || @errors ? 1 : 0);

#!/usr/bin/perl
# SPDX-License-Identifier: BSD-2-Clause
#
# check-barriers.pl ARCH SRCDIR OBJDUMP_OUTPUT...
#
# Reads `objdump -d -l --no-show-raw-insn` of provider objects and checks
# the CPU-to-device ordering around every store that src/mmio.h tags
# ("cross.sh: ... store"), found through the line table wherever it was
# inlined.  Paths are followed backwards and forwards over each function's
# branches, so a barrier on another path does not count:
#
#  MMIO store       every path back reaches a to-device barrier (one that
#                   orders normal memory before device stores) before a
#                   weaker one or the function's start;
#  MMIO half store  (a 64-bit doorbell in two stores) the first fence,
#                   atomic or call back is a lock's atomic or call, and
#                   forward the first is the flush of mmio_flush_writes();
#  MMIO store64     on a 32-bit CPU no such store is left: one would be
#                   split in two without the lock;
#  WC store         the first fence, atomic or call back is the write-
#                   combining start barrier (the lock's atomic on x86),
#                   and forward the flush.
#  record store     the doorbell records the device reads from memory
#                   (receive queue, SRQ, CQ consumer index), found by
#                   their statements in SRCDIR's qp.c, srq.c and cqe.h:
#                   as MMIO store.
#
# Also, for named probe functions (tests/unit/cross/probe.c) holding one
# macro each, the exact instruction.  s390x has its own rules: its
# device stores are the PCI store instructions or a system call.
#
# Prints one line per failure and "ok N" counts; exits 1 on any failure.
use strict;
use warnings;

my ($arch, $srcdir, @dumps) = @ARGV;
die "usage: $0 ARCH SRCDIR OBJDUMP_OUTPUT...\n" unless @dumps;
my $mmio_h = "$srcdir/mmio.h";

# ---------------------------------------------------------------------
# Each CPU: what a fence is and which ones satisfy each rule, what is an
# atomic, a call, a store, a branch.
my %cpu = (
	aarch64 => {
		fence => qr/^(dmb|dsb)$/,
		# Outer shareable or full system, and covering stores.
		to_device => sub { $_[0] =~ /^(dmb|dsb)\s+(oshst|osh|sy|st)$/ },
		wc => sub { $_[0] =~ /^dsb\s+(st|sy)$/ },
		atomic => qr/^(ld[a]?xr|st[l]?xr|ldaxp|stlxp|swp|cas|ld(add|set|clr|eor)|stlr)/,
		call => qr/^(bl|blr)$/,
		store => qr/^(str|stp|stur|st1|st2|st4)[bh]?$/,
		uncond => qr/^(b|br|ret)$/,
		cond => qr/^(b\.\w+|cbn?z|tbn?z)$/,
		probe => { to_device => 'dmb oshst', from_device => 'dmb oshld',
			   flush => 'dsb st', wc_start => 'dsb st' },
	},
	armhf => {
		fence => qr/^(dmb|dsb)$/,
		# C11 atomics end with "dmb ish" here: part of the lock.
		atomic_text => qr/^(ldrex\w*|strex\w*|dmb ish)(\.[nw])?( |$)/,
		to_device => sub { $_[0] =~ /^(dmb|dsb)\s+(oshst|osh|sy|st)$/ },
		wc => sub { $_[0] =~ /^dsb\s+(st|sy)$/ },
		atomic => qr/^(ldrex\w*|strex\w*)$/,
		call => qr/^(bl|blx)$/,
		store => qr/^(str|stm|vst)\w*(\.[nw])?$/,
		uncond_text => qr/^(b(\.[nw])?\s|bx\s|pop(\.w)?\s.*\bpc\}|ldm\S*\s.*\bpc\})/,
		uncond => qr/^(b|b\.n|b\.w|bx)$/,
		cond => qr/^(b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)(\.[nw])?|cbn?z)$/,
		bits32 => 1,
		probe => { to_device => 'dmb oshst', from_device => 'dmb osh',
			   flush => 'dsb st', wc_start => 'dsb st' },
	},
	ppc64le => {
		fence => qr/^(sync|hwsync|lwsync|eieio|ptesync)$/,
		to_device => sub { $_[0] =~ /^(hwsync|sync)(\s+0)?$/ },
		wc => sub { $_[0] =~ /^(hwsync|sync)(\s+0)?$/ },
		atomic => qr/^(l[bhwd]arx|st[bhwd]cx\.|isync)$/,
		call => qr/^(bl|bctrl|blrl)$/,
		store => qr/^st(b|h|w|d|bu|hu|wu|du|bx|hx|wx|dx|wbrx|dbrx|hbrx)$/,
		uncond => qr/^(b|blr|bctr)$/,
		cond => qr/^(b(eq|ne|lt|gt|le|ge|so|ns|dnz|dz)[+-]?|bc|bdnz\w*)$/,
		probe => { to_device => 'hwsync', from_device => 'lwsync',
			   flush => 'hwsync', wc_start => 'hwsync' },
	},
	riscv64 => {
		fence => qr/^fence(\.tso)?$/,
		# Predecessors include stores, successors include device output.
		to_device => sub { fence_covers($_[0], 'w', 'o') },
		wc => sub { fence_covers($_[0], 'w', 'o') },
		atomic => qr/^(amo\w+|lr\.\w+|sc\.\w+)/,
		call => qr/^(call|jal|jalr)$/,
		store => qr/^(sb|sh|sw|sd|fsw|fsd)$/,
		uncond => qr/^(j|jr|ret|tail)$/,
		cond => qr/^b(eq|ne|lt|ge|ltu|geu|gt|le|gtu|leu)z?$|^b(eqz|nez|ltz|gez|gtz|lez)$/,
		probe => { to_device => 'fence ow,ow', from_device => 'fence ir,ir',
			   flush => 'fence ow,ow', wc_start => 'fence ow,ow' },
	},
	i386 => {
		fence => qr/^(mfence|sfence|lfence|lock)$/,
		# x86 keeps stores in order, uncached ones included.
		to_device => sub { 1 },
		no_fence_needed => 1,
		wc => sub { $_[0] =~ /^(xchg|lock)\b/ },
		flush => sub { $_[0] =~ /^(lock\s+(add|or)l?\b|mfence|sfence)/ },
		atomic => qr/^(xchg|cmpxchg)/,
		call => qr/^call[l]?$/,
		store => qr/^mov[lwbq]?$|^movs?[sd]$|^movl?ps$|^movq$/,
		# AT&T: a register or immediate into memory.
		store_dst => sub { $_[0] =~ /^[%\$][^,]*,.*\)$/ },
		uncond => qr/^(jmp[l]?|ret[l]?)$/,
		cond => qr/^j(?!mp)\w+$/,
		bits32 => 1,
		probe => { to_device => '', from_device => '',
			   flush => 'lock addl $0x0,(%esp)', wc_start => '' },
	},
);
$cpu{ppc64el} = $cpu{ppc64le};
$cpu{arm64} = $cpu{aarch64};
my $c = $cpu{$arch};

# A store whose address is the stack pointer's is a spill the compiler
# placed on the line (newer compilers do), never a doorbell.
my %stack = (
	aarch64 => qr/\[sp[,\]]/, arm64 => qr/\[sp[,\]]/, armhf => qr/\[sp[,\]]/,
	ppc64le => qr/\(r1\)$/, ppc64el => qr/\(r1\)$/, riscv64 => qr/\(sp\)$/,
	s390x => qr/\(%r15\)$|,%r15\)$/, i386 => qr/\(%esp\)$/,
);
sub stack_store { my $rx = $stack{$arch}; return $rx && $_[0]{args} =~ $rx; }

my ($fails, $oks) = (0, 0);
my %found;	# rule => { "before: insn" or "after: insn" => count }
sub fail { print "FAIL $arch: @_\n"; $fails++; }
sub ok { $oks++; }

sub fence_covers {
	my ($insn, $pred, $succ) = @_;
	return 1 if $insn =~ /^fence$/;		# fence = iorw,iorw
	return 0 unless $insn =~ /^fence\s+([iorw]+),([iorw]+)$/;
	return index($1, $pred) >= 0 && index($2, $succ) >= 0;
}

# The tagged lines of mmio.h.
my %tag;
open(my $mh, '<', $mmio_h) or die "$mmio_h: $!\n";
while (<$mh>) {
	$tag{$.} = $1 if m{/\* cross\.sh: (MMIO half store|MMIO store64|MMIO store|WC store) \*/};
}
close $mh;
die "no tagged stores in $mmio_h\n" unless %tag || $arch eq 's390x';

# The doorbell records: the line of each one's store, in the file that
# holds it, for the objects dumped (NAME.o.dis) that compile that file.
my %records = ('qp.c' => [qr/^\s*\*qp->db = htobe32\(/, 'qp'],
	       'srq.c' => [qr/^\s*\*srq->db = htobe32\(/, 'srq'],
	       'cqe.h' => [qr/^\s*\*cq->set_ci_db = htobe32\(/, 'cq', 'cq_ex']);
my (%record_line, %record_seen);
for my $f (sort keys %records) {
	my ($re, @stems) = @{$records{$f}};
	next unless grep { my $d = $_; grep { $d =~ m{(^|/)\Q$_\E\.o\.dis$} } @stems }
		    @dumps;
	open(my $fh, '<', "$srcdir/$f") or die "$srcdir/$f: $!\n";
	while (<$fh>) {
		$record_line{"$f:$."} = $f if $_ =~ $re;
	}
	close $fh;
	$record_seen{$f} = 0;
	fail("$f: the doorbell record store is not where this check looks")
		unless grep { $record_line{$_} eq $f } keys %record_line;
}

# ---------------------------------------------------------------------
# Functions: [ { addr, op (mnemonic), args, text, line, file, target } ]
my %func;
my @order;
for my $dump (@dumps) {
	open(my $fh, '<', $dump) or die "$dump: $!\n";
	my ($name, $file, $line);
	while (<$fh>) {
		chomp;
		if (/^[0-9a-f]+ <([^>]+)>:$/) {
			my $sym = $1;
			# riscv keeps local labels: they are no functions.
			next if $sym =~ /^\.L|^\$/;
			$name = "$dump:$sym";
			push @order, $name;
			$func{$name} = [];
			next;
		}
		if (m{^(\S+\.[ch]):(\d+)}) {
			($file, $line) = ($1, $2);
			next;
		}
		next unless defined $name;
		next unless /^\s+([0-9a-f]+):\t(.*)$/;
		my ($addr, $text) = (hex $1, $2);
		# Comments: "# ..." (riscv, x86), "// ..." (aarch64), "@ ...".
		$text =~ s/\s+#\s.*$//;
		$text =~ s/\s+@\s.*$//;
		$text =~ s/\s+\/\/.*$//;
		$text =~ s/\s+$//;
		$text =~ s/\s+/ /g;
		my ($op, $args) = split /\s+/, $text, 2;
		$args //= '';
		# "lock addl ...": the prefix is the fence.
		my $target;
		$target = hex $1 if $args =~ /(?:^|,)\s*([0-9a-f]+) <[^>]*>$/;
		push @{$func{$name}}, { addr => $addr, op => $op, args => $args,
			text => $text, line => $line // 0,
			file => $file // '', target => $target };
	}
	close $fh;
}

# s390x: objdump knows no PCI instructions and shows their bytes as
# .long words.  Device stores are PCI STORE (b9d4), PCI STORE BLOCK
# (eb....d4) or the s390_pci_mmio_write call; PCI WRITE BARRIER (b9d5)
# flushes.  No plain store from src/mmio.h may reach a device page.
if ($arch eq 's390x') {
	my %has;
	for my $name (@order) {
		(my $short = $name) =~ s{.*/}{};
		my $hex = join('', map { $_->{args} =~ /^0x([0-9a-f]+)$/ ? $1 : '|' }
			       grep { $_->{op} =~ /^\.(long|short)$/ } @{$func{$name}});
		$has{pcistg}{$short}++ if $hex =~ /b9d4/;
		$has{pciwb}{$short}++ if $hex =~ /b9d50000/;
		$has{pcistb}{$short}++ if $hex =~ /eb[0-9a-f]{8}d4/;
		# objdump shows an instruction it does not know (the PCI ones)
		# as .long words, and what follows it may be decoded out of
		# step for a few bytes: no store read there is real.
		my $unknown_end = -1;
		for my $i (@{$func{$name}}) {
			if ($i->{op} =~ /^\.(long|short)$/) {
				$unknown_end = $i->{addr} + ($1 eq 'long' ? 4 : 2);
				next;
			}
			next if $i->{addr} < $unknown_end + 8;
			next unless $i->{file} =~ m{/mmio\.h$};
			next unless $i->{op} =~ /^(st|sty|stg|sth|sthy|stc|stcy|std|ste|stm|stmg|mvc|mvhi|mvghi|mvhhi|strv|strvg|strvh)$/;
			# &value for the system call is on the stack.
			next if $i->{args} =~ /\(%r15\)$|,%r15\)$/;
			fail(sprintf('%s %x: a plain store from mmio.h: %s',
				     $short, $i->{addr}, $i->{text}));
		}
	}
	# The BlueFlame copy: in the send path, wherever the compiler
	# put the doorbell of a list (post_send_list or ring_listed_wqes).
	my %want = (pcistg => qr/:mlx4_arm_cq$/,
		    pciwb => qr/:(post_send|ring_listed_wqes)/,
		    pcistb => qr/:(post_send|ring_listed_wqes)/);
	for my $insn (sort keys %want) {
		my @where = grep { $_ =~ $want{$insn} } keys %{$has{$insn} // {}};
		@where ? ok() : fail("no $insn where expected ($want{$insn})");
		my @all = sort map { s/.*://r } keys %{$has{$insn} // {}};
		print "found: $insn in ", join(', ', @all), "\n" if @all;
	}
	print "ok $oks\n";
	exit($fails ? 1 : 0);
}

sub kind {
	my ($i) = @_;
	my $op = $i->{op};
	return 'atomic' if $c->{atomic_text} && $i->{text} =~ $c->{atomic_text};
	return 'fence' if $op =~ $c->{fence};
	return 'atomic' if $op =~ $c->{atomic};
	return 'call' if $op =~ $c->{call};
	return 'other';
}

# Successors and predecessors inside one function.
sub graph {
	my ($insns) = @_;
	my %at;
	$at{$insns->[$_]{addr}} = $_ for 0 .. $#$insns;
	my (@succ, @pred);
	for my $k (0 .. $#$insns) {
		my $i = $insns->[$k];
		my @s;
		my $op = $i->{op};
		my $is_call = $op =~ $c->{call};
		my $uncond = $op =~ $c->{uncond} ||
			($c->{uncond_text} && $i->{text} =~ $c->{uncond_text});
		if ($uncond && !$is_call) {
			push @s, $at{$i->{target}}
				if defined $i->{target} && exists $at{$i->{target}};
		} else {
			push @s, $k + 1 if $k < $#$insns;
			push @s, $at{$i->{target}}
				if !$is_call && $op =~ $c->{cond} &&
				   defined $i->{target} && exists $at{$i->{target}};
		}
		$succ[$k] = \@s;
		push @{$pred[$_]}, $k for @s;
	}
	return (\@succ, \@pred);
}

# Walk from instruction $k along $edges; $stop->($insn) says 'ok', 'bad'
# or undef (go on).  Returns the failure text of the first bad path.
sub walk {
	my ($insns, $edges, $k, $stop, $forward) = @_;
	my %seen;
	my @todo = @{$edges->[$k] // []};
	while (@todo) {
		my $j = shift @todo;
		next if $seen{$j}++;
		my $v = $stop->($insns->[$j]);
		next if defined $v && $v eq 'ok';
		return sprintf('%x: %s', $insns->[$j]{addr}, $insns->[$j]{text})
			if defined $v;
		my @next = @{$edges->[$j] // []};
		# Backwards, only the function's entry ends a path: other
		# code without predecessors is alignment padding.  Forwards,
		# a return does.
		return sprintf('%x: %s (no barrier on this path)',
			       $insns->[$j]{addr}, $insns->[$j]{text})
			if !@next && ($forward || $j == 0);
		push @todo, @next;
	}
	return undef;
}

my %seen_tag;
for my $name (@order) {
	my $insns = $func{$name};
	next unless @$insns;
	(my $short = $name) =~ s{.*/}{};
	my ($succ, $pred) = graph($insns);

	for my $k (0 .. $#$insns) {
		my $i = $insns->[$k];
		(my $base = $i->{file}) =~ s{.*/}{};
		if (my $rf = $record_line{"$base:$i->{line}"}) {
			next unless $i->{op} =~ $c->{store};
			next if $c->{store_dst} && !$c->{store_dst}->($i->{args});
			next if stack_store($i);
			$record_seen{$rf}++;
			next if $c->{no_fence_needed};
			my $bad = walk($insns, $pred, $k, sub {
				my $x = shift;
				return undef unless kind($x) eq 'fence';
				return 'bad' unless $c->{to_device}->($x->{text});
				$found{"$rf record"}{$x->{text}}++;
				return 'ok';
			});
			$bad ? fail(sprintf('%s %x (record store, %s): %s: before it %s',
					    $short, $i->{addr}, $rf, $i->{text}, $bad)) : ok();
			next;
		}
		next unless $i->{file} =~ m{/mmio\.h$} && $tag{$i->{line}};
		next unless $i->{op} =~ $c->{store};
		next if $c->{store_dst} && !$c->{store_dst}->($i->{args});
		my $t = $tag{$i->{line}};
		my $where = sprintf('%s %x (%s): %s', $short, $i->{addr}, $t,
				    $i->{text});
		$seen_tag{$t}++;

		if ($t eq 'MMIO store64' && $c->{bits32}) {
			fail("$where: a 64-bit doorbell split in unlocked halves");
			next;
		}
		if ($t eq 'MMIO store' || $t eq 'MMIO store64') {
			next if $c->{no_fence_needed};
			my $bad = walk($insns, $pred, $k, sub {
				my $x = shift;
				return undef unless kind($x) eq 'fence';
				return 'bad' unless $c->{to_device}->($x->{text});
				$found{$t}{$x->{text}}++;
				return 'ok';
			});
			$bad ? fail("$where: before it $bad") : ok();
			next;
		}
		# Half stores and write-combining stores: under a lock,
		# started and flushed.
		my $bad = walk($insns, $pred, $k, sub {
			my $x = shift;
			my $kd = kind($x);
			return undef if $kd eq 'other';
			if ($t eq 'MMIO half store') {
				# The lock's atomic, or its call.
				return 'bad' if $kd eq 'fence';
			} else {
				return 'bad' unless $c->{wc}->($x->{text});
			}
			$found{$t}{$x->{text}}++;
			return 'ok';
		});
		if ($bad) {
			fail("$where: before it $bad");
			next;
		}
		my $flush = $c->{flush} // $c->{wc};
		$bad = walk($insns, $succ, $k, sub {
			my $x = shift;
			return undef if kind($x) eq 'other';
			return 'bad' unless $flush->($x->{text});
			$found{"$t, after"}{$x->{text}}++;
			return 'ok';
		}, 1);
		$bad ? fail("$where: after it, before the flush: $bad") : ok();
	}

	# Probes: one macro each, alone in its function.
	if ($short =~ /:probe_(\w+)$/ && $c->{probe} && exists $c->{probe}{$1}) {
		my $want = $c->{probe}{$1};
		# Up to the return; nothing after it but padding.
		my @body;
		for my $x (@$insns) {
			last if $x->{op} =~ /^(ret|retl|blr|bx)$/;
			push @body, $x unless $x->{op} =~ /^(nop|endbr\d+)$/;
		}
		my $got = join('; ', map { $_->{text} } @body);
		$got eq $want ? ok() :
			fail("$short: '$got', expected '$want'");
	}
}

if ($arch ne 's390x') {
	# A check that finds nothing checks nothing.
	for my $f (sort keys %record_seen) {
		fail("no doorbell record store of $f found in the disassembly")
			unless $record_seen{$f};
	}
	for my $t ('MMIO store', 'WC store') {
		fail("no '$t' found in the disassembly") unless $seen_tag{$t};
	}
	fail("no 'MMIO half store' found on a 32-bit CPU")
		if $c->{bits32} && !$seen_tag{'MMIO half store'};
}

# What was found, for the record: each rule and the instructions that
# met it (calls and atomics: a lock).
for my $t (sort keys %found) {
	my %ins;
	for (keys %{$found{$t}}) {
		(my $x = $_) =~ s/^(bl|call|jal|jalr) .*/$1 (lock)/;
		$x =~ s/^(\S+) .*/$1/ if $x =~ /^(xchg|amo|ld[a-z]*xr|lwarx|isync)/;
		$ins{$x} = 1;
	}
	print "found: $t: ", join(' | ', sort keys %ins), "\n";
}
print "ok $oks\n";
exit($fails ? 1 : 0);

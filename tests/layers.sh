#!/usr/bin/env bash
# The layering check (`make lint`, after the build): which C file calls
# which, read from the object files, not from comments.
#
#   1. `nm` over the object of every .c file in the checked folders: each
#      undefined symbol is an edge to the object that defines it;
#   2. each file has a part (tests/layers.map: its folder, its sandbox/
#      subfolder, or a line naming the file); parts are ranked bottom-up;
#   3. fails on a back-edge (a file calling a higher part, or a sibling
#      part on the same rank) and on any cycle between files (Tarjan's
#      strongly connected components), unless tests/layers.allow lists that
#      edge; and fails on an allowed edge that no longer is one, so the
#      allow list only shrinks.
#
# tests/layers.sh [--build DIR] [--map FILE] [--allow FILE] [--src DIR]
#                 [--list] [FOLDER...]
#   --list prints today's violations in the allow file's format.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$REPO
BUILD=
MAP=$REPO/tests/layers.map
ALLOW=$REPO/tests/layers.allow
LIST=0
FOLDERS=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2 && shift 2 ;;
	--map) MAP=$2 && shift 2 ;;
	--allow) ALLOW=$2 && shift 2 ;;
	--src) SRC=$2 && shift 2 ;;
	--list) LIST=1 && shift ;;
	-*) echo "layers: unknown option $1" >&2 && exit 2 ;;
	*) FOLDERS+=("$1") && shift ;;
	esac
done
[ -n "$BUILD" ] || BUILD=$SRC/build
[ ${#FOLDERS[@]} -gt 0 ] || FOLDERS=(common docker store sandbox fcgi handlers stream)
cd "$SRC"

# The sources decide which objects count (a stale object of a removed file
# would otherwise still define its symbols). sandbox/helper/ is the musl
# program inside a sandbox, linked apart.
mapfile -t SOURCES < <(find "${FOLDERS[@]}" -name '*.c' -not -path 'sandbox/helper/*' | sort)
nmout=$(mktemp)
trap 'rm -f "$nmout"' EXIT
for src in "${SOURCES[@]}"; do
	obj=$BUILD/${src%.c}.o
	if [ ! -f "$obj" ]; then
		echo "layers: $obj is missing (run make first)" >&2
		exit 2
	fi
	# defined globals (T D B R C V W …) and undefined symbols, one per line
	echo "F $src -" >>"$nmout"
	nm -P "$obj" | awk -v f="$src" '
		$2 == "U" { print "U", f, $1; next }
		$2 ~ /^[A-TV-Z]$/ { print "D", f, $1 }' >>"$nmout"
done

perl -w - "$MAP" "$ALLOW" "$LIST" "$nmout" <<'PERL'
use strict;
my ($mapf, $allowf, $list, $nmf) = @ARGV;

# --- the map: ranked parts, and files placed away from their folder
my (%rank, %filepart, $r);
$r = 0;
open my $m, '<', $mapf or die "layers: $mapf: $!\n";
while (<$m>) {
	s/#.*//; next unless /\S/;
	my @w = split;
	if ($w[0] eq 'parts:') { $rank{$_} = $r for @w[1 .. $#w]; $r++; }
	elsif (@w == 2) { $filepart{$w[0]} = $w[1]; }
	else { die "layers: $mapf:$.: neither 'parts: A B' nor 'FILE PART'\n"; }
}
close $m;
for my $f (sort keys %filepart) {
	die "layers: $mapf: part $filepart{$f} of $f is not on a 'parts:' line\n"
		unless exists $rank{$filepart{$f}};
}

sub part_of {
	my $f = shift;
	return $filepart{$f} if exists $filepart{$f};
	my @d = split m{/}, $f;
	pop @d;
	while (@d) { my $p = join '/', @d; return $p if exists $rank{$p}; pop @d; }
	die "layers: no part for $f (add it to $mapf)\n";
}

# --- the graph: file -> file, with the symbols that make each edge
my (%def, @uses, %files);
open my $n, '<', $nmf or die;
while (<$n>) {
	my ($k, $f, $s) = split;
	$files{$f} = 1;
	next if $k eq 'F';
	if ($k eq 'D') {
		next if $s eq 'main';   # one per program
		die "layers: $s is defined in $def{$s} and $f\n" if $def{$s} && $def{$s} ne $f;
		$def{$s} = $f;
	} else { push @uses, [$f, $s]; }
}
close $n;
my (%edge, %out);
for my $u (@uses) {
	my ($f, $s) = @$u;
	my $t = $def{$s};
	next unless defined $t && $t ne $f;   # libc, libraries, generated code
	push @{$edge{"$f $t"}}, $s;
	$out{$f}{$t} = 1;
}
my %part = map { $_ => part_of($_) } keys %files;

# --- Tarjan: strongly connected components
my ($idx, %index, %low, %on, @stack, %scc_of, @sccs) = (0);
sub strong {
	my $v = shift;
	$index{$v} = $low{$v} = $idx++;
	push @stack, $v; $on{$v} = 1;
	for my $w (sort keys %{$out{$v} || {}}) {
		if (!exists $index{$w}) { strong($w); $low{$v} = $low{$w} if $low{$w} < $low{$v}; }
		elsif ($on{$w} && $index{$w} < $low{$v}) { $low{$v} = $index{$w}; }
	}
	return unless $low{$v} == $index{$v};
	my @c;
	while (1) { my $w = pop @stack; $on{$w} = 0; push @c, $w; last if $w eq $v; }
	if (@c > 1) { push @sccs, [sort @c]; $scc_of{$_} = $#sccs for @c; }
}
for my $v (sort keys %files) { strong($v) unless exists $index{$v}; }

# --- what is wrong today: each bad edge is a back-edge or else a cycle edge
my %bad;
for my $e (keys %edge) {
	my ($f, $t) = split ' ', $e;
	my ($pf, $pt) = ($part{$f}, $part{$t});
	if ($pf ne $pt && $rank{$pf} <= $rank{$pt}) { $bad{$e} = 'back'; }
	elsif (defined $scc_of{$f} && defined $scc_of{$t} && $scc_of{$f} == $scc_of{$t}) { $bad{$e} = 'cycle'; }
}
my $nback = grep { $_ eq 'back' } values %bad;
my $ncycle = grep { $_ eq 'cycle' } values %bad;

if ($list) {
	for my $e (sort { $bad{$a} cmp $bad{$b} || $a cmp $b } keys %bad) {
		my %seen; my @s = grep { !$seen{$_}++ } sort @{$edge{$e}};
		printf "%-5s %s  # %s\n", $bad{$e}, $e, join(' ', @s[0 .. ($#s < 3 ? $#s : 3)]) . (@s > 4 ? ' …' : '');
	}
	exit 0;
}

# --- against the allow list
my %allow;
if (-e $allowf) {
	open my $a, '<', $allowf or die "layers: $allowf: $!\n";
	while (<$a>) {
		s/#.*//; next unless /\S/;
		my @w = split;
		die "layers: $allowf:$.: not 'back|cycle FROM TO'\n"
			unless @w == 3 && ($w[0] eq 'back' || $w[0] eq 'cycle');
		$allow{"$w[1] $w[2]"} = $w[0];
	}
	close $a;
}
my $status = 0;
for my $f (sort keys %filepart) {
	next if $files{$f};
	print "layers: $mapf places $f, which is not a source file any more: take its line out\n";
	$status = 1;
}
for my $e (sort keys %bad) {
	next if ($allow{$e} // '') eq $bad{$e};
	my ($f, $t) = split ' ', $e;
	my %seen; my @s = grep { !$seen{$_}++ } sort @{$edge{$e}};
	if ($bad{$e} eq 'back') {
		print "layers: back-edge $f ($part{$f}) -> $t ($part{$t}): @s\n";
	} else {
		my @c = @{$sccs[$scc_of{$f}]};
		print "layers: cycle edge $f -> $t: @s (a cycle of ", scalar(@c), " files: @c)\n";
	}
	$status = 1;
}
for my $e (sort keys %allow) {
	next if ($bad{$e} // '') eq $allow{$e};
	my $now = !exists $edge{$e} ? 'no longer exists' : $bad{$e} ? "is now a $bad{$e} edge" : 'is no longer a ' . $allow{$e} . ' edge';
	print "layers: allowed $allow{$e} edge $e $now: take it out of $allowf\n";
	$status = 1;
}

my %sizes; $sizes{scalar @$_}++ for @sccs;
printf "%d files, %d edges, %d parts; %d back-edges, %d cycle edges; %d cycles (%s)\n",
	scalar(keys %files), scalar(keys %edge), scalar(keys %rank), $nback, $ncycle, scalar(@sccs),
	join(', ', map { scalar(@$_) . ' files' } sort { @$b <=> @$a } @sccs) || 'none';
for my $c (sort { @$b <=> @$a || $a->[0] cmp $b->[0] } @sccs) {
	print "  cycle of ", scalar(@$c), ": @$c\n";
}
print $status ? "layers: FAILED\n" : "ok\n";
exit $status;
PERL

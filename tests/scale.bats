#!/usr/bin/env bats
# Many files at scale: what a batch costs per target does not grow with the
# number of targets.  Counted in instructions (callgrind), which repeat run
# after run, never in seconds.

load helpers

# instructions_per_target N DIRS: a --no-sync batch of N new targets spread
# over DIRS directories, under callgrind; prints instructions per target.
instructions_per_target()
{
	local n=$1 dirs=$2 list="$BATS_TEST_TMPDIR/list.$1" total
	python3 - "$n" "$dirs" "$list" <<'PY'
import os, sys
n, dirs, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for d in range(dirs):
    os.makedirs("n%d/%d" % (n, d), exist_ok=True)
with open("src", "w") as f:
    f.write("x\n")
with open(out, "wb") as f:
    for i in range(n):
        f.write(b"n%d/%d/f%d\0src\0" % (n, i % dirs, i))
PY
	total=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
	    "$PONYWRITE" --no-sync --batch="$list" 2>&1 >/dev/null |
	    sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
	[ -n "$total" ] || fail "no count from callgrind"
	echo $((total / n))
}

@test "a batch costs the same per target at 300 and at 1,200 targets (linear, callgrind)" {
	require_cmd valgrind python3
	[ -z "${PONYWRITE_SANITIZER:-}" ] || skip "valgrind cannot run a sanitizer build"
	local small large
	small=$(instructions_per_target 300 30)
	large=$(instructions_per_target 1200 120)
	# Measured (2026-12-06): about 9,000 per target at either size; the
	# flush step looping over earlier targets for each target (mutant
	# many-flush-quadratic) gave 10,700 and 15,300.  Clearing 8 KiB per
	# target (struct walk, counted by callgrind byte by byte) once hid it.
	echo "# per target: $small at 300, $large at 1,200" >&3
	[ $((large * 100)) -le $((small * 125)) ] ||
	    fail "per target: $small at 300, $large at 1,200 (more than 25 % more)"
	[ "$(find n1200 -type f | wc -l)" -eq 1200 ] || fail "not every target was written"
}

# heap_peak N: a --no-sync batch of N new targets over 100 directories, under
# massif; prints the peak of its heap in bytes (allocator overhead included).
heap_peak()
{
	local n=$1 out="$BATS_TEST_TMPDIR/massif.$1"
	python3 - "$n" <<'PY'
import os, sys
n = int(sys.argv[1])
for d in range(100):
    os.makedirs("m%d/%d" % (n, d), exist_ok=True)
with open("src", "w") as f:
    f.write("x\n")
with open("list.%d" % n, "wb") as f:
    for i in range(n):
        f.write(b"m%d/%d/f%d\0src\0" % (n, i % 100, i))
PY
	valgrind --tool=massif --massif-out-file="$out" --max-snapshots=20 \
	    "$PONYWRITE" --no-sync --batch="list.$n" 2>/dev/null ||
	    fail "the batch of $n failed"
	awk -F= '/^mem_heap_B=/ { h = $2 } /^mem_heap_extra_B=/ {
	    if (h + $2 > max) max = h + $2 } END { print max }' "$out"
}

@test "a batch keeps at most its list and 200 bytes per target (heap peak at 2,000 and 20,000 targets, massif)" {
	require_cmd valgrind python3
	[ -z "${PONYWRITE_SANITIZER:-}" ] || skip "valgrind cannot run a sanitizer build"
	local small large per list
	small=$(heap_peak 2000)
	# A static binary's malloc is its own: massif sees no heap.
	[ -n "$small" ] || skip "massif cannot see this binary's heap (static)"
	large=$(heap_peak 20000)
	per=$(((large - small) / 18000))
	list=$((($(stat -c %s list.20000) - $(stat -c %s list.2000)) / 18000))
	# Measured (2026-12-07): 214 bytes a target, 20 of them the list's;
	# 361 before the tables of directories and of file systems grew with
	# them, not with the targets, each name pointed into the list, struct
	# file's flags became bit fields, the temporary names one block, and
	# only the targets that may share a place (their hash does) were sorted
	# to find duplicates; 665 before each name was allocated to its size
	# and each target kept its whole struct stat.
	echo "# $per bytes per target, the list's $list of them (heap peak $small at 2,000, $large at 20,000)" >&3
	[ "$((per - list))" -le 200 ] || fail "$per bytes per target, $list of them the list's"
	[ "$(find m20000 -type f | wc -l)" -eq 20000 ] || fail "not every target was written"
}

# syscalls_per_target N DIRS ORDER: a durable batch replacing N existing
# targets over DIRS directories of an ext4 with a journal (its own loop
# mount), their sources in as many directories, the list in directory
# order (ORDER=dir, as find(1) lists) or round robin (ORDER=rr); prints
# the system calls per target (strace -c), and leaves the trace of the
# first 200 calls' openat in $BATS_TEST_TMPDIR/open.
syscalls_per_target()
{
	local n=$1 dirs=$2 order=$3 list="$BATS_TEST_TMPDIR/list" total
	python3 - "$n" "$dirs" "$order" "$list" <<'PY'
import os, sys
n, dirs, order, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
for d in range(dirs):
    os.makedirs("m/t/d%d" % d, exist_ok=True)
    os.makedirs("m/s/d%d" % d, exist_ok=True)
ks = [k for d in range(dirs) for k in range(d, n, dirs)] if order == "dir" else range(n)
with open(out, "wb") as f:
    for k in ks:
        d = k % dirs
        open("m/t/d%d/f%d" % (d, k), "w").write("old\n")
        open("m/s/d%d/f%d" % (d, k), "w").write("new %d\n" % k)
        f.write(b"m/t/d%d/f%d\0m/s/d%d/f%d\0" % (d, k, d, k))
PY
	strace -f -qq -c -o "$BATS_TEST_TMPDIR/count" "$PONYWRITE" --batch="$list" ||
	    fail "the batch failed"
	total=$(awk '$NF == "total" { print $(NF - 2) }' "$BATS_TEST_TMPDIR/count")
	[ -n "$total" ] || fail "no count from strace: $(cat "$BATS_TEST_TMPDIR/count")"
	echo $((total / n))
}

# Measured (2026-12-07) on ext4 with a journal, 400 targets in 8
# directories three deep: 31 system calls a target in directory order, 45
# round robin; 50 in either order before each directory of a source or a
# target was walked once for a run of targets in it, and before the
# SEEK_CUR, SEEK_SET, ftruncate and second fstatfs calls that told nothing
# were dropped.
@test "a batch in directory order makes at most 34 system calls a target, each directory walked once" {
	require_cmd strace python3
	mount_fs ext4 m -F
	local n
	n=$(syscalls_per_target 400 8 dir)
	[ "$n" -le 34 ] || fail "$n system calls a target"
	assert_content m/t/d3/f11 $'new 11\n'
	# Each source directory and each target directory walked once.
	strace -f -qq -e trace=openat -o "$BATS_TEST_TMPDIR/open" \
	    "$PONYWRITE" --batch="$BATS_TEST_TMPDIR/list"
	local d
	for d in s t; do
		[ "$(grep -c "\"$d\"" "$BATS_TEST_TMPDIR/open")" -eq 8 ] ||
		    fail "$d walked $(grep -c "\"$d\"" "$BATS_TEST_TMPDIR/open") times for 8 directories"
	done
	[ "$(grep -c '"d3"' "$BATS_TEST_TMPDIR/open")" -eq 2 ] ||
	    fail "d3 walked $(grep -c '"d3"' "$BATS_TEST_TMPDIR/open") times"
}

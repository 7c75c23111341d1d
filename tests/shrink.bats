#!/usr/bin/env bats
# An input file that shrinks while it is copied: the new file holds bytes
# the input held (data, or holes it had), never a tail of zeros it never
# held; a real hole to the end of a file that did not shrink stays a hole.
#
# The file is truncated at a fixed point of the copy: ponywrite runs under
# strace, which stops it with SIGSTOP right after a given system call returns
# (found in a dry run on copies of the same files).

load helpers

MIB=$((1024 * 1024))

# shrink_at CALL PATTERN K FILE SIZE ARG...: run ponywrite ARG... (stdin
# from $SHRINK_STDIN, default /dev/null), stopped after the K-th call of the
# system call CALL whose traced line matches PATTERN (an awk regex); truncate
# FILE to SIZE there, then let it go on.  SHRINK_FAIL: a system call made to
# fail with EXDEV (strace injects only into calls it traces).  Sets PW_STATUS
# and PW_STDERR.
shrink_at()
{
	local call=$1 pat=$2 k=$3 file=$4 size=$5 dry="$BATS_TEST_TMPDIR/dry"
	local in=${SHRINK_STDIN:-/dev/null} n sp pid i got trace=$1 fails=()
	shift 5
	if [ -n "${SHRINK_FAIL:-}" ]; then
		trace="$call,$SHRINK_FAIL"
		fails=(-e inject="$SHRINK_FAIL":error=EXDEV)
	fi
	require_cmd strace pgrep truncate
	rm -rf "$dry"
	cp -a "$WORK" "$dry"
	(cd "$dry" && strace -qq -o "$BATS_TEST_TMPDIR/dry.trace" -e trace="$trace" \
	    "${fails[@]}" "$PONYWRITE" "$@" <"$in" 2>/dev/null) || :
	n=$(awk -v k="$k" -v c="^$call\\(" -v p="$pat" \
	    '$0 ~ c { n++ } $0 ~ c && $0 ~ p && ++d == k { print n; exit }' \
	    "$BATS_TEST_TMPDIR/dry.trace")
	[ -n "$n" ] || { fail "the dry run made fewer than $k $call ($pat): $(cat "$BATS_TEST_TMPDIR/dry.trace")"; return 1; }
	strace -qq -o "$BATS_TEST_TMPDIR/trace" -e trace="$trace" "${fails[@]}" \
	    -e inject="$call":signal=SIGSTOP:when="$n" \
	    "$PONYWRITE" "$@" <"$in" 2>"$BATS_TEST_TMPDIR/stderr" &
	sp=$!
	# Stopped once the n-th call is traced: it runs no more code until SIGCONT.
	for i in $(seq 1000); do
		got=$(grep -c "^$call(.*= " "$BATS_TEST_TMPDIR/trace" 2>/dev/null) || :
		[ "${got:-0}" -ge "$n" ] && break
		sleep 0.01
	done
	pid=$(pgrep -P "$sp")
	[ -n "$pid" ] || { fail "no process under strace"; return 1; }
	truncate -s "$size" "$file"
	# A SIGCONT before it has entered the stop would be lost: repeat it.
	for i in $(seq 500); do
		kill -CONT "$pid" 2>/dev/null || break
		sleep 0.01
	done
	PW_STATUS=0
	wait "$sp" || PW_STATUS=$?
	PW_STDERR=$(cat "$BATS_TEST_TMPDIR/stderr")
	[ "${got:-0}" -ge "$n" ] || fail "never stopped: $(cat "$BATS_TEST_TMPDIR/trace")"
}

# The size of FILE and how much of it is allocated (KiB).
size_of() { stat -c %s -- "$1"; }
kib_of() { du -k -- "$1" | cut -f1; }

@test "an -i input truncated to 4 KiB while it is copied: a 4 KiB target, no zero-filled tail" {
	head -c "$MIB" /dev/urandom > in
	head -c 4096 in > first
	echo old > t
	SHRINK_FAIL=
	shrink_at lseek SEEK_DATA 1 in 4096 -i in t
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ -z "$PW_STDERR" ] || fail "stderr: $PW_STDERR"
	[ "$(size_of t)" -eq 4096 ] || fail "target of $(size_of t) bytes, not 4096"
	cmp first t || fail "content differs"
	assert_no_litter
}

@test "a shrinking input copied by pread (no copy_file_range), and as standard input" {
	head -c "$MIB" /dev/urandom > in
	head -c 4096 in > first
	echo old > t
	SHRINK_FAIL=copy_file_range
	shrink_at lseek SEEK_DATA 1 in 4096 -i in t
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ "$(size_of t)" -eq 4096 ] || fail "pread: target of $(size_of t) bytes, not 4096"
	cmp first t || fail "pread: content differs"
	head -c "$MIB" /dev/urandom > in
	head -c 4096 in > first
	SHRINK_FAIL=
	SHRINK_STDIN=in shrink_at lseek SEEK_DATA 1 in 4096 t
	[ "$PW_STATUS" -eq 0 ] || fail "stdin: status $PW_STATUS: $PW_STDERR"
	[ "$(size_of t)" -eq 4096 ] || fail "stdin: target of $(size_of t) bytes, not 4096"
	cmp first t || fail "stdin: content differs"
	assert_no_litter
}

@test "a sparse input that shrinks into its hole: what it held, not its old size" {
	# Data, a hole, data: truncated inside the hole before the first data
	# is copied.
	head -c 4096 /dev/urandom > in
	truncate -s $((512 * 1024)) in
	head -c $((512 * 1024)) /dev/urandom >> in
	echo old > t
	SHRINK_FAIL=
	shrink_at lseek SEEK_HOLE 1 in 8192 -i in t
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ "$(size_of t)" -eq 8192 ] || fail "target of $(size_of t) bytes, not 8192"
	cmp in t || fail "content differs"
	# Truncated below the data already copied (by pread and pwrite, which
	# a signal does not interrupt): that data, no more.
	head -c 4096 /dev/urandom > in
	truncate -s $((512 * 1024)) in
	head -c $((512 * 1024)) /dev/urandom >> in
	head -c 4096 in > first
	SHRINK_FAIL=copy_file_range
	shrink_at pwrite64 . 1 in 1024 -i in t
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ "$(size_of t)" -eq 4096 ] || fail "target of $(size_of t) bytes, not 4096"
	cmp first t || fail "content differs"
	assert_no_litter
}

@test "-a: an old file truncated while it is copied gives its bytes, then the input" {
	head -c "$MIB" /dev/urandom > t
	head -c 4096 t > first
	echo added > add
	cat first add > want
	SHRINK_FAIL=
	shrink_at lseek SEEK_DATA 1 t 4096 -a -i add t
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ "$(size_of t)" -eq $((4096 + 6)) ] || fail "target of $(size_of t) bytes"
	cmp want t || fail "content differs"
	assert_no_litter
}

@test "a real hole to the end of a file that did not shrink: zeros there, still sparse" {
	head -c 4096 /dev/urandom > in
	truncate -s $((64 * MIB)) in
	echo old > t
	SHRINK_FAIL=
	# Truncated to its own size: it does not shrink.
	shrink_at lseek SEEK_DATA 1 in $((64 * MIB)) -i in t
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ "$(size_of t)" -eq $((64 * MIB)) ] || fail "target of $(size_of t) bytes"
	cmp in t || fail "content differs"
	[ "$(kib_of t)" -lt 1024 ] || fail "holes filled: $(kib_of t) KiB allocated"
	assert_no_litter
}

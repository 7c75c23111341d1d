#!/usr/bin/env bats
# Write-back control.  Large input (past 64 MiB) is written behind in 8 MiB
# windows: sync_file_range(WRITE) on the window just filled, then
# sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER) and POSIX_FADV_DONTNEED on
# the one before it; never an fsync per window.  Before the rename, the data
# is waited for with sync_file_range on XFS and on ext4 with a journal, and
# flushed with fsync everywhere else.

load helpers
load features_helpers

MIB=1048576
WIN=$((8 * MIB))

# The large files go at once: tests/fscheck's file systems hold 1 GiB.
teardown()
{
	pw_teardown
	rm -f "$WORK"/in "$WORK"/t "$WORK"/want "$BATS_TEST_TMPDIR"/*.img
}

# trace_wb [STRACE-OPTION...] -- ARG...: ponywrite ARG... under strace; WB holds
# its sync_file_range, fadvise64, fsync and rename calls, one a line.
trace_wb()
{
	require_cmd strace
	local log="$BATS_TEST_TMPDIR/wb.log" opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	status=0
	strace -f -qq -o "$log" "${opts[@]}" \
	    -e trace=sync_file_range,fadvise64,fsync,fdatasync,rename,renameat,renameat2 \
	    "$PONYWRITE" "$@" 2>"$BATS_TEST_TMPDIR/wb.err" || status=$?
	grep -q 'PTRACE\|ptrace' "$BATS_TEST_TMPDIR/wb.err" &&
	    skip "strace cannot trace here: $(head -1 "$BATS_TEST_TMPDIR/wb.err")"
	stderr=$(cat "$BATS_TEST_TMPDIR/wb.err")
	WB=$(sed -E 's/^[0-9]+ +//' "$log")
}

# The window calls of WB as words: W OFFSET LENGTH (start writeback),
# A OFFSET LENGTH (wait for it), D OFFSET LENGTH (drop it from the cache).
windows()
{
	local w='SYNC_FILE_RANGE_WRITE'
	local a='SYNC_FILE_RANGE_WAIT_BEFORE\|SYNC_FILE_RANGE_WRITE\|SYNC_FILE_RANGE_WAIT_AFTER'
	printf '%s\n' "$WB" | sed -nE \
	    -e "s/^sync_file_range\([0-9]+, ([0-9]+), ([1-9][0-9]*), $w\) = 0$/W \1 \2/p" \
	    -e "s/^sync_file_range\([0-9]+, ([0-9]+), ([1-9][0-9]*), $a\) = 0$/A \1 \2/p" \
	    -e 's/^fadvise64\([0-9]+, ([0-9]+), ([0-9]+), POSIX_FADV_DONTNEED\) = 0$/D \1 \2/p' |
	    tr '\n' ' '
}

# The windows expected for MIB mebibytes of new content.
expected_windows()
{
	local k out=
	[ "$1" -ge 64 ] || return 0
	for ((k = 0; k < $1 / 8; k++)); do
		out+="W $((k * WIN)) $WIN "
		((k == 0)) || out+="A $(((k - 1) * WIN)) $WIN D $(((k - 1) * WIN)) $WIN "
	done
	printf '%s' "$out"
}

# Every window call is one of the expected ones, and there is no fsync but
# the one of the temporary file (where it is used) and the directory's
# (dir_flushes of them where an old file is REPLACED).
assert_windows()
{
	local got want ranges flushes dirs=1
	got=$(windows)
	want=$(expected_windows "$1")
	[ "$got" = "$want" ] || fail "windows for $1 MiB:
want: $want
got:  $got
$WB"
	ranges=$(printf '%s\n' "$WB" | grep -cE '^sync_file_range\([0-9]+, [0-9]+, [1-9]' || :)
	[ "$ranges" -eq "$(grep -o '[WA] ' <<<"$want" | wc -l)" ] ||
	    fail "$ranges window calls: $WB"
	flushes=$(printf '%s\n' "$WB" | grep -cE '^(fsync|fdatasync)\(' || :)
	[ "${2:-}" != replaced ] || dirs=$(dir_flushes)
	[ "$flushes" -eq "$(($([ "$(temp_step)" = wait-temp ] && echo 0 || echo 1) + dirs))" ] ||
	    fail "$flushes flushes, want the directory's (and the temporary file's where fsync is used): $WB"
}

@test "below 64 MiB: no write-behind at all" {
	trace_wb -- t < <(head -c $((64 * MIB - 1)) /dev/zero)
	assert_status 0
	[ "$(stat -c %s t)" -eq $((64 * MIB - 1)) ] || fail "size $(stat -c %s t)"
	assert_windows 63
	assert_no_litter
}

@test "exactly 64 MiB from a pipe: eight windows started, seven waited for and dropped" {
	trace_wb -- t < <(head -c $((64 * MIB)) /dev/zero)
	assert_status 0
	[ "$(stat -c %s t)" -eq $((64 * MIB)) ] || fail "size $(stat -c %s t)"
	assert_windows 64
	assert_no_litter
}

@test "84 MiB from a pipe (splice): 8 MiB windows, no fsync per window" {
	head -c $((84 * MIB)) /dev/urandom > in
	trace_wb -- t < <(cat in)
	assert_status 0
	assert_quiet
	cmp in t
	assert_windows 84
	assert_no_litter
}

@test "84 MiB from a file (-i, copy_file_range): the same windows" {
	head -c $((84 * MIB)) /dev/urandom > in
	trace_wb -- -i in t
	assert_status 0
	cmp in t
	assert_windows 84
	assert_no_litter
}

@test "84 MiB by read and write (splice refused): the same windows" {
	head -c $((84 * MIB)) /dev/urandom > in
	trace_wb -e inject=splice:error=EINVAL -- t < <(cat in)
	assert_status 0
	cmp in t
	assert_windows 84
	assert_no_litter
}

@test "84 MiB in command mode: the same windows" {
	head -c $((84 * MIB)) /dev/urandom > in
	trace_wb -- t cat in
	assert_status 0
	cmp in t
	assert_windows 84
	assert_no_litter
}

@test "-a: the old content counts; windows cover the whole new file" {
	head -c $((60 * MIB)) /dev/urandom > t
	head -c $((20 * MIB)) /dev/urandom > in
	cat t in > want
	trace_wb -- -a t < <(cat in)
	assert_status 0
	cmp want t
	assert_windows 80 replaced
	assert_no_litter
}

@test "sync_file_range EIO starting a window: exit 1, target untouched, no litter" {
	printf 'old\n' > t
	snapshot t
	trace_wb -e inject=sync_file_range:error=EIO -- t < <(head -c $((70 * MIB)) /dev/zero)
	assert_status 1
	assert_stderr "ponywrite: t: cannot write the new content: $E_EIO"
	assert_untouched t
	assert_no_litter
	! printf '%s\n' "$WB" | grep -qE '^rename' || fail "renamed after the error: $WB"
}

@test "sync_file_range EIO waiting for a window: exit 1, target untouched, no litter" {
	printf 'old\n' > t
	snapshot t
	trace_wb -e inject=sync_file_range:error=EIO:when=2 -- t < <(head -c $((70 * MIB)) /dev/zero)
	assert_status 1
	assert_stderr "ponywrite: t: cannot write the new content: $E_EIO"
	assert_untouched t
	assert_no_litter
}

@test "sync_file_range EIO in command mode: exit 125, target untouched" {
	printf 'old\n' > t
	snapshot t
	trace_wb -e inject=sync_file_range:error=EIO -- t head -c $((70 * MIB)) /dev/zero
	assert_status 125
	assert_stderr "ponywrite: t: cannot write the new content: $E_EIO; target not replaced"
	assert_untouched t
	assert_no_litter
}

@test "no sync_file_range in the kernel (ENOSYS): no windows, replaced all the same" {
	head -c $((70 * MIB)) /dev/urandom > in
	trace_wb -e inject=sync_file_range:error=ENOSYS -- t < <(cat in)
	assert_status 0
	cmp in t
	n=$(printf '%s\n' "$WB" | grep -cE '^sync_file_range\([0-9]+, [0-9]+, [1-9]' || :)
	[ "$n" -eq 1 ] || fail "$n window calls after ENOSYS: $WB"
	printf '%s\n' "$WB" | grep -qE '^fsync\(' || fail "no fsync: $WB"
	assert_no_litter
}

# Which flush makes the data safe before the rename, per file system.

# The events of a durable and a --no-sync replace in DIR.
assert_sequence()
{
	local dir=$1 want=$2 durable=${3:-rename:t flush-dir} nosync=${4:-rename:t} events
	cd "$dir"
	printf 'old\n' > t
	trace_syncs t < <(printf 'new\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'new\n'
	events=$(trace_events)
	[ "$events" = "$want $durable" ] || fail "durable, want $want $durable: $events
$TRACE"
	trace_syncs --no-sync t < <(printf 'newer\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'newer\n'
	events=$(trace_events)
	[ "$events" = "$want $nosync" ] || fail "--no-sync, want $want $nosync: $events
$TRACE"
	[ "$(temp_step)" = "$want" ] || fail "temp_step says $(temp_step)"
	assert_no_litter .
}

@test "ext4 with a journal: sync_file_range before the rename, no fsync of the file" {
	require_ext4_sysfs
	mount_fs ext4 m -F
	assert_sequence m wait-temp
}

@test "ext4 with data=writeback: sync_file_range too" {
	require_ext4_sysfs
	require_root
	mount_ext4 m 64 data=writeback
	assert_sequence m wait-temp
}

@test "ext3 (the same driver, a journal): sync_file_range" {
	require_ext4_sysfs
	mount_fs ext3 m -F
	assert_sequence m wait-temp
}

# Without a journal --no-sync flushes the directory too when it replaces a
# file: the old file's hidden link goes only once the new name is on disk.
@test "ext4 without a journal (and ext2, same magic): fsync of the file" {
	mount_fs ext4 m -F -O ^has_journal
	assert_sequence m flush-temp "rename:t flush-dir flush-dir" "rename:t flush-dir flush-dir"
}

@test "XFS: sync_file_range before the rename" {
	mount_fs xfs m
	assert_sequence m wait-temp
}

# A directory fsync there does not carry the data; the file's fsync after
# its rename carries both.
@test "btrfs: sync_file_range before the rename, the file flushed after it" {
	mount_fs btrfs m
	assert_sequence m wait-temp "rename:t flush:t"
}

@test "XFS: sync_file_range EIO before the rename: exit 1, target untouched" {
	mount_fs xfs m
	cd m
	printf 'old\n' > t
	snapshot t
	run --separate-stderr strace -qq -o /dev/null -e inject=sync_file_range:error=EIO \
	    "$PONYWRITE" t < <(printf 'new\n')
	assert_status 1
	assert_stderr "ponywrite: t: cannot flush to disk: $E_EIO"
	assert_untouched t
	assert_no_litter "$PWD"
}

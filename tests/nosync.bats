#!/usr/bin/env bats
# --no-sync: ordering only.  The temporary file's data is still made safe
# before the rename (so a crash leaves old or new): fsync, or on XFS, ext4
# with a journal and btrfs sync_file_range (temp_step); the flush after the
# rename is skipped.

load helpers
load features_helpers

@test "--no-sync replaces the target: content, new inode, mode kept, quiet" {
	printf 'old\n' > t
	chmod 0640 t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" --no-sync t < <(printf 'new\n')
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	assert_mode t 640
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	assert_no_litter
}

@test "--no-sync -v: created, replaced, unchanged" {
	run --separate-stderr "$PONYWRITE" --no-sync -v t < <(printf 'one\n')
	assert_status 0
	assert_stderr "ponywrite: t: created"
	assert_content t $'one\n'
	assert_mode t 644
	run --separate-stderr "$PONYWRITE" --no-sync -v t < <(printf 'two\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'two\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" --no-sync -C -v t < <(printf 'two\n')
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
}

@test "--no-sync with large input from a pipe and from a file" {
	head -c 5000000 /dev/urandom > in
	run --separate-stderr bash -c 'cat in | "$1" --no-sync t' _ "$PONYWRITE"
	assert_status 0
	cmp t in
	run --separate-stderr "$PONYWRITE" --no-sync -i in t2
	assert_status 0
	cmp t2 in
	assert_no_litter
}

@test "--no-sync in command mode" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" --no-sync t echo new
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" --no-sync t sh -c 'echo x; exit 6'
	assert_status 6
	assert_stderr "ponywrite: t: not replaced: sh exited with status 6"
	assert_untouched t
	assert_no_litter
}

@test "--no-sync failure paths: -E refusal, directory target; untouched" {
	printf 'old\n' > t
	mkdir d
	snapshot t d
	run --separate-stderr "$PONYWRITE" --no-sync -E t </dev/null
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	run --separate-stderr "$PONYWRITE" --no-sync d < <(printf 'x\n')
	assert_status 1
	assert_stderr "ponywrite: d: not a regular file"
	assert_untouched t d
	assert_no_litter
}

@test "default: the temp file is flushed, renamed, then the directory flushed" {
	printf 'old\n' > t
	trace_syncs t < <(printf 'new\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'new\n'
	events=$(trace_events)
	[ "$events" = "$(temp_step) $(replaced_events t)" ] ||
	    fail "expected: $(temp_step) $(replaced_events t)
got: $events
$TRACE"
	assert_no_litter
}

@test "--no-sync: exactly one flush, of the temp file, before the rename; no directory flush" {
	printf 'old\n' > t
	trace_syncs --no-sync t < <(printf 'new\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'new\n'
	events=$(trace_events)
	[ "$events" = "$(temp_step) $(replaced_events --no-sync t)" ] ||
	    fail "expected: $(temp_step) $(replaced_events --no-sync t)
got: $events
$TRACE"
	n=$(count_in_trace '^(fsync|fdatasync|sync_file_range)\(')
	[ "$n" -eq $((1 + $(dir_flushes --no-sync))) ] || fail "$n flushes: $TRACE"
	assert_no_litter
}

@test "--no-sync on a new target: one flush, no directory flush" {
	trace_syncs --no-sync new < <(printf 'x\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content new $'x\n'
	events=$(trace_events)
	[ "$events" = "$(temp_step) rename:new" ] || fail "got: $events
$TRACE"
	assert_no_litter
}

@test "--no-sync in command mode: one flush, no directory flush" {
	printf 'old\n' > t
	trace_syncs --no-sync t echo new
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'new\n'
	events=$(trace_events)
	[ "$events" = "$(temp_step) $(replaced_events --no-sync t)" ] || fail "got: $events
$TRACE"
	trace_syncs t echo newer
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	events=$(trace_events)
	[ "$events" = "$(temp_step) $(replaced_events t)" ] || fail "default got: $events
$TRACE"
	assert_no_litter
}

@test "--no-sync -b: backup made, still one flush" {
	printf 'old\n' > t
	old=$(inode t)
	trace_syncs --no-sync -b t < <(printf 'new\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'new\n'
	assert_content 't~' $'old\n'
	[ "$(inode 't~')" = "$old" ] || fail "t~ is not the old file"
	events=$(trace_events)
	# Without a journal the old file is linked as t~ before the rename,
	# and the directory flushed once after it.
	local dir=
	[ "$(plan_of)" != nojournal ] || dir=" flush-dir"
	case $events in
	"$(temp_step -b) rename:t~ rename:t$dir" | "$(temp_step -b) rename:t rename:t~$dir") ;;
	*) fail "got: $events
$TRACE" ;;
	esac
	assert_no_litter
}

@test "--no-sync -a: appended, still one flush" {
	printf 'old\n' > t
	trace_syncs --no-sync -a t < <(printf 'new\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'old\nnew\n'
	events=$(trace_events)
	[ "$events" = "$(temp_step) $(replaced_events --no-sync t)" ] || fail "got: $events
$TRACE"
	assert_no_litter
}

@test "--no-sync -l: locked, still one flush" {
	echo 0 > t
	trace_syncs --no-sync -l t sh -c 'echo $(( $(cat t) + 1 ))'
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content t $'1\n'
	events=$(trace_events)
	[ "$events" = "$(temp_step) $(replaced_events --no-sync t)" ] || fail "got: $events
$TRACE"
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
}

@test "--no-sync -p: created parents are not flushed either" {
	trace_syncs --no-sync -p a/b/t < <(printf 'x\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_content a/b/t $'x\n'
	events=$(trace_events)
	case $events in
	"flush:a/b/."*" rename:t" | "wait:a/b/."*" rename:t") ;;
	*) fail "expected only the temp flush and the rename; got: $events
$TRACE" ;;
	esac
	n=$(count_in_trace '^(fsync|fdatasync|sync_file_range)\(')
	[ "$n" -eq 1 ] || fail "$n flushes: $TRACE"
	assert_no_litter
}

@test "default -p flushes more than --no-sync -p: each created parent and the directory" {
	trace_syncs -p a/b/t < <(printf 'x\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	events=$(trace_events)
	case $events in
	"flush-dir flush:a flush:a/b/."*" rename:t flush:a/b") ;;
	"flush-dir flush:a wait:a/b/."*" rename:t flush:a/b") ;;
	"flush-dir flush:a wait:a/b/."*" rename:t flush:a/b/t") ;; # filelog
	*) fail "got: $events
$TRACE" ;;
	esac
	assert_no_litter
}

@test "--no-sync: the temp flush precedes the rename for a target behind a symlink" {
	mkdir sub
	printf 'old\n' > sub/real
	ln -s sub/real link
	trace_syncs --no-sync link < <(printf 'new\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_symlink link
	assert_content sub/real $'new\n'
	events=$(trace_events)
	case $events in
	"flush:sub/.real."*" $(replaced_events --no-sync real flush:sub sub)" | \
	"wait:sub/.real."*" $(replaced_events --no-sync real flush:sub sub)") ;;
	*) fail "got: $events
$TRACE" ;;
	esac
	assert_no_litter
}

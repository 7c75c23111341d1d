#!/usr/bin/env bats
# -a, --append: the new content is the old content followed by the input,
# committed atomically by rename like any other replacement.

load helpers
load features_helpers

@test "-a: old content followed by the input, new inode" {
	printf 'old\n' > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -a t < <(printf 'new\n')
	assert_status 0
	assert_quiet
	assert_content t $'old\nnew\n'
	[ "$(inode t)" != "$old" ] || fail "t was appended to in place"
	assert_no_litter
}

@test "--append, no newline added between old and new" {
	printf 'old' > t
	run --separate-stderr "$PONYWRITE" --append t < <(printf 'new')
	assert_status 0
	assert_quiet
	assert_content t oldnew
	assert_no_litter
}

@test "-a with an empty existing file gives the input" {
	: > t
	run --separate-stderr "$PONYWRITE" -a t < <(printf 'x\n')
	assert_status 0
	assert_content t $'x\n'
	assert_no_litter
}

@test "-a with empty input keeps the old content (new inode)" {
	printf 'old\n' > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -a t </dev/null
	assert_status 0
	assert_content t $'old\n'
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	assert_no_litter
}

@test "-a on a missing target creates it; -v says created" {
	run --separate-stderr "$PONYWRITE" -a -v new < <(printf 'first\n')
	assert_status 0
	assert_stderr "ponywrite: new: created"
	assert_content new $'first\n'
	assert_mode new 644
	run --separate-stderr "$PONYWRITE" -a -v new < <(printf 'second\n')
	assert_status 0
	assert_stderr "ponywrite: new: replaced"
	assert_content new $'first\nsecond\n'
	assert_no_litter
}

@test "-a keeps the mode" {
	printf 'old\n' > t
	chmod 0751 t
	run --separate-stderr "$PONYWRITE" -a t < <(printf 'new\n')
	assert_status 0
	assert_mode t 751
	assert_content t $'old\nnew\n'
	chmod 0400 t
	run --separate-stderr "$PONYWRITE" -a t < <(printf 'more\n')
	assert_status 0
	assert_mode t 400
	assert_content t $'old\nnew\nmore\n'
	assert_no_litter
}

@test "-a keeps owner and group" {
	require_root
	printf 'old\n' > t
	chown 1234:5678 t
	chmod 0640 t
	run --separate-stderr "$PONYWRITE" -a t < <(printf 'new\n')
	assert_status 0
	assert_owner t 1234 5678
	assert_mode t 640
	assert_content t $'old\nnew\n'
	assert_no_litter
}

@test "-a -m: appended, and the requested mode" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -a -m 0600 t < <(printf 'new\n')
	assert_status 0
	assert_mode t 600
	assert_content t $'old\nnew\n'
	assert_no_litter
}

@test "-a -i f f doubles the file" {
	seq 1 20000 > f
	cat f f > expected
	old=$(inode f)
	run --separate-stderr "$PONYWRITE" -a -i f f </dev/null
	assert_status 0
	assert_quiet
	cmp f expected
	[ "$(inode f)" != "$old" ] || fail "f was rewritten in place"
	assert_no_litter
}

@test "-a with a large old file and a large input (beyond any buffer)" {
	head -c 3000001 /dev/urandom > t
	head -c 2000003 /dev/urandom > in
	cat t in > expected
	run --separate-stderr "$PONYWRITE" -a t < in
	assert_status 0
	cmp t expected
	cat t in > expected
	run --separate-stderr bash -c 'cat in | "$1" -a t' _ "$PONYWRITE"
	assert_status 0
	cmp t expected
	assert_no_litter
}

@test "-a in command mode: old content then the command's output" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -a t echo new
	assert_status 0
	assert_quiet
	assert_content t $'old\nnew\n'
	assert_no_litter
}

@test "-a in command mode: the command reading the target sees the old file" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -a t cat t
	assert_status 0
	assert_content t $'old\nold\n'
	assert_no_litter
}

@test "-a: a failing command leaves the target untouched" {
	printf 'old\n' > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -a t sh -c 'echo partial; exit 4'
	assert_status 4
	assert_stderr "ponywrite: t: not replaced: sh exited with status 4"
	assert_untouched t
	assert_no_litter
}

@test "-a -E: empty input is refused even though the result would not be empty" {
	printf 'old\n' > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -a -E t </dev/null
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -a -E t < <(printf 'x')
	assert_status 0
	assert_content t $'old\nx'
	assert_no_litter
}

@test "-a -C: appending nothing leaves the target unchanged" {
	printf 'old\n' > t
	touch -d '2001-02-03 04:05:06' t
	snapshot t
	run --separate-stderr "$PONYWRITE" -a -C -v t </dev/null
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -a -C -v t < <(printf 'x\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'old\nx\n'
	assert_no_litter
}

@test "-a through a symbolic link appends to the real file" {
	mkdir sub
	printf 'old\n' > sub/real
	ln -s sub/real link
	run --separate-stderr "$PONYWRITE" -a link < <(printf 'new\n')
	assert_status 0
	assert_symlink link
	[ "$(readlink link)" = sub/real ] || fail "link changed"
	assert_content sub/real $'old\nnew\n'
	assert_no_litter
}

@test "-a into a missing directory or on a directory: refused, nothing changed" {
	run --separate-stderr "$PONYWRITE" -a nodir/t < <(printf 'x\n')
	assert_status 1
	assert_stderr "ponywrite: nodir: No such file or directory"
	[ ! -e nodir ] || fail "nodir was created"
	assert_no_litter
	mkdir d
	snapshot d
	run --separate-stderr "$PONYWRITE" -a d < <(printf 'x\n')
	assert_status 1
	assert_stderr "ponywrite: d: not a regular file"
	assert_untouched d
	assert_no_litter
}

@test "-a -l: 50 parallel appends lose nothing" {
	: > log
	pids=()
	for i in $(seq 50); do
		"$PONYWRITE" -a -l log echo "line $i" 3>&- &
		pids+=($!)
	done
	failed=0
	for p in "${pids[@]}"; do
		wait "$p" || failed=$((failed + 1))
	done
	[ "$failed" -eq 0 ] || fail "$failed runs failed"
	[ "$(wc -l < log)" -eq 50 ] || fail "log has $(wc -l < log) lines, not 50"
	[ "$(sort -u log | wc -l)" -eq 50 ] || fail "duplicate lines in log"
	diff <(seq 50 | sed 's/^/line /' | sort) <(sort log)
	[ "$(listing)" = log ] || fail "directory holds: $(listing)"
}

@test "-a -l on a missing target: parallel appends lose nothing" {
	pids=()
	for i in $(seq 30); do
		"$PONYWRITE" --no-sync -a -l log echo "line $i" 3>&- &
		pids+=($!)
	done
	failed=0
	for p in "${pids[@]}"; do
		wait "$p" || failed=$((failed + 1))
	done
	[ "$failed" -eq 0 ] || fail "$failed runs failed"
	diff <(seq 30 | sed 's/^/line /' | sort) <(sort log)
	[ "$(listing)" = log ] || fail "directory holds: $(listing)"
}

@test "-a without -l: 50 parallel appends lose nothing (-a takes the lock)" {
	: > log
	pids=()
	for i in $(seq 50); do
		echo "line $i" | "$PONYWRITE" --no-sync -a log 3>&- &
		pids+=($!)
	done
	failed=0
	for p in "${pids[@]}"; do
		wait "$p" || failed=$((failed + 1))
	done
	[ "$failed" -eq 0 ] || fail "$failed runs failed"
	diff <(seq 50 | sed 's/^/line /' | sort) <(sort log) ||
	    fail "log has $(wc -l < log) lines, not 50"
	[ "$(listing)" = log ] || fail "directory holds: $(listing)"
}

@test "-a on a missing target in an unwritable directory names the directory" {
	unpriv_setup
	mkdir ro
	chmod 0555 ro
	run --separate-stderr unpriv "$PONYWRITE" -a ro/t < <(printf 'x\n')
	assert_status 1
	assert_stderr "ponywrite: ro: cannot create a lock file in this directory: Permission denied"
	[ "$(listing ro)" = "" ] || fail "ro holds: $(listing ro)"
	run --separate-stderr unpriv "$PONYWRITE" -a ro/t echo x
	assert_status 125
	assert_stderr "ponywrite: ro: cannot create a lock file in this directory: Permission denied; target not replaced"
	chmod 0755 ro
	assert_no_litter
}

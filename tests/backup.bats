#!/usr/bin/env bats
# -b, --backup and -S, --suffix: the previous version is kept as TARGET~ (a
# hard link to the old file, so the target is never missing).

load helpers
load features_helpers

@test "-b: TARGET~ is the old file (same inode), target is new" {
	printf 'old\n' > t
	chmod 0640 t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	assert_content 't~' $'old\n'
	[ "$(inode 't~')" = "$old" ] || fail "t~ is a copy, not the old file"
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	[ "$(stat -c %h 't~')" -eq 1 ] || fail "t~ has $(stat -c %h 't~') links"
	assert_mode 't~' 640
	assert_mode t 640
	assert_no_litter
	[ "$(listing)" = "$(printf 't\nt~')" ] || fail "directory holds: $(listing)"
}

@test "--backup, and -v says replaced" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" --backup -v t < <(printf 'new\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'new\n'
	assert_content 't~' $'old\n'
	assert_no_litter
}

@test "-b keeps the backup's metadata as it was (it is the old file)" {
	printf 'old\n' > t
	chmod 0604 t
	touch -d '2001-02-03 04:05:06' t
	snapshot t
	before=${PW_SNAP[t]}
	run --separate-stderr "$PONYWRITE" -b -m 0600 t < <(printf 'new\n')
	assert_status 0
	# Only the link count may differ: t no longer names the old inode.
	describe 't~'
	[ "$PW_DESC" = "$before" ] || fail "t~: $PW_DESC, was $before"
	assert_mode t 600
	assert_no_litter
}

@test "-S SUFFIX and --suffix=SUFFIX choose the backup name" {
	printf 'v1\n' > t
	run --separate-stderr "$PONYWRITE" -b -S .bak t < <(printf 'v2\n')
	assert_status 0
	assert_quiet
	assert_content t.bak $'v1\n'
	[ ! -e 't~' ] || fail "t~ was made too"
	run --separate-stderr "$PONYWRITE" -b --suffix=.orig t < <(printf 'v3\n')
	assert_status 0
	assert_content t.orig $'v2\n'
	assert_content t.bak $'v1\n'
	assert_content t $'v3\n'
	assert_no_litter
}

@test "an existing backup is replaced by the old target" {
	printf 'older\n' > 't~'
	printf 'old\n' > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 0
	assert_content 't~' $'old\n'
	[ "$(inode 't~')" = "$old" ] || fail "t~ is not the old target"
	assert_content t $'new\n'
	assert_no_litter
	[ "$(listing)" = "$(printf 't\nt~')" ] || fail "directory holds: $(listing)"
}

@test "a backup name that is a symbolic link is replaced, not followed" {
	printf 'victim\n' > victim
	chmod 0644 victim
	ln -s victim 't~'
	printf 'old\n' > t
	old=$(inode t)
	snapshot victim
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 0
	assert_regular 't~'
	[ "$(inode 't~')" = "$old" ] || fail "t~ is not the old target"
	assert_content 't~' $'old\n'
	assert_untouched victim
	assert_content t $'new\n'
	assert_no_litter
}

@test "a backup name that is a dangling symbolic link is replaced, nothing created" {
	ln -s nowhere 't~'
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 0
	assert_regular 't~'
	assert_content 't~' $'old\n'
	[ ! -e nowhere ] || fail "the link was followed: nowhere exists"
	assert_no_litter
}

@test "a backup name that is a symlink to a directory is replaced, not followed" {
	mkdir d
	ln -s d 't~'
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 0
	assert_regular 't~'
	assert_content 't~' $'old\n'
	[ -z "$(listing d)" ] || fail "d now holds: $(listing d)"
	assert_no_litter
}

@test "no backup when the target does not exist" {
	run --separate-stderr "$PONYWRITE" -b -v new < <(printf 'x\n')
	assert_status 0
	assert_stderr "ponywrite: new: created"
	assert_content new $'x\n'
	[ "$(listing)" = new ] || fail "directory holds: $(listing)"
}

@test "failed run (command exits 1) leaves target and backup untouched" {
	printf 'older\n' > 't~'
	printf 'old\n' > t
	snapshot t 't~'
	run --separate-stderr "$PONYWRITE" -b t sh -c 'echo partial; exit 1'
	assert_status 1
	assert_stderr "ponywrite: t: not replaced: sh exited with status 1"
	assert_untouched t 't~'
	assert_no_litter
}

@test "failed run (-E, empty input) leaves target and backup untouched" {
	printf 'older\n' > 't~'
	printf 'old\n' > t
	snapshot t 't~'
	run --separate-stderr "$PONYWRITE" -b -E t </dev/null
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t 't~'
	assert_no_litter
}

@test "failed run makes no backup when there was none" {
	printf 'old\n' > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -b t false
	assert_status 1
	assert_untouched t
	[ ! -e 't~' ] && [ ! -L 't~' ] || fail "t~ was made by a failed run"
	run --separate-stderr "$PONYWRITE" -b -E t </dev/null
	assert_status 1
	[ ! -e 't~' ] || fail "t~ was made by a failed run"
	assert_no_litter
}

@test "backup name is a directory: exit 1, target untouched, no litter" {
	mkdir 't~'
	printf 'old\n' > t
	snapshot t 't~'
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 1
	assert_stderr_has "ponywrite: t: "
	assert_stderr_has "Is a directory"
	assert_untouched t 't~'
	assert_no_litter
}

@test "backup name too long: exit 1, target untouched, no litter" {
	name=$(printf 'x%.0s' $(seq 255))
	printf 'old\n' > "$name"
	snapshot "$name"
	run --separate-stderr "$PONYWRITE" -b "$name" < <(printf 'new\n')
	assert_status 1
	assert_stderr_has "ponywrite: $name: "
	assert_stderr_has "$E_NAMETOOLONG"
	assert_untouched "$name"
	assert_no_litter
	[ "$(listing)" = "$name" ] || fail "directory holds: $(listing)"
}

@test "a backup that is already a hard link of the target: no litter" {
	printf 'old\n' > t
	ln t 't~'
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -b t < <(printf 'new\n')
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	assert_content 't~' $'old\n'
	[ "$(inode 't~')" = "$old" ] || fail "t~ is not the old target"
	assert_no_litter
	[ "$(listing)" = "$(printf 't\nt~')" ] || fail "directory holds: $(listing)"
}

@test "a long suffix that still fits NAME_MAX with the target's name works" {
	suffix=$(printf 'x%.0s' $(seq 250))
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -b -S "$suffix" t < <(printf 'new\n')
	assert_status 0
	assert_quiet
	assert_content "t$suffix" $'old\n'
	assert_content t $'new\n'
	assert_no_litter
}

@test "invalid suffix: empty or containing '/' is a usage error (exit 2)" {
	printf 'old\n' > t
	snapshot t
	for s in '' a/b / '~/'; do
		run --separate-stderr "$PONYWRITE" -b -S "$s" t < <(printf 'new\n')
		assert_status 2
		assert_stderr_has "ponywrite: invalid suffix: '$s'"
		assert_untouched t
		assert_no_litter
		[ "$(listing)" = t ] || fail "directory holds: $(listing)"
	done
	run --separate-stderr "$PONYWRITE" -b --suffix= t < <(printf 'new\n')
	assert_status 2
	assert_stderr_has "ponywrite: invalid suffix: ''"
	assert_untouched t
	run --separate-stderr "$PONYWRITE" -b -S a/b t sh -c 'touch marker'
	assert_status 2
	assert_stderr_has "ponywrite: invalid suffix: 'a/b'"
	[ ! -e marker ] || fail "the command ran"
	assert_untouched t
	assert_no_litter
}

@test "-C -b unchanged: no new backup, old backup untouched" {
	printf 'same\n' > t
	printf 'older\n' > 't~'
	snapshot t 't~'
	run --separate-stderr "$PONYWRITE" -C -b -v t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t 't~'
	assert_no_litter
	rm 't~'
	run --separate-stderr "$PONYWRITE" -C -b t < <(printf 'same\n')
	assert_status 0
	assert_untouched t
	[ ! -e 't~' ] || fail "t~ made although nothing changed"
	assert_no_litter
}

@test "-C -b changed: backup made" {
	printf 'old\n' > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -C -b t < <(printf 'new\n')
	assert_status 0
	assert_content t $'new\n'
	assert_content 't~' $'old\n'
	[ "$(inode 't~')" = "$old" ] || fail "t~ is not the old target"
	assert_no_litter
}

@test "-b in command mode" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -b t echo new
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	assert_content 't~' $'old\n'
	assert_no_litter
}

@test "-b keeps working run after run: each backup is the previous version" {
	for v in 1 2 3 4; do
		run --separate-stderr "$PONYWRITE" -b t echo "v$v"
		assert_status 0
	done
	assert_content t $'v4\n'
	assert_content 't~' $'v3\n'
	[ "$(listing)" = "$(printf 't\nt~')" ] || fail "directory holds: $(listing)"
}

@test "-b: the target is never missing while backups are made" {
	printf 'start\n' > t
	(
		for i in $(seq 80); do
			echo "$i" | "$PONYWRITE" --no-sync -b t || exit 1
		done
	) 3>&- &
	writer=$!
	missing=0
	while kill -0 "$writer" 2>/dev/null; do
		[ -e t ] || missing=$((missing + 1))
	done
	wait "$writer" || fail "a ponywrite -b run failed"
	[ "$missing" -eq 0 ] || fail "t was missing $missing times"
	assert_content t $'80\n'
	assert_content 't~' $'79\n'
	assert_no_litter
}

@test "concurrent -b runs leave no hidden backup links and all succeed" {
	echo v0 > f
	for round in $(seq 30); do
		pids=()
		for w in a b; do
			echo "$round$w" | "$PONYWRITE" -b f 2>>errors &
			pids+=($!)
		done
		for p in "${pids[@]}"; do
			wait "$p" || fail "a run failed: $(cat errors)"
		done
	done
	[ ! -s errors ] || fail "messages: $(cat errors)"
	assert_regular f
	assert_regular f~
	assert_no_litter
}

@test "-b: a backup that another run made the same file meanwhile leaves no hidden link" {
	require_cmd strace
	echo old > t
	echo new > in
	# Hold ponywrite just after it links the old file under a hidden name
	# (the second link: the first proves the file system has hard links and
	# is removed at once); meanwhile TARGET~ becomes another name of that
	# same file.  The held link is the one seen twice, 50 ms apart.
	strace -qq -o /dev/null -e trace=linkat -e inject=linkat:delay_exit=1000000:when=2 \
	    "$PONYWRITE" -b -i in t 2>err &
	pid=$!
	local seen='' now
	for _ in $(seq 100); do
		now=$(find . -name '.t~.*')
		[ -n "$now" ] && [ "$now" = "$seen" ] && break
		seen=$now
		sleep 0.05
	done
	[ -n "$now" ] && [ "$now" = "$seen" ] || fail "no hidden link held"
	ln t t~
	wait "$pid" || fail "ponywrite failed: $(cat err)"
	assert_content t $'new\n'
	assert_content t~ $'old\n'
	assert_no_litter
}

#!/usr/bin/env bats
# What would make a rename fail is found before the first one: a target that
# is another target's backup name under -b (a usage error), a backup name
# that cannot be made, a mount point, chattr +i or +a on a target or on its
# directory.  Then nothing is replaced (exit 1), no command is run where it
# can be known before, and nothing is left behind; exit 4 is left for what
# nothing could foresee.

load helpers
load features_helpers

teardown()
{
	# An immutable file cannot be removed by the clean-up.
	chattr -R -ia "$WORK" 2>/dev/null || :
	pw_teardown
}

# musl has neither statx nor <linux/fs.h>: there these are found at the
# rename, as the man page says.
require_early_checks()
{
	if grep -q 'Symbolic link loop' "$PONYWRITE" 2>/dev/null; then
		skip "musl build: mount points and chattr flags are found at the rename"
	fi
}

require_chattr()
{
	require_root
	require_cmd chattr lsattr
	require_early_checks
	touch "$BATS_TEST_TMPDIR/probe"
	if ! chattr +i "$BATS_TEST_TMPDIR/probe" 2>/dev/null ||
	    ! lsattr "$BATS_TEST_TMPDIR/probe" >/dev/null 2>&1; then
		skip "the file system of $BATS_TEST_TMPDIR does not support chattr"
	fi
	chattr -i "$BATS_TEST_TMPDIR/probe"
}

two()
{
	mkdir -p d s
	printf 'old a\n' > d/a
	printf 'old b\n' > d/b
	printf 'new a\n' > s/a
	printf 'new b\n' > s/b
}

# The batch of two failed at d/b before any rename: REASON, then the count.
assert_nothing_replaced()
{
	assert_status 1
	assert_stderr "ponywrite: d/b: $1
ponywrite: nothing replaced: 1 of 2 targets failed"
	assert_untouched d/a d/b
	assert_no_litter
}

@test "-b --batch: a target that is another target's backup name is a usage error, either order" {
	printf old-x > x
	printf old-xb > 'x~'
	printf new-x > s1
	printf new-xb > s2
	snapshot x 'x~'
	run --separate-stderr "$PONYWRITE" -b --batch=- < <(printf '%s\0' 'x~' s2 x s1)
	assert_status 2
	assert_stderr "ponywrite: x~: is also the backup name of x (-b); a target cannot be another target's backup"
	assert_untouched x 'x~'
	run --separate-stderr "$PONYWRITE" -b --batch=- < <(printf '%s\0' x s1 'x~' s2)
	assert_status 2
	assert_stderr "ponywrite: x~: is also the backup name of x (-b); a target cannot be another target's backup"
	assert_untouched x 'x~'
	assert_no_litter
	[ "$(listing)" = "$(printf 's1\ns2\nx\nx~')" ] || fail "directory holds: $(listing)"
	# Without -b they are two targets like any others.
	run --separate-stderr "$PONYWRITE" --batch=- < <(printf '%s\0' 'x~' s2 x s1)
	assert_status 0
	assert_content x new-x
	assert_content 'x~' new-xb
}

@test "-b -t: SOURCE~ and SOURCE into one directory is a usage error; -S names the backup" {
	mkdir d src
	printf 'new a\n' > src/a
	printf 'new a~\n' > 'src/a~'
	printf 'new a.bak\n' > src/a.bak
	printf 'old a\n' > d/a
	snapshot d/a
	run --separate-stderr "$PONYWRITE" -b -t d 'src/a~' src/a
	assert_status 2
	assert_stderr "ponywrite: d/a~: is also the backup name of d/a (-b); a target cannot be another target's backup"
	assert_untouched d/a
	[ "$(listing d)" = a ] || fail "d holds: $(listing d)"
	run --separate-stderr "$PONYWRITE" -b -S .bak -t d src/a src/a.bak
	assert_status 2
	assert_stderr "ponywrite: d/a.bak: is also the backup name of d/a (-b); a target cannot be another target's backup"
	assert_untouched d/a
	[ "$(listing d)" = a ] || fail "d holds: $(listing d)"
	# With another suffix a~ is no backup name.
	run --separate-stderr "$PONYWRITE" -b -S .bak -t d 'src/a~' src/a
	assert_status 0
	assert_content d/a.bak $'old a\n'
	assert_content 'd/a~' $'new a~\n'
	assert_no_litter
}

@test "-b -t: a backup name that is a directory fails the batch before any rename" {
	two
	mkdir 'd/b~'
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -b -t d s/a s/b
	assert_nothing_replaced "cannot make backup b~: Is a directory"
	[ "$(listing d)" = "$(printf 'a\nb\nb~')" ] || fail "d holds: $(listing d)"
}

@test "-b: a backup name that is a directory stops a command before it runs" {
	printf 'old\n' > t
	mkdir 't~'
	snapshot t
	run --separate-stderr "$PONYWRITE" -b t sh -c 'touch ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: t: cannot make backup t~: Is a directory; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched t
	assert_no_litter
	[ "$(listing)" = "$(printf 't\nt~')" ] || fail "directory holds: $(listing)"
}

@test "-b -S: a backup name longer than NAME_MAX fails the batch before any rename" {
	two
	mv d/b d/bbbbbbbbbb
	mv s/b s/bbbbbbbbbb
	suffix=$(printf 'x%.0s' $(seq 250))
	snapshot d/a d/bbbbbbbbbb
	run --separate-stderr "$PONYWRITE" -b -S "$suffix" -t d s/a s/bbbbbbbbbb
	assert_status 1
	assert_stderr "ponywrite: d/bbbbbbbbbb: cannot make backup: $E_NAMETOOLONG
ponywrite: nothing replaced: 1 of 2 targets failed"
	assert_untouched d/a d/bbbbbbbbbb
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nbbbbbbbbbb')" ] || fail "d holds: $(listing d)"
	# The command of a single run is not run either.
	run --separate-stderr "$PONYWRITE" -b -S "$suffix" d/bbbbbbbbbb sh -c 'touch ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: d/bbbbbbbbbb: cannot make backup: $E_NAMETOOLONG; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched d/bbbbbbbbbb
	assert_no_litter
}

@test "-b: a backup link that cannot be made fails the batch before any rename, links removed" {
	require_cmd strace
	two
	snapshot d/a d/b
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=link,linkat:error=EMLINK:when=2 \
	    "$PONYWRITE" -b -t d s/a s/b
	assert_nothing_replaced "cannot make backup: Too many links"
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
}

@test "-b: SIGTERM while the backup links are made: dies by it, targets untouched, links removed" {
	require_cmd strace perl
	two
	snapshot d/a d/b
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=linkat:signal=SIGTERM:when=2 \
	    "$PONYWRITE" -b -t d s/a s/b
	[ "$status" -eq $((128 + 15)) ] || fail "status $status: $stderr"
	assert_untouched d/a d/b
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
}

@test "chattr +i on a target: named, nothing replaced, no command run (root)" {
	require_chattr
	two
	chattr +i d/b
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -t d s/a s/b
	assert_nothing_replaced "is immutable (chattr +i); cannot be replaced"
	run --separate-stderr "$PONYWRITE" -b -t d s/a s/b
	assert_nothing_replaced "is immutable (chattr +i); cannot be replaced"
	run --separate-stderr "$PONYWRITE" d/b < s/b
	assert_status 1
	assert_stderr "ponywrite: d/b: is immutable (chattr +i); cannot be replaced"
	run --separate-stderr "$PONYWRITE" -b d/b sh -c 'touch ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: d/b: is immutable (chattr +i); cannot be replaced; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched d/a d/b
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
	# -C with nothing to change replaces nothing: no reason to fail.
	run --separate-stderr "$PONYWRITE" -C d/b < d/b
	assert_status 0
	assert_untouched d/b
}

@test "chattr +a on a target: named, nothing replaced, no command run (root)" {
	require_chattr
	two
	chattr +a d/b
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -b -t d s/a s/b
	assert_nothing_replaced "is append-only (chattr +a); cannot be replaced"
	run --separate-stderr "$PONYWRITE" -b d/b < s/b
	assert_status 1
	assert_stderr "ponywrite: d/b: is append-only (chattr +a); cannot be replaced"
	run --separate-stderr "$PONYWRITE" -a d/b sh -c 'touch ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: d/b: is append-only (chattr +a); cannot be replaced; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched d/a d/b
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
}

@test "chattr +i on an existing backup: the run fails before replacing anything (root)" {
	require_chattr
	two
	printf 'older b\n' > 'd/b~'
	chattr +i 'd/b~'
	snapshot d/a d/b 'd/b~'
	run --separate-stderr "$PONYWRITE" -b -t d s/a s/b
	assert_nothing_replaced "cannot make backup b~: it is immutable (chattr +i)"
	assert_untouched 'd/b~'
	run --separate-stderr "$PONYWRITE" -b d/b < s/b
	assert_status 1
	assert_stderr "ponywrite: d/b: cannot make backup b~: it is immutable (chattr +i)"
	assert_untouched d/b 'd/b~'
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb\nb~')" ] || fail "d holds: $(listing d)"
}

@test "chattr +a on the directory: each target named, no temporary file left (root)" {
	require_chattr
	two
	chattr +a d
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -t d s/a s/b
	assert_status 1
	assert_stderr "ponywrite: d/a: directory d is append-only (chattr +a); cannot be replaced
ponywrite: d/b: directory d is append-only (chattr +a); cannot be replaced
ponywrite: nothing replaced: 2 of 2 targets failed"
	run --separate-stderr "$PONYWRITE" d/a sh -c 'touch ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: d/a: directory d is append-only (chattr +a); cannot be replaced; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	run --separate-stderr "$PONYWRITE" -l d/new < s/a
	assert_status 1
	assert_stderr "ponywrite: d/new: directory d is append-only (chattr +a); cannot be created"
	assert_untouched d/a d/b
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
}

@test "chattr +i on the directory: the flag is named (root)" {
	require_chattr
	two
	chattr +i d
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -b -t d s/a s/b
	assert_status 1
	assert_stderr "ponywrite: d/a: directory d is immutable (chattr +i); cannot be replaced
ponywrite: d/b: directory d is immutable (chattr +i); cannot be replaced
ponywrite: nothing replaced: 2 of 2 targets failed"
	run --separate-stderr "$PONYWRITE" d/a < s/a
	assert_status 1
	assert_stderr "ponywrite: d/a: directory d is immutable (chattr +i); cannot be replaced"
	assert_untouched d/a d/b
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
}

@test "a bind-mounted target: the batch fails before any rename, a command is not run (root)" {
	require_root
	require_cmd mount umount
	require_early_checks
	two
	printf 'mounted\n' > m
	mount --bind m d/b 2>/dev/null || skip "cannot bind-mount a file"
	PW_MOUNTS+=("$WORK/d/b")
	snapshot d/a d/b m
	# musl's text for EBUSY is another, but musl is skipped above.
	run --separate-stderr "$PONYWRITE" -t d s/a s/b
	assert_nothing_replaced "is a mount point and cannot be replaced: Device or resource busy"
	run --separate-stderr "$PONYWRITE" -b -t d s/a s/b
	assert_nothing_replaced "is a mount point and cannot be replaced: Device or resource busy"
	run --separate-stderr "$PONYWRITE" d/b sh -c 'touch ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: d/b: is a mount point and cannot be replaced: Device or resource busy; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched d/a d/b m
	assert_no_litter
	[ "$(listing d)" = "$(printf 'a\nb')" ] || fail "d holds: $(listing d)"
	# -C with nothing to change replaces nothing: no reason to fail.
	run --separate-stderr "$PONYWRITE" -C d/b < m
	assert_status 0
}

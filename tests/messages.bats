#!/usr/bin/env bats
# Messages name what the user gave: a symbolic link as typed, with where it
# leads; a mount point as such.

load helpers

# musl's texts for EBUSY and EXDEV differ from glibc's.
if grep -q 'Symbolic link loop' "$PONYWRITE" 2>/dev/null; then
	E_BUSY='Resource busy' E_XDEV='Cross-device link'
else
	E_BUSY='Device or resource busy' E_XDEV='Invalid cross-device link'
fi

@test "a missing directory behind a symbolic link: the link is named, then the directory" {
	mkdir sub
	ln -s sub/nodir/t link
	snapshot link
	run --separate-stderr "$PONYWRITE" link < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: link: sub/nodir: No such file or directory"
	assert_untouched link
	assert_no_litter
	run --separate-stderr "$PONYWRITE" link echo new
	assert_status 125
	assert_stderr "ponywrite: link: sub/nodir: No such file or directory; target not replaced"
	assert_no_litter
}

@test "an unwritable directory behind a symbolic link: the link is named, then the directory" {
	unpriv_setup
	mkdir ro
	echo old > ro/t
	ln -s ro/t link
	[ "$(id -u)" -ne 0 ] || chown -R nobody:nogroup ro link
	chmod 0555 ro
	snapshot ro/t link
	run --separate-stderr unpriv "$PONYWRITE" link < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: link: cannot create a temporary file in ro: Permission denied"
	assert_untouched ro/t link
	# Without a link, the directory is named as before.
	run --separate-stderr unpriv "$PONYWRITE" ro/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: ro: cannot create a temporary file in this directory: Permission denied"
	assert_untouched ro/t
	chmod 0755 ro
	assert_no_litter
}

@test "a bind-mounted target: the message says it is a mount point (root)" {
	require_root
	require_cmd mount umount
	echo mounted > src
	echo old > t
	mount --bind src t 2>/dev/null || skip "cannot bind-mount a file"
	PW_MOUNTS+=("$WORK/t")
	snapshot t src
	run --separate-stderr "$PONYWRITE" t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: is a mount point and cannot be replaced: $E_BUSY"
	assert_untouched t src
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -l t echo new
	assert_status 125
	assert_stderr "ponywrite: t: is a mount point and cannot be replaced: $E_BUSY; target not replaced"
	assert_untouched t src
	assert_no_litter
	# -b: statx finds the mount point first; without statx (musl) the
	# backup link does, and across the mount that is EXDEV.
	run --separate-stderr "$PONYWRITE" -b t < <(echo new)
	assert_status 1
	if [ "$E_BUSY" = 'Resource busy' ]; then
		assert_stderr "ponywrite: t: is a mount point and cannot be replaced: $E_XDEV"
	else
		assert_stderr "ponywrite: t: is a mount point and cannot be replaced: $E_BUSY"
	fi
	assert_untouched t src
	assert_no_litter
	[ ! -e t~ ] || fail "t~ was made"
}

# no_stdin CMD...: run CMD with descriptor 0 closed (run's own pipes never
# take its place).
no_stdin()
{
	timeout 10 bash -c 'exec 0<&- "$@"' _ "$@"
}

@test "a closed stdin: --batch=- says what -i - says, exit 1, nothing done" {
	echo old > t
	snapshot t
	run --separate-stderr no_stdin "$PONYWRITE" -i - t
	assert_status 1
	assert_stderr "ponywrite: stdin: Bad file descriptor"
	assert_untouched t
	run --separate-stderr no_stdin "$PONYWRITE" --batch=-
	assert_status 1
	assert_stderr "ponywrite: stdin: Bad file descriptor"
	assert_untouched t
	run --separate-stderr no_stdin "$PONYWRITE" --batch=- -v --print-changed
	assert_status 1
	assert_stderr "ponywrite: stdin: Bad file descriptor"
	[ -z "$output" ] || fail "stdout: $output"
	# A list's source "-" is stdin: the same reason, named by the batch.
	printf 't\0-\0' > list
	snapshot list
	run --separate-stderr no_stdin "$PONYWRITE" --batch=list
	assert_status 1
	assert_stderr "ponywrite: stdin: Bad file descriptor
ponywrite: nothing replaced: 1 of 1 targets failed"
	assert_untouched t list
	# -t has no name to give stdin: a usage error, closed or not.
	mkdir d
	run --separate-stderr no_stdin "$PONYWRITE" -t d -
	assert_status 2
	assert_stderr "ponywrite: -: no file name to give it in d (use --batch to name targets)
Try 'ponywrite --help' for more information."
	[ -z "$(ls -A d)" ] || fail "d: $(ls -A d)"
	assert_no_litter "$WORK"
}

#!/usr/bin/env bats
# -C, --if-changed: when content and requested metadata equal the existing
# target's, the target is left alone (same inode, same mtime) and exit is 0.

load helpers
load features_helpers

# A target with an old mtime, so that any rewrite would show.
old_target()
{
	printf '%s' "$2" > "$1"
	chmod "${3:-0644}" "$1"
	touch -d '2001-02-03 04:05:06' "$1"
}

@test "-C, same content and metadata: same inode and mtime, exit 0; --if-changed -v says unchanged" {
	old_target t $'same\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" -C t < <(printf 'same\n')
	assert_status 0
	assert_quiet
	assert_untouched t
	assert_no_litter
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
	old_target t $'same\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" --if-changed -v t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	[ -z "$output" ] || fail "stdout: $output"
	assert_untouched t
	assert_no_litter
}

@test "-C, different content: replaced, -v says replaced" {
	old_target t $'old\n'
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -C -v t < <(printf 'new\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'new\n'
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	assert_no_litter
}

@test "-C, missing target: created, -v says created" {
	run --separate-stderr "$PONYWRITE" -C -v new < <(printf 'x\n')
	assert_status 0
	assert_stderr "ponywrite: new: created"
	assert_content new $'x\n'
	assert_no_litter
}

@test "-C, empty input and empty target: unchanged" {
	old_target t ''
	snapshot t
	run --separate-stderr "$PONYWRITE" -C -v t </dev/null
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
}

@test "-C, empty input and a non-empty target: replaced" {
	old_target t $'x\n'
	run --separate-stderr "$PONYWRITE" -C t </dev/null
	assert_status 0
	assert_regular t
	[ ! -s t ] || fail "t is not empty"
	assert_no_litter
}

@test "-C, same content, -m different: replaced with the new mode" {
	old_target t $'same\n' 0644
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -C -v -m 0600 t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_mode t 600
	assert_content t $'same\n'
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	old_target t $'same\n' 0644
	run --separate-stderr "$PONYWRITE" -C -v -m g+w t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_mode t 664
	assert_no_litter
}

@test "-C, same content, -m equal to the current mode: unchanged" {
	old_target t $'same\n' 0640
	snapshot t
	for m in 0640 640 u+r g-w o= u=rw,g=r,o=; do
		run --separate-stderr "$PONYWRITE" -C -v -m "$m" t < <(printf 'same\n')
		assert_status 0
		assert_stderr "ponywrite: t: unchanged"
		assert_untouched t
	done
	assert_no_litter
}

@test "-C, same content, -o/-g different: replaced with the new owner" {
	require_root
	old_target t $'same\n'
	chown 1000:1000 t
	run --separate-stderr "$PONYWRITE" -C -v -o 1001 t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_owner t 1001 1000
	run --separate-stderr "$PONYWRITE" -C -v -g 1002 t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_owner t 1001 1002
	touch -d '2001-02-03 04:05:06' t
	snapshot t
	run --separate-stderr "$PONYWRITE" -C -v -o 1001 -g 1002 t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
}

@test "-C, large identical file (20 MiB) from a file and from a pipe: unchanged" {
	head -c $((20 << 20)) /dev/urandom > t
	cp t in
	touch -d '2001-02-03 04:05:06' t
	snapshot t
	run --separate-stderr "$PONYWRITE" -C -v t < in
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	run --separate-stderr bash -c 'cat in | "$1" -C -v t' _ "$PONYWRITE"
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	run --separate-stderr "$PONYWRITE" -C -v -i in t
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
}

# Flip the byte at OFFSET of FILE.
flip_byte()
{
	local b
	b=$(dd if="$1" bs=1 skip="$2" count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
	printf "\\$(printf '%03o' $(((b + 1) % 256)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

@test "-C, 20 MiB differing only in the last byte: replaced" {
	size=$((20 << 20))
	head -c "$size" /dev/urandom > t
	cp t in
	flip_byte in $((size - 1))
	! cmp -s t in || fail "flip_byte did not change in"
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" --no-sync -C -v t < in
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	cmp t in
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	assert_no_litter
}

@test "-C, differing in one byte at the start, at 128 KiB boundaries, in the middle: replaced" {
	size=$((1 << 20))
	head -c "$size" /dev/urandom > orig
	for off in 0 1 65535 65536 131071 131072 131073 $((size / 2)) $((size - 2)); do
		cp orig t
		touch -d '2001-02-03 04:05:06' t
		cp orig in
		flip_byte in "$off"
		run --separate-stderr "$PONYWRITE" --no-sync -C -v t < in
		assert_status 0
		[ "$stderr" = "ponywrite: t: replaced" ] ||
		    fail "byte $off differs, but: $stderr"
		cmp t in
	done
	assert_no_litter
}

@test "-C, input a prefix of the target or the target a prefix of the input: replaced" {
	head -c 300000 /dev/urandom > orig
	cp orig t
	head -c 299999 orig > shorter
	run --separate-stderr "$PONYWRITE" -C -v t < shorter
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	cmp t shorter
	cp orig t
	{ cat orig; printf 'x'; } > longer
	run --separate-stderr "$PONYWRITE" -C -v t < longer
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	cmp t longer
	assert_no_litter
}

@test "-C -i T T: unchanged" {
	old_target t $'same\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" -C -v -i t t
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
}

@test "-C in command mode: same output unchanged, different output replaced" {
	old_target t $'same\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" -C -v t echo same
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	run --separate-stderr "$PONYWRITE" -C -v t echo other
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'other\n'
	assert_no_litter
}

@test "-C through a symbolic link: link and file untouched when unchanged" {
	old_target real $'same\n'
	ln -s real link
	snapshot real link
	run --separate-stderr "$PONYWRITE" -C -v link < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: link: unchanged"
	assert_untouched real link
	assert_no_litter
}

@test "-C, a hard-linked target stays shared when unchanged" {
	old_target t $'same\n'
	ln t other
	snapshot t other
	run --separate-stderr "$PONYWRITE" -C t < <(printf 'same\n')
	assert_status 0
	assert_untouched t other
	assert_no_litter
}

@test "-C, unchanged: the old file and its directory are flushed, nothing renamed" {
	require_cmd strace
	old_target t $'same\n'
	snapshot t
	trace_syncs -C t < <(printf 'same\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	assert_untouched t
	[ "$(trace_events)" = "flush:t flush-dir" ] || fail "trace: $(trace_events)"
	# --no-sync: no flush at all.
	trace_syncs -C --no-sync t < <(printf 'same\n')
	[ "$status" -eq 0 ] || fail "status $status: $stderr"
	[ -z "$(trace_events)" ] || fail "--no-sync flushed: $(trace_events)"
	assert_untouched t
	assert_no_litter
}

@test "-C, unchanged, but the flush fails: exit 1, message, untouched" {
	require_cmd strace
	old_target t $'same\n'
	snapshot t
	run --separate-stderr strace -qq -o /dev/null -e inject=fsync:error=EIO \
	    "$PONYWRITE" -C t < <(printf 'same\n')
	assert_status 1
	assert_stderr "ponywrite: t: unchanged, but cannot flush it to disk: $E_EIO"
	assert_untouched t
	assert_no_litter
}

@test "-C with a failing command: untouched, command's status" {
	old_target t $'same\n'
	snapshot t
	run --separate-stderr "$PONYWRITE" -C t sh -c 'echo same; exit 5'
	assert_status 5
	assert_stderr "ponywrite: t: not replaced: sh exited with status 5"
	assert_untouched t
	assert_no_litter
}

@test "-C on a read-only mount: the same content exits 0 without a temporary file; other content fails, untouched" {
	mount_fs ext4 m -F
	old_target m/t $'same\n'
	printf 'same\n' > s1
	printf 'other\n' > s2
	mount -o remount,ro m
	snapshot m/t
	run --separate-stderr "$PONYWRITE" -C -v m/t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: m/t: unchanged"
	printf '%s\0' m/t s1 > list
	run --separate-stderr "$PONYWRITE" -C --batch=list
	assert_status 0
	# Longer, shorter, different, another mode: the mount's error stands.
	local input
	for input in $'same\nmore' sam $'other\n'; do
		run --separate-stderr "$PONYWRITE" -C m/t < <(printf '%s' "$input")
		assert_status 1
		assert_stderr "ponywrite: m: cannot create a temporary file in this directory: Read-only file system"
	done
	run --separate-stderr "$PONYWRITE" -C -m 0600 m/t < <(printf 'same\n')
	assert_status 1
	printf '%s\0' m/t s2 > list
	run --separate-stderr "$PONYWRITE" -C --batch=list
	assert_status 1
	# Without -C nothing is compared.
	run --separate-stderr "$PONYWRITE" m/t < <(printf 'same\n')
	assert_status 1
	assert_untouched m/t
}

@test "-C in a directory the user cannot write: the same content exits 0, other content fails" {
	unpriv_setup
	mkdir d
	old_target d/t $'same\n'
	chmod 0555 d
	snapshot d/t
	run --separate-stderr unpriv "$PONYWRITE" -C d/t < <(printf 'same\n')
	assert_status 0
	assert_quiet
	run --separate-stderr unpriv "$PONYWRITE" -C d/t < <(printf 'new\n')
	assert_status 1
	assert_stderr "ponywrite: d: cannot create a temporary file in this directory: Permission denied"
	assert_untouched d/t
	chmod 0755 d
	assert_no_litter
}

# Issue 55: -C wrote the whole input to a temporary file before it compared,
# so the cron job that regenerates a file on a full disk failed (exit 1,
# 125 in command mode) though nothing had changed.
# full_tmpfs DIR: a 1 MiB tmpfs on DIR holding same (content "same") and
# other ("other"), then filled to the last block.
full_tmpfs()
{
	require_root
	mkdir -p "$1"
	mount -t tmpfs -o size=1m tmpfs "$1" || skip "cannot mount tmpfs"
	PW_MOUNTS+=("$(cd "$1" && pwd -P)")
	printf same > "$1/same"
	printf other > "$1/other"
	dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true
	: > "$1/zero" 2>/dev/null || true
}

@test "-C compares before it writes: unchanged content on a full disk exits 0 from a pipe, a file, a command and a batch" {
	full_tmpfs m
	printf same > in
	snapshot m/same m/other
	run --separate-stderr "$PONYWRITE" -C m/same < <(printf same)
	assert_status 0
	run --separate-stderr "$PONYWRITE" -C -i in m/same
	assert_status 0
	run --separate-stderr "$PONYWRITE" -C m/same printf same
	assert_status 0
	printf other > in2
	printf '%s\0' m/same in m/other in2 > list
	run --separate-stderr "$PONYWRITE" -C --batch=list
	assert_status 0
	assert_quiet
	assert_untouched m/same m/other
	# other content needs the disk: the failure, nothing changed
	run --separate-stderr "$PONYWRITE" -C m/same < <(printf diff)
	assert_status 1
	assert_stderr "ponywrite: m/same: cannot write the new content: No space left on device"
	run --separate-stderr "$PONYWRITE" -C m/same printf diff
	assert_status 125
	assert_untouched m/same m/other
	assert_no_litter m
}

@test "-C in command mode on a read-only mount: the same output exits 0, other output fails" {
	require_root
	mkdir m
	mount -t tmpfs tmpfs m || skip "cannot mount tmpfs"
	PW_MOUNTS+=("$(cd m && pwd -P)")
	printf 'same\n' > m/t
	mount -o remount,ro m || skip "cannot remount read-only"
	snapshot m/t
	run --separate-stderr "$PONYWRITE" --check -C m/t printf 'same\n'
	assert_status 0
	run --separate-stderr "$PONYWRITE" -C m/t printf 'same\n'
	assert_status 0
	assert_quiet
	run --separate-stderr "$PONYWRITE" -C m/t printf 'other\n'
	assert_status 125
	assert_stderr_has "Read-only file system"
	assert_untouched m/t
}

@test "-C writes only what differs: a difference at the start, in the middle, at the end, a longer or shorter input" {
	head -c 300000 /dev/urandom > base
	local v
	for v in start middle end longer shorter; do
		cp base t
		case $v in
		start) { printf X; tail -c +2 base; } > in ;;
		middle) { head -c 150000 base; printf X; tail -c +150002 base; } > in ;;
		end) { head -c 299999 base; printf X; } > in ;;
		longer) { cat base; printf more; } > in ;;
		shorter) head -c 200000 base > in ;;
		esac
		run --separate-stderr "$PONYWRITE" -C t < <(cat in)
		assert_status 0
		cmp -s t in || fail "$v, from a pipe: not the input"
		cp base t
		run --separate-stderr "$PONYWRITE" -C -i in t
		assert_status 0
		cmp -s t in || fail "$v, from a file: not the input"
		cp base t
		run --separate-stderr "$PONYWRITE" -C t cat in
		assert_status 0
		cmp -s t in || fail "$v, from a command: not the input"
	done
	# The target's part that is the same keeps its holes (review: a
	# sparse 40 MiB file came out with 29 MiB of zeros written).
	rm -f t in
	truncate -s 40M t
	printf X | dd of=t bs=1 seek=20000000 conv=notrunc status=none
	cp --sparse=always t in
	printf Y | dd of=in bs=1 seek=30000000 conv=notrunc status=none
	run --separate-stderr "$PONYWRITE" -C t < in
	assert_status 0
	cmp -s t in || fail "sparse: not the input"
	[ "$(du -k t | cut -f1)" -lt 1024 ] || fail "sparse: $(du -k t | cut -f1) KiB used"
	# An input that is the target's first part and ends in its hole
	# (review: the new file ended with the target's last data, exit 0).
	printf A > t
	truncate -s 1M t
	printf B >> t
	head -c 524288 t > in
	cp --sparse=always t base
	run --separate-stderr "$PONYWRITE" -C -i in t
	assert_status 0
	cmp -s t in || fail "ends in a hole, from a file: $(stat -c %s t) bytes"
	cp --sparse=always base t
	run --separate-stderr "$PONYWRITE" -C t < <(cat in)
	assert_status 0
	cmp -s t in || fail "ends in a hole, from a pipe: $(stat -c %s t) bytes"
	assert_no_litter
}

# Issue 55: -C -a copied the old content and the input to a temporary file
# before it compared, so nothing to append failed on a full disk and a
# read-only mount.
@test "-C -a compares before it writes: nothing to append exits 0 on a full disk and a read-only mount; something appended needs the disk" {
	full_tmpfs m
	snapshot m/same
	run --separate-stderr "$PONYWRITE" -C -a m/same < /dev/null
	assert_status 0
	assert_quiet
	: > empty
	run --separate-stderr "$PONYWRITE" -C -a -i empty m/same
	assert_status 0
	run --separate-stderr "$PONYWRITE" -C -a m/same true
	assert_status 0
	run --separate-stderr "$PONYWRITE" -C -a m/same < <(printf more)
	assert_status 1
	assert_stderr "ponywrite: m/same: cannot write the new content: No space left on device"
	run --separate-stderr "$PONYWRITE" -C -a m/same printf more
	assert_status 125
	run --separate-stderr "$PONYWRITE" -C -a -E m/same < /dev/null
	assert_status 1
	assert_stderr "ponywrite: m/same: input is empty, not replaced (-E)"
	mount -o remount,ro m
	run --separate-stderr "$PONYWRITE" -C -a m/same < /dev/null
	assert_status 0
	run --separate-stderr "$PONYWRITE" --check -C -a m/same < /dev/null
	assert_status 0
	run --separate-stderr "$PONYWRITE" -C -a m/same < <(printf more)
	assert_status 1
	assert_untouched m/same
	mount -o remount,rw m
	assert_no_litter m
}

@test "-C -a appends what comes, old content first, holes kept, -v says replaced; a new mode is a change" {
	truncate -s 40M t
	printf X | dd of=t bs=1 seek=20000000 conv=notrunc status=none
	cp --sparse=always t expect
	head -c 300000 /dev/urandom > more
	cat more >> expect
	run --separate-stderr "$PONYWRITE" -C -a -v t < <(cat more)
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	cmp -s t expect || fail "not the old content and the input"
	[ "$(du -k t | cut -f1)" -lt 2048 ] || fail "holes filled: $(du -k t | cut -f1) KiB used"
	printf 'x\n' > s
	chmod 0644 s
	run --separate-stderr "$PONYWRITE" -C -a -v -m 0600 s < /dev/null
	assert_status 0
	assert_stderr "ponywrite: s: replaced"
	assert_mode s 600
	assert_content s $'x\n'
	assert_no_litter
}

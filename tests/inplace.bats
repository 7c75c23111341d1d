#!/usr/bin/env bats
# --in-place (issue 38): the content exchanged into the target's own inode
# (XFS_IOC_EXCHANGE_RANGE), which keeps its links, metadata, bind mounts,
# open descriptors and watchers; refused, before anything is written, where
# the exchange cannot be done.

load helpers

# mount_exchange DIR: an XFS with the exchange feature on DIR.  xfsprogs
# before 6.10 cannot make one (mkfs.xfs -i exchange=1): its superblock's
# incompatible feature bit 0x40 (XFS_SB_FEAT_INCOMPAT_EXCHRANGE) is set
# with xfs_db instead (write -d: without the verifier, which does not know
# the bit; the CRC is recomputed).  Skips only on a kernel before 6.10;
# from 6.10 on, an exchange (DRY_RUN, without ponywrite) must work.
mount_exchange()
{
	require_root
	require_cmd mkfs.xfs xfs_db losetup mount python3
	local dir=$1 img="$BATS_TEST_TMPDIR/xfs-exchange.img" f v
	v=$(uname -r)
	v=${v%%[!0-9.]*}
	[ "$(printf '%s\n' 6.10 "$v" | sort -V | head -n 1)" = 6.10 ] ||
	    skip "Linux $v: the exchange of file contents came in 6.10"
	truncate -s 320M "$img"
	if ! mkfs.xfs -q -i exchange=1 "$img" >/dev/null 2>&1; then
		mkfs.xfs -q -f "$img" >/dev/null 2>&1 || fail "mkfs.xfs failed"
		f=$(xfs_db -c 'sb 0' -c 'print features_incompat' "$img" | awk '{ print $3 }')
		xfs_db -x -c 'sb 0' -c "write -d features_incompat $(printf '%#x' $((f | 0x40)))" \
		    "$img" >/dev/null || fail "xfs_db cannot set the exchange feature"
	fi
	mkdir -p "$dir"
	mount -o loop "$img" "$dir" 2>/dev/null ||
	    skip "cannot loop-mount XFS (with the exchange feature)"
	PW_MOUNTS+=("$(cd "$dir" && pwd -P)")
	# XFS_IOC_EXCHANGE_RANGE, TO_EOF | DRY_RUN, from an O_TMPFILE file
	echo probe > "$dir/.probe"
	python3 -c 'import fcntl, os, struct, sys
d = sys.argv[1]
a = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
b = os.open(d + "/.probe", os.O_RDWR)
fcntl.ioctl(b, 0x40285881, struct.pack("iIQQQQ", a, 0, 0, 0, 0, 5))' "$dir" ||
	    fail "no exchange on $v"
	rm "$dir/.probe"
}

teardown()
{
	chattr -i -a "$WORK/x/t" 2>/dev/null
	pw_teardown
}

# linked_target: x/t, "old", with a second name x/t2, mode 0640, owner
# 1000:1000, attribute user.k; its inode number in ino.
linked_target()
{
	echo old > x/t
	ln x/t x/t2
	chmod 0640 x/t
	chown 1000:1000 x/t
	setfattr -n user.k -v kept x/t
	ino=$(inode x/t)
}

@test "--in-place: the target keeps its inode, its other names, its mode, owner and attributes" {
	mount_exchange x
	linked_target
	echo new | "$PONYWRITE" --in-place x/t
	assert_content x/t $'new\n'
	assert_content x/t2 $'new\n'
	[ "$(inode x/t)" = "$ino" ] || fail "a new inode"
	[ "$(stat -c %h x/t)" = 2 ] || fail "links: $(stat -c %h x/t)"
	assert_mode x/t 640
	assert_owner x/t 1000 1000
	[ "$(getfattr -n user.k --only-values x/t)" = kept ] || fail "attribute lost"
	# larger, then smaller, then empty
	head -c 5000000 /dev/urandom > big
	"$PONYWRITE" --in-place -i big x/t
	cmp big x/t
	echo s | "$PONYWRITE" --in-place x/t2
	assert_content x/t $'s\n'
	: | "$PONYWRITE" --in-place x/t
	[ ! -s x/t2 ] || fail "not emptied"
	assert_no_litter x
}

@test "--in-place: a file bind-mounted elsewhere, a descriptor open on it and an inotify watcher see the new content" {
	mount_exchange x
	echo old > x/t
	echo other > on
	mount --bind x/t on
	PW_MOUNTS+=("$WORK/on")
	exec 7< x/t
	require_cmd inotifywait
	inotifywait -q -m -e modify,close_write x/t > events 2>/dev/null &
	watcher=$!
	sleep 0.5
	echo new | "$PONYWRITE" --in-place x/t
	assert_content on $'new\n'
	[ "$(cat <&7)" = new ] || fail "the open descriptor reads the old content"
	exec 7<&-
	sleep 0.3
	kill "$watcher"
	grep -q MODIFY events || fail "inotify: $(cat events)"
	# through the bind mount itself the exchange cannot be done
	snapshot on
	run --separate-stderr "$PONYWRITE" --in-place on < /dev/null
	assert_status 1
	assert_stderr "ponywrite: on: cannot be replaced in place: it is mounted on its own (a bind mount); replace the file it mounts"
	assert_untouched on
	assert_no_litter x
}

@test "--in-place with -C, --print-changed, -a, -E, -l and a command keeps their meaning" {
	mount_exchange x
	echo old > x/t
	ino=$(inode x/t)
	run --separate-stderr "$PONYWRITE" --in-place -C --print-changed x/t <<<old
	assert_status 0
	[ -z "$output" ] || fail "unchanged, printed: $output"
	run --separate-stderr "$PONYWRITE" --in-place -C --print-changed x/t <<<new
	assert_status 0
	[ "$output" = x/t ] || fail "changed, printed: $output"
	echo more | "$PONYWRITE" --in-place -a x/t
	assert_content x/t $'new\nmore\n'
	snapshot x/t
	run --separate-stderr "$PONYWRITE" --in-place -E x/t < /dev/null
	assert_status 1
	assert_stderr "ponywrite: x/t: input is empty, not replaced (-E)"
	run --separate-stderr "$PONYWRITE" --in-place x/t sh -c 'echo half; exit 3'
	assert_status 3
	assert_untouched x/t
	"$PONYWRITE" --in-place -l x/t echo cmd
	assert_content x/t $'cmd\n'
	[ "$(inode x/t)" = "$ino" ] || fail "a new inode"
	assert_no_litter x
}

# Issue 55: --in-place -C opened the target for writing before it compared,
# so unchanged content failed where nothing could be written.
@test "--in-place -C writes nothing while unchanged: a read-only mount, an immutable file, a file and a directory a user cannot write; a change fails there, untouched" {
	mount_exchange x
	require_nobody
	echo old > x/t
	echo old > x/imm
	chattr +i x/imm
	mkdir x/ro
	echo old > x/ro/t
	chown nobody:nogroup x/ro/t
	chmod 0555 x/ro
	echo old > x/roots
	chmod 0644 x/roots
	chown nobody:nogroup x
	snapshot x/t x/imm x/ro/t x/roots
	run --separate-stderr "$PONYWRITE" --in-place -C x/imm <<<old
	assert_status 0
	run --separate-stderr "$PONYWRITE" --in-place -C x/imm <<<new
	assert_status 1
	assert_stderr "ponywrite: x/imm: is immutable (chattr +i); cannot be replaced"
	chattr -i x/imm
	run --separate-stderr as_nobody "$PONYWRITE" --in-place -C x/roots <<<old
	assert_status 0
	assert_quiet
	run --separate-stderr as_nobody "$PONYWRITE" --in-place -C x/roots <<<new
	assert_status 1
	assert_stderr "ponywrite: x/roots: Permission denied"
	run --separate-stderr as_nobody "$PONYWRITE" --in-place -C x/ro/t <<<old
	assert_status 0
	run --separate-stderr as_nobody "$PONYWRITE" --in-place -C x/ro/t <<<new
	assert_status 1
	assert_stderr "ponywrite: x/ro: cannot create a temporary file in this directory: Permission denied"
	mount -o remount,ro x
	# stdin, a command, -a with nothing to append (and its -l), -l
	run --separate-stderr "$PONYWRITE" --in-place -C x/t <<<old
	assert_status 0
	assert_quiet
	run --separate-stderr "$PONYWRITE" --in-place -C x/t echo old
	assert_status 0
	run --separate-stderr "$PONYWRITE" --in-place -C -a x/t < /dev/null
	assert_status 0
	run --separate-stderr "$PONYWRITE" --in-place -C -l x/t <<<old
	assert_status 0
	run --separate-stderr "$PONYWRITE" --in-place -C x/t <<<new
	assert_status 1
	assert_stderr "ponywrite: x/t: Read-only file system"
	run --separate-stderr "$PONYWRITE" --in-place -C -a x/t <<<more
	assert_status 1
	run --separate-stderr "$PONYWRITE" --in-place -C x/t echo new
	assert_status 125
	mount -o remount,rw x
	assert_untouched x/t x/imm x/ro/t x/roots
	chmod 0755 x/ro
	assert_no_litter x
}

@test "--in-place -C -l: a change is exchanged into the same inode while the lock is held" {
	mount_exchange x
	echo old > x/t
	ino=$(inode x/t)
	# the command runs once the target is read and locked: another -l waits
	run --separate-stderr "$PONYWRITE" --in-place -C -l x/t sh -c \
	    'echo new; sleep 0.3; "$0" -l -w 0 x/t echo other 2>err; echo $? > st' "$PONYWRITE"
	assert_status 0
	assert_content x/t $'new\n'
	[ "$(inode x/t)" = "$ino" ] || fail "a new inode"
	[ "$(cat st)" != 0 ] || fail "the lock was not held: $(cat err)"
	echo more | "$PONYWRITE" --in-place -C -a x/t
	assert_content x/t $'new\nmore\n'
	[ "$(inode x/t)" = "$ino" ] || fail "-a: a new inode"
	run --separate-stderr "$PONYWRITE" --in-place -C -a -E x/t < /dev/null
	assert_status 1
	assert_stderr "ponywrite: x/t: input is empty, not replaced (-E)"
	assert_no_litter x
}

@test "--in-place where the exchange cannot be done (ext4, tmpfs, XFS without the feature): refused before the input is read" {
	mount_fs ext4 e
	mount_fs xfs p
	mkdir -p t
	mount -t tmpfs tmpfs t
	PW_MOUNTS+=("$(cd t && pwd -P)")
	for d in e p t; do
		echo old > "$d/f"
		snapshot "$d/f"
		# the input is not read: a command would not run
		run --separate-stderr "$PONYWRITE" --in-place "$d/f" touch ran
		assert_status 125
		assert_stderr "ponywrite: $d/f: cannot be replaced in place: its file system cannot exchange file contents (XFS with the exchange feature, Linux 6.10 or later); without --in-place it is replaced by a new file; target not replaced"
		[ ! -e ran ] || fail "$d: the command ran"
		# -C: refused as surely where the file system is not XFS; on
		# XFS without the feature, only a change needs the exchange
		run --separate-stderr "$PONYWRITE" --in-place -C "$d/f" <<<old
		if [ "$d" = p ]; then
			assert_status 0
			run --separate-stderr "$PONYWRITE" --in-place -C "$d/f" <<<new
		fi
		assert_status 1
		assert_stderr "ponywrite: $d/f: cannot be replaced in place: its file system cannot exchange file contents (XFS with the exchange feature, Linux 6.10 or later); without --in-place it is replaced by a new file"
		assert_untouched "$d/f"
		assert_no_litter "$d"
	done
}

@test "--in-place refuses a missing target, one it cannot write, an immutable or append-only one, and the options that would change its metadata or a link" {
	mount_exchange x
	run --separate-stderr "$PONYWRITE" --in-place x/none <<<new
	assert_status 1
	assert_stderr "ponywrite: x/none: does not exist; --in-place exchanges the content of an existing file"
	[ ! -e x/none ] || fail "created"
	echo old > x/t
	for a in i a; do
		chattr "+$a" x/t
		snapshot x/t
		run --separate-stderr "$PONYWRITE" --in-place x/t <<<new
		assert_status 1
		[ "$a" = i ] && w="immutable (chattr +i)" || w="append-only (chattr +a)"
		assert_stderr "ponywrite: x/t: is $w; cannot be replaced"
		chattr "-$a" x/t
		assert_untouched x/t
	done
	for o in "-m 600" "-o 0" "-g 0" "-P" "--check"; do
		# shellcheck disable=SC2086 # the option and its argument
		run --separate-stderr "$PONYWRITE" --in-place $o x/t <<<new
		assert_status 2
		assert_stderr "ponywrite: ${o%% *} cannot be used with --in-place
Try 'ponywrite --help' for more information."
	done
	for f in "-t x" "--batch=-"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$PONYWRITE" --in-place $f < /dev/null
		assert_status 2
		assert_stderr "ponywrite: --in-place cannot be used with ${f%%[ =]*}
Try 'ponywrite --help' for more information."
	done
	assert_untouched x/t
	assert_no_litter x
}

@test "--in-place as an ordinary user: its own file; not one it cannot write; not a set-ID file, whose bits the exchange would clear" {
	mount_exchange x
	require_nobody
	chown nobody:nogroup x
	echo old > x/mine
	chown nobody:nogroup x/mine
	echo root > x/roots
	chmod 644 x/roots
	echo prog > x/setid
	chown nobody:nogroup x/setid
	chmod 4755 x/setid
	snapshot x/roots x/setid
	echo new | as_nobody "$PONYWRITE" --in-place x/mine
	assert_content x/mine $'new\n'
	run --separate-stderr as_nobody "$PONYWRITE" --in-place x/roots <<<new
	assert_status 1
	assert_stderr "ponywrite: x/roots: Permission denied"
	run --separate-stderr as_nobody "$PONYWRITE" --in-place x/setid <<<new
	assert_status 1
	assert_stderr "ponywrite: x/setid: is set-user-ID or set-group-ID, which exchanging its content would clear; replace it without --in-place"
	assert_untouched x/roots x/setid
	# root keeps the bits (CAP_FSETID)
	echo new | "$PONYWRITE" --in-place x/setid
	assert_content x/setid $'new\n'
	assert_mode x/setid 4755
	assert_no_litter x
}

# Issue 52: the exchange removes security.capability as it clears set-ID
# bits, even for root; refused, not dropped silently.
@test "--in-place refuses a file with file capabilities, which the exchange would remove" {
	mount_exchange x
	require_cmd setcap getcap
	echo old > x/ping
	setcap cap_net_raw+ep x/ping
	echo new > new
	snapshot x/ping
	run --separate-stderr "$PONYWRITE" --in-place -i new x/ping
	assert_status 1
	assert_stderr "ponywrite: x/ping: has file capabilities, which exchanging its content would remove, even for root; replace it without --in-place"
	assert_untouched x/ping
	[[ $(getcap x/ping) == *cap_net_raw* ]] || fail "capabilities lost: $(getcap x/ping)"
	assert_no_litter x
}

@test "--in-place, the disk full: the target untouched" {
	mount_exchange x
	echo old > x/t
	snapshot x/t
	run --separate-stderr bash -c 'head -c 400M /dev/zero | "$1" --in-place x/t' sh "$PONYWRITE"
	assert_status 1
	assert_stderr_has "No space left on device"
	assert_untouched x/t
	[ "$(df --output=used -B1M x | tail -n 1)" -lt 100 ] || fail "space not given back: $(df x)"
}

@test "--in-place -b: the old content kept as TARGET~, with the old file's mode, owner and attributes; an old TARGET~ replaced" {
	mount_exchange x
	linked_target
	echo previous > 'x/t~'
	echo new | "$PONYWRITE" --in-place -b x/t
	assert_content x/t $'new\n'
	assert_content x/t2 $'new\n'
	[ "$(inode x/t)" = "$ino" ] || fail "a new inode"
	assert_content 'x/t~' $'old\n'
	assert_mode 'x/t~' 640
	assert_owner 'x/t~' 1000 1000
	[ "$(getfattr -n user.k --only-values 'x/t~')" = kept ] || fail "attribute not kept"
	[ "$(stat -c %h 'x/t~')" = 1 ] || fail "the backup is a link to the target"
	# -C: unchanged, no backup made
	run --separate-stderr "$PONYWRITE" --in-place -b -C x/t <<<new
	assert_status 0
	assert_content 'x/t~' $'old\n'
	assert_no_litter x
}

@test "--in-place -b as an ordinary user: the backup is the user's, never more open than the old file" {
	mount_exchange x
	require_nobody
	chown nobody:nogroup x
	echo old > x/mine
	chown nobody:nogroup x/mine
	chmod 0600 x/mine
	echo new | as_nobody "$PONYWRITE" --in-place -b x/mine
	assert_content x/mine $'new\n'
	assert_content 'x/mine~' $'old\n'
	assert_mode 'x/mine~' 600
	assert_owner 'x/mine~' "$(id -u nobody)" "$(getent group nogroup | cut -d: -f3)"
	assert_no_litter x
}

# Issue 52: a user writing another user's file keeps that file's owner (the
# exchange does not change it); the backup is a new file, which is the
# caller's, and 0600 since its group and others are not the old file's,
# without the ACL the directory's default would give it.
@test "--in-place -b by a user on another user's writable file: the backup stays the caller's, mode 0600" {
	mount_exchange x
	require_nobody
	mkdir x/d
	chown nobody:nogroup x/d
	require_cmd setfacl getfacl
	setfacl -d -m u:1000:rw x/d
	echo old > x/d/t
	chown daemon:daemon x/d/t
	chmod 0666 x/d/t
	ino=$(inode x/d/t)
	echo new > new
	run --separate-stderr as_nobody "$PONYWRITE" --in-place -b -i new x/d/t
	assert_status 0
	assert_quiet
	assert_content x/d/t $'new\n'
	assert_owner x/d/t "$(id -u daemon)" "$(getent group daemon | cut -d: -f3)"
	assert_mode x/d/t 666
	[ "$(inode x/d/t)" = "$ino" ] || fail "a new inode"
	assert_content 'x/d/t~' $'old\n'
	assert_owner 'x/d/t~' "$(id -u nobody)" "$(getent group nogroup | cut -d: -f3)"
	assert_mode 'x/d/t~' 600
	! getfacl -cn 'x/d/t~' | grep -q '^user:1000' || fail "the default ACL on the backup: $(getfacl -c 'x/d/t~')"
	[ "$(ls -A x/d)" = $'t\nt~' ] || fail "x/d holds: $(ls -A x/d)"
	assert_no_litter x
}

@test "--in-place: the flush after the exchange fails: replaced, but exit 3, said so" {
	require_cmd strace
	mount_exchange x
	echo old > x/t
	run --separate-stderr strace -f -qq -o /dev/null -e inject=fsync:error=EIO \
	    "$PONYWRITE" --in-place x/t <<<new
	assert_status 3
	assert_stderr "ponywrite: x/t: replaced in place, but cannot flush it to disk: Input/output error"
	assert_content x/t $'new\n'
	assert_no_litter x
}

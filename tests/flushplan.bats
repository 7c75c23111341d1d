#!/usr/bin/env bats
# The flush plan comes from an allow-list (fsplans[] in ponywrite.c, the
# table in the man page): the cheap sequences only for a file-system type
# whose every super option the block-level test proved, the safe sequence
# (fsync of each new file before its rename, of the directory after)
# everywhere else.  Each test mounts the file system it names and reads the
# system calls: a type is not a proof, its mount options and its transport
# decide.

load helpers
load features_helpers

# on_fs DIR: source files in s/, the directory DIR/d with an old t, a, b.
on_fs()
{
	mkdir -p "$1/d" s
	echo old > "$1/d/t"
	echo old > "$1/d/a"
	printf 'new a\n' > s/a
	printf 'new b\n' > s/b
}

# expect PLAN-WORD DIR ONE MANY: plan_of DIR says PLAN-WORD; one file
# replaced with -i gives the plan ONE, two with -t the plan MANY.
expect()
{
	local word=$1 dir=$2
	[ "$(plan_of "$dir")" = "$word" ] ||
	    fail "plan_of $dir: $(plan_of "$dir"), expected $word"
	plan -i s/a "$dir/d/t"
	assert_status 0
	[ "$PLAN" = "$3" ] || fail "one file on $dir: '$PLAN', expected '$3' ($TRACE)"
	plan -t "$dir/d" s/a s/b
	assert_status 0
	[ "$PLAN" = "$4" ] || fail "-t on $dir: '$PLAN', expected '$4' ($TRACE)"
	assert_content "$dir/d/t" $'new a\n'
	assert_content "$dir/d/b" $'new b\n'
	assert_no_litter "$dir/d"
}

@test "ext4 with a journal, default options: data waited for, one directory flush" {
	require_ext4_sysfs
	mount_fs ext4 m -F
	on_fs m
	expect ordered m "wait rename fsync:m/d" "start*2 wait*2 rename*2 fsync:m/d"
}

@test "ext4 journal_async_commit (not proven): each new file flushed" {
	MOUNT_OPTS=data=writeback,journal_async_commit mount_fs ext4 m -F
	on_fs m
	expect safe m "fsync-temp rename fsync:m/d" "start*2 fsync-temp*2 rename*2 fsync:m/d"
}

@test "ext4 with an option the allow-list does not name (nobarrier): each new file flushed" {
	MOUNT_OPTS=nobarrier mount_fs ext4 m -F
	on_fs m
	expect safe m "fsync-temp rename fsync:m/d" "start*2 fsync-temp*2 rename*2 fsync:m/d"
}

@test "ext4 commit= and errors= (proven): the cheap sequence stays" {
	require_ext4_sysfs
	MOUNT_OPTS=commit=30,errors=remount-ro mount_fs ext4 m -F
	on_fs m
	expect ordered m "wait rename fsync:m/d" "start*2 wait*2 rename*2 fsync:m/d"
}

# The second directory flush makes the removal of the old file's hidden link
# durable (see the no-journal test below).  A batch's new files reach the
# disk by one syncfs, whatever their number (issue 53: it was an fsync a
# file; block level: tests/blockcrash, profile ext2, batch scenarios).
@test "ext2 (no journal): one file flushed; a batch's new files by one syncfs, then its directories" {
	mount_fs ext2 m -F
	on_fs m
	expect nojournal m "fsync-temp rename fsync:m/d*2" "start*2 syncfs fsync:m/d rename*2 fsync:m/d*2"
	# two directories: one syncfs after the renames, one after the links go;
	# each syncfs followed by a directory's fsync, whose flush covers what
	# syncfs writes after its own (inodes and directories, without a journal)
	mkdir m/e
	echo old > m/e/t
	plan --batch=<(printf '%s\0' m/d/t s/b m/e/t s/a)
	assert_status 0
	[ "$PLAN" = "start*2 syncfs fsync:m/d rename*2 syncfs fsync:m/d syncfs fsync:m/d" ] || fail "two directories: '$PLAN'"
	assert_content m/e/t $'new a\n'
	assert_no_litter m/d
	assert_no_litter m/e
	# where syncfs cannot report errors (before Linux 5.8): a flush a file
	require_uname26
	local real=$PONYWRITE
	PONYWRITE=setarch plan --uname-2.6 "$real" -t m/d s/a s/b
	assert_status 0
	[ "$PLAN" = "start*2 fsync-temp*2 rename*2 fsync:m/d*2" ] || fail "before 5.8: '$PLAN'"
}

# link_trace [--inject SPEC] ARG...: ponywrite ARG... under strace (SPEC:
# a fault to inject, as strace's -e inject=SPEC); LINKS holds its links,
# renames, unlinks and flushes as words (link:NAME rename:NAME unlink flush).
link_trace()
{
	require_cmd strace
	local log="$BATS_TEST_TMPDIR/link.log"
	local -a inject=()
	[ "$1" = --inject ] && { inject=(-e "inject=$2"); shift 2; }
	status=0
	strace -f -qq -o "$log" -e trace=linkat,renameat,renameat2,unlinkat,fsync,fdatasync,syncfs,sync \
	    "${inject[@]}" "$PONYWRITE" "$@" 2>"$BATS_TEST_TMPDIR/link.err" || status=$?
	LINKS=$(sed -E 's/^[0-9]+ +//' "$log" | awk '
	/^linkat\(/ { split($0, a, "\""); print "link:" a[2]; next }
	/^rename/ { split($0, a, "\""); print "rename:" a[4]; next }
	/^unlinkat\(/ { print "unlink"; next }
	/^sync\(/ { print "sync"; next }
	/sync/ { print "flush" }' | paste -sd ' ')
}

@test "no journal (ext2, ext4 ^has_journal): the old file stays linked until the directory is flushed, --no-sync too" {
	local fs
	for fs in ext2 ext4-nojournal; do
		if [ "$fs" = ext2 ]; then
			mount_fs ext2 "$fs" -F
		else
			mount_fs ext4 "$fs" -F -O ^has_journal
		fi
		on_fs "$fs"
		# One file: a power cut must not free the old inode before the new
		# name is on disk (fsck would remove the name: target missing).
		link_trace -i s/a "$fs/d/t"
		assert_status 0
		[ "$LINKS" = "flush link:t rename:t flush unlink flush" ] ||
		    fail "$fs, one file: '$LINKS'"
		assert_content "$fs/d/t" $'new a\n'
		# A batch: every old file linked before the first rename, the
		# links removed after the directory flush.
		link_trace -t "$fs/d" s/a s/b
		assert_status 0
		[ "$LINKS" = "link:a flush flush rename:a rename:b flush unlink flush" ] ||
		    fail "$fs, -t: '$LINKS'"
		assert_content "$fs/d/a" $'new a\n'
		assert_no_litter "$fs/d"
		# --no-sync too: the link may go only once the new name is on
		# disk, or a power cut can leave the target zero-filled.
		link_trace --no-sync -i s/b "$fs/d/t"
		assert_status 0
		[ "$LINKS" = "flush link:t rename:t flush unlink flush" ] ||
		    fail "$fs, --no-sync: '$LINKS'"
		link_trace --no-sync -t "$fs/d" s/a s/b
		assert_status 0
		[ "$LINKS" = "link:a link:b flush flush rename:a rename:b flush unlink unlink flush" ] ||
		    fail "$fs, --no-sync -t: '$LINKS'"
		assert_no_litter "$fs/d"
	done
}

# overlay_on FS DIR: an overlay on DIR whose upper layer is on the mounted FS
# (its layers in FS/layers).
overlay_on()
{
	mkdir -p "$1/layers/lower" "$1/layers/upper" "$1/layers/work" "$2"
	mount -t overlay overlay -o "lowerdir=$1/layers/lower,upperdir=$1/layers/upper,workdir=$1/layers/work" "$2" ||
	    skip "cannot mount overlayfs"
	PW_MOUNTS+=("$(cd "$2" && pwd -P)")
}

# Issue 53: a container's writable layer on a disk without a journal got the
# safe sequence without the link, and a crash could lose the target's name
# (block level: tests/blockcrash, profiles ext2-overlay and
# ext4-nojournal-overlay).
@test "overlayfs: the plan of the file system that holds its upper layer: without a journal there, the old file stays linked; where it cannot be found, too" {
	require_root
	mount_fs ext2 e2 -F
	overlay_on "$PWD/e2" o2
	on_fs o2
	[ "$(plan_of o2)" = nojournal ] || fail "plan_of o2: $(plan_of o2)"
	link_trace -i s/a o2/d/t
	assert_status 0
	[ "$LINKS" = "flush link:t rename:t flush unlink flush" ] || fail "over ext2, one file: '$LINKS'"
	link_trace -t o2/d s/a s/b
	assert_status 0
	[ "$LINKS" = "flush flush link:a rename:a rename:b flush unlink flush" ] || fail "over ext2, -t: '$LINKS'"
	assert_content o2/d/a $'new a\n'
	assert_no_litter o2/d
	# Over ext4 with a journal: the safe sequence, no link.
	mount_fs ext4 e4 -F
	overlay_on "$PWD/e4" o4
	on_fs o4
	[ "$(plan_of o4)" = safe ] || fail "plan_of o4: $(plan_of o4)"
	link_trace -i s/a o4/d/t
	assert_status 0
	[ "$LINKS" = "flush rename:t flush" ] || fail "over ext4: '$LINKS'"
	# The upper layer out of sight (as from a container): what holds it
	# cannot be known, so the old file stays linked, over ext2 (the safe
	# sequence could lose the name there) and over ext4 alike.
	mv e2/layers e2/moved
	[ "$(plan_of o2)" = nojournal ] || fail "plan_of o2, its upper layer moved: $(plan_of o2)"
	link_trace -i s/b o2/d/t
	assert_status 0
	[ "$LINKS" = "flush link:t rename:t flush unlink flush" ] || fail "over ext2, upper moved: '$LINKS'"
	assert_content o2/d/t $'new b\n'
	assert_no_litter o2/d
	mv e4/layers e4/moved
	run "$PONYWRITE" --check -i s/a o4/d/t
	assert_status 0
	[[ $output == *$'\tfsync-new,link-old,rename,fsync-dir,unlink-old\t'* ]] ||
	    fail "--check, over ext4, upper moved: $output"
	# a file of the lower layer is copied up by the link: replaced all the same
	echo lower > e4/moved/lower/l
	link_trace -i s/a o4/l
	assert_status 0
	[ "$LINKS" = "flush link:l rename:l flush unlink flush" ] || fail "a lower file: '$LINKS'"
	assert_content o4/l $'new a\n'
	[ -z "$(find e4/moved/upper -maxdepth 1 -type c)" ] || fail "a whiteout: $(ls -lA e4/moved/upper)"
	assert_no_litter o4
	# a full disk refuses that link: the copy of a lower layer's file
	# (which needs no link); the replace goes on without
	echo lower2 > e4/moved/lower/l2
	link_trace --inject linkat:error=ENOSPC -i s/b o4/l2
	assert_status 0
	assert_content o4/l2 $'new b\n'
	assert_no_litter o4
	# that link refused (an I/O error): nothing replaced, the reason said
	link_trace --inject linkat:error=EIO -i s/b o4/l
	assert_status 1
	assert_content o4/l $'new a\n'
	grep -q "o4/l: cannot keep the old file linked until the directory is on disk, which this file system (overlayfs, over one that may have no journal) needs" \
	    "$BATS_TEST_TMPDIR/link.err" || fail "message: $(cat "$BATS_TEST_TMPDIR/link.err")"
	assert_no_litter o4
}

# The CI machine's root is such a file system (ext4, no journal, discard,
# resv_strict, resuid=): outside the allow-list, it once got the safe
# sequence without the link, and a power cut could lose the target.
@test "ext4 without a journal, options the allow-list does not name (discard, resuid=): the old file stays linked all the same" {
	require_ext4_sysfs
	MOUNT_OPTS=discard,resuid=65534 mount_fs ext4 m -F -O ^has_journal
	on_fs m
	[ "$(plan_of m)" = nojournal ] || fail "plan_of m: $(plan_of m)"
	link_trace -i s/a m/d/t
	assert_status 0
	[ "$LINKS" = "flush link:t rename:t flush unlink flush" ] || fail "one file: '$LINKS'"
	link_trace --no-sync -t m/d s/a s/b
	assert_status 0
	[ "$LINKS" = "link:a flush flush rename:a rename:b flush unlink flush" ] ||
	    fail "--no-sync -t: '$LINKS'"
	assert_content m/d/a $'new a\n'
	assert_no_litter m/d
}

@test "no journal: when the directory flush after the renames fails, the old file stays linked and the message says where" {
	require_cmd strace
	mount_fs ext2 m -F
	on_fs m
	# the flushes of one file: the new file, then the directory (fails)
	run --separate-stderr strace -qq -o /dev/null -e trace=fsync \
	    -e inject=fsync:error=EIO:when=2 "$PONYWRITE" -i s/a m/d/t
	assert_status 3
	assert_content m/d/t $'new a\n'
	assert_stderr_has "the old content stays linked as m/d/.t~."
	old=$(find m/d -name '.t~.*')
	[ -n "$old" ] || fail "no hidden link kept: $(ls -A m/d)"
	assert_content "$old" $'old\n'
	rm -f "$old"
	# a batch: one syncfs and a directory's fsync for the new files, then
	# the directory (fails)
	run --separate-stderr strace -qq -o /dev/null -e trace=fsync \
	    -e inject=fsync:error=EIO:when=2 "$PONYWRITE" -t m/d s/a s/b
	assert_status 3
	assert_content m/d/a $'new a\n'
	assert_stderr_has "the old content stays linked as m/d/.a~."
	old=$(find m/d -name '.a~.*')
	[ -n "$old" ] || fail "no hidden link kept: $(ls -A m/d)"
	assert_content "$old" $'old\n'
}

# Issue 53: the link that keeps the old file on a file system without a
# journal was made or given up silently; without it a crash can lose the
# name there, so a link that cannot be made fails the run before the rename.
@test "no journal: the old file's link cannot be made (EIO, ENOSPC, EDQUOT, EMLINK, EPERM): exit 1, nothing replaced, said why" {
	require_cmd strace
	mount_fs ext2 m -F
	on_fs m
	printf 'new t\n' > s/t
	snapshot m/d/t m/d/a
	for e in EIO ENOSPC EDQUOT EMLINK EPERM; do
		run --separate-stderr strace -qq -o /dev/null \
		    -e inject=linkat:error=$e "$PONYWRITE" -i s/a m/d/t
		assert_status 1
		assert_stderr_has "ponywrite: m/d/t: cannot keep the old file linked until the directory is on disk, which this file system (no journal) needs so that a crash cannot lose the name: "
		assert_untouched m/d/t
		assert_no_litter m/d
		# a batch: the second target's link fails, nothing is replaced
		run --separate-stderr strace -qq -o /dev/null \
		    -e inject=linkat:error=$e:when=2 "$PONYWRITE" -t m/d s/t s/a
		assert_status 1
		assert_stderr_has "ponywrite: m/d/a: cannot keep the old file linked"
		assert_untouched m/d/t m/d/a
		assert_no_litter m/d
	done
	# protected_hardlinks, for real: nobody may replace root's file in its
	# own directory, but not link it
	require_nobody
	[ "$(cat /proc/sys/fs/protected_hardlinks)" = 1 ] || skip "fs.protected_hardlinks is not 1"
	chown nobody:nogroup m/d
	chmod 0755 s
	chmod 0644 s/a
	run --separate-stderr as_nobody "$PONYWRITE" -o nobody:nogroup -i s/a m/d/t
	assert_status 1
	assert_stderr "ponywrite: m/d/t: cannot keep the old file linked until the directory is on disk, which this file system (no journal) needs so that a crash cannot lose the name: Operation not permitted"
	assert_untouched m/d/t
	assert_no_litter m/d
}

# What the kernel's rules tell of that link (fs.protected_hardlinks, as its
# may_linkat decides, by CAP_FOWNER) is found before a command runs or the
# input is read, and --check says it with the run's message and status.
# LINK_MAX only the link tells (fpathconf guesses it: 127 on overlayfs,
# whose kernel limit is its upper file system's).
@test "no journal: a kept link that protected_hardlinks refuses is found before the command runs, and by --check" {
	require_nobody
	[ "$(cat /proc/sys/fs/protected_hardlinks)" = 1 ] || skip "fs.protected_hardlinks is not 1"
	require_cmd setpriv
	mount_fs ext2 m -F
	on_fs m
	# nobody may replace root's file in its own directory, but not link
	# a file it cannot write, nor one that is set-user-ID or executable
	# set-group-ID (as the kernel refuses: ln)
	chown nobody:nogroup m/d
	chmod 0755 s . m
	chmod 0644 s/a
	local msg="ponywrite: m/d/t: cannot keep the old file linked until the directory is on disk, which this file system (no journal) needs so that a crash cannot lose the name: Operation not permitted"
	local mode
	for mode in 0644 2777 4777; do
		chmod "$mode" m/d/t
		! as_nobody ln m/d/t m/d/probe 2>/dev/null || fail "mode $mode: the kernel links it"
		snapshot m/d/t
		run --separate-stderr as_nobody "$PONYWRITE" --check -o nobody:nogroup -i s/a m/d/t
		assert_status 1
		assert_stderr "$msg"
		run --separate-stderr as_nobody "$PONYWRITE" -o nobody:nogroup m/d/t sh -c 'touch m/d/ran; echo new'
		assert_status 125
		assert_stderr "$msg; target not replaced"
		[ ! -e m/d/ran ] || fail "mode $mode: the command ran"
		assert_untouched m/d/t
		assert_no_litter m/d
	done
	# -C: only a change needs the link (and the owner nobody cannot keep)
	run --separate-stderr as_nobody "$PONYWRITE" -C m/d/t < <(echo old)
	assert_status 0
	run --separate-stderr as_nobody "$PONYWRITE" --check -C -i s/a m/d/t
	assert_stderr_has "ponywrite: m/d/t: a run fails unless nothing changes (-C): cannot keep the old file linked: Operation not permitted"
	assert_untouched m/d/t
	# CAP_FOWNER decides, not the user ID: nobody with it links root's file
	# (and replaces it); root without it may not link nobody's set-user-ID
	# file, and --check says so
	local fowner=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+fowner --ambient-caps=+fowner)
	"${fowner[@]}" true 2>/dev/null || skip "setpriv cannot give an ambient capability"
	"${fowner[@]}" ln m/d/t m/d/probe || fail "the kernel refuses nobody with CAP_FOWNER"
	rm m/d/probe
	run --separate-stderr "${fowner[@]}" "$PONYWRITE" --check -o nobody:nogroup -i s/a m/d/t
	assert_status 0
	run --separate-stderr "${fowner[@]}" "$PONYWRITE" -o nobody:nogroup -i s/a m/d/t
	assert_status 0
	assert_content m/d/t $'new a\n'
	chown nobody:nogroup m/d/t
	chmod 4755 m/d/t
	local nofowner=(setpriv --inh-caps=-fowner --bounding-set=-fowner)
	! "${nofowner[@]}" ln m/d/t m/d/probe 2>/dev/null || fail "the kernel links it without CAP_FOWNER"
	snapshot m/d/t
	run --separate-stderr "${nofowner[@]}" "$PONYWRITE" --check -o nobody:nogroup -m 4755 -i s/a m/d/t
	assert_status 1
	assert_stderr "$msg"
	run --separate-stderr "${nofowner[@]}" "$PONYWRITE" -o nobody:nogroup -m 4755 m/d/t sh -c 'touch m/d/ran; echo new'
	assert_status 125
	assert_stderr "$msg; target not replaced"
	[ ! -e m/d/ran ] || fail "without CAP_FOWNER: the command ran"
	assert_untouched m/d/t
	# root's file that nobody may read and write: linked
	chown root:root m/d/t
	chmod 0666 m/d/t
	as_nobody ln m/d/t m/d/probe || fail "the kernel refuses the link"
	rm m/d/probe
	run --separate-stderr as_nobody "$PONYWRITE" --check -o nobody:nogroup -i s/a m/d/t
	assert_status 0
	run --separate-stderr as_nobody "$PONYWRITE" -o nobody:nogroup -i s/a m/d/t
	assert_status 0
	assert_content m/d/t $'new a\n'
	assert_no_litter m/d
}

# A rename that fails half-way through a batch stops it there (exit 4); the
# targets renamed before it are on disk only once the directory is flushed,
# so their old files stay linked until then, as after a batch that ends well.
@test "no journal, a batch stopped by a failed rename: the old files of the targets renamed stay linked until the directory is flushed" {
	mount_fs ext2 m -F
	on_fs m
	echo old > m/d/b
	link_trace --inject renameat:error=EIO:when=2 -t m/d s/a s/b
	assert_status 4
	[ "$LINKS" = "link:a link:b flush flush rename:a rename:b unlink unlink flush unlink flush" ] ||
	    fail "'$LINKS' ($(cat "$BATS_TEST_TMPDIR/link.err"))"
	assert_content m/d/a $'new a\n'
	assert_content m/d/b $'old\n'
	assert_no_litter m/d
}

@test "a journal that orders the rename (ext4, default options): no link to the old file" {
	require_ext4_sysfs
	mount_fs ext4 m -F
	on_fs m
	link_trace -i s/a m/d/t
	assert_status 0
	[ "$LINKS" = "rename:t flush" ] || fail "one file: '$LINKS'"
	link_trace -t m/d s/a s/b
	assert_status 0
	[ "$LINKS" = "rename:a rename:b flush" ] || fail "-t: '$LINKS'"
	assert_no_litter m/d
}

@test "XFS, default options: data waited for, one directory flush" {
	mount_fs xfs m -f
	on_fs m
	expect ordered m "wait rename fsync:m/d" "start*2 wait*2 rename*2 fsync:m/d"
}

@test "XFS with an option the allow-list does not name (wsync): each new file flushed" {
	MOUNT_OPTS=wsync mount_fs xfs m -f
	on_fs m
	expect safe m "fsync-temp rename fsync:m/d" "start*2 fsync-temp*2 rename*2 fsync:m/d"
}

# btrfs logs a renamed file's data and new name in one log commit when the
# file is flushed: one file is waited for, renamed, then flushed itself (2
# device flushes instead of 4, block level).  Not with -b (TARGET~ is named
# in the directory only) and not in a batch (a flush per file).
@test "btrfs: one file waited for and flushed after its rename; -b and a batch as before" {
	mount_fs btrfs m -f
	on_fs m
	expect filelog m "wait rename fsync:m/d/t" "start*2 syncfs rename*2 fsync:m/d"
	plan -b -i s/b m/d/t
	assert_status 0
	[ "$PLAN" = "fsync-temp rename*2 fsync:m/d" ] || fail "-b: '$PLAN' ($TRACE)"
	assert_content m/d/t $'new b\n'
	assert_content 'm/d/t~' $'new a\n'
	plan --no-sync -i s/a m/d/t
	assert_status 0
	[ "$PLAN" = "wait rename" ] || fail "--no-sync: '$PLAN' ($TRACE)"
	plan -i s/b m/d/new
	assert_status 0
	[ "$PLAN" = "wait rename fsync:m/d/new" ] || fail "a new file: '$PLAN' ($TRACE)"
	assert_no_litter m/d
}

# flushed_through_descriptor N [kept]: on the file system mounted on m, a
# user's -m 0 file replaced (exit 0, mode 0), then its N-th fsync made to
# fail: exit 3, "replaced, but flushing it failed", the new content, no
# litter; with "kept" (FUSE: the old file was linked till the name is on
# the disk), that link kept and named, as a crash may still need it.
flushed_through_descriptor()
{
	mkdir m/d
	echo old > m/d/t
	printf 'new\n' > s
	unpriv_setup
	run --separate-stderr unpriv "$PONYWRITE" -m 0 -i s m/d/t
	assert_status 0
	[ -z "$stderr" ] || fail "stderr: $stderr"
	assert_content m/d/t $'new\n'
	assert_mode m/d/t 0
	printf 'newer\n' > s
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=fsync:error=EIO:when="$1" "$PONYWRITE" -i s m/d/t
	assert_status 3
	local msg="ponywrite: m/d/t: replaced, but flushing it failed: $E_EIO; the new content may not survive a crash"
	if [ "${2:-}" = kept ]; then
		[[ $stderr == "$msg"$'\n'"ponywrite: m/d/t: the old content stays linked as m/d/.t~."* ]] ||
		    fail "stderr: $stderr"
		assert_content m/d/.t~.* $'new\n'
		rm m/d/.t~.*
	else
		assert_stderr "$msg"
	fi
	assert_content m/d/t $'newer\n'
	assert_no_litter m/d
}

# The flush after the rename goes through the new file's own descriptor: a
# user's file whose mode forbids opening it (-m 0) is flushed all the same.
@test "btrfs, one file: flushed through its descriptor after the rename (a user's -m 0 file); a failed flush exits 3" {
	require_cmd strace
	mount_fs btrfs m -f
	flushed_through_descriptor 1
}

@test "btrfs ssd_spread (begins like the proven ssd, is not it): each new file flushed" {
	MOUNT_OPTS=ssd_spread mount_fs btrfs m -f
	on_fs m
	expect safe m "fsync-temp rename fsync:m/d" "start*2 fsync-temp*2 rename*2 fsync:m/d"
}

# The same on FUSE: after the directory, each new file is flushed through
# the descriptor it was written with where a user's -m 0 file would not let
# it be opened again (a batch opens the others again by name).
@test "FUSE, one file: flushed through its descriptor after the rename (a user's -m 0 file); a failed flush exits 3" {
	require_cmd strace
	mount_fs ext4 low -F
	mount_bindfs low m
	flushed_through_descriptor 3 kept
}

@test "FUSE, a batch: a user's -m 0 files flushed after the renames all the same" {
	mount_fs ext4 low -F
	mount_bindfs low m
	on_fs m
	unpriv_setup
	require_cmd strace
	run --separate-stderr unpriv strace -f -qq -y -o trace -e trace=fsync \
	    "$PONYWRITE" -m 0 -t m/d s/a s/b
	assert_status 0
	[ -z "$stderr" ] || fail "stderr: $stderr"
	[ "$(grep -cE '^[0-9]+ +fsync\(.*/m/d/[ab]>\) = 0$' trace)" = 2 ] ||
	    fail "each renamed file not flushed once: $(cat trace)"
	assert_mode m/d/a 0
	assert_mode m/d/b 0
	assert_content m/d/a $'new a\n'
	assert_content m/d/b $'new b\n'
	run --separate-stderr unpriv "$PONYWRITE" -m 0400 -t m/d s/a s/b
	assert_status 0
	[ -z "$stderr" ] || fail "stderr: $stderr"
	assert_mode m/d/a 400
	assert_no_litter m/d
}

@test "FUSE (bindfs over ext4): each file flushed before its rename and after the directory and a sync" {
	mount_fs ext4 low -F
	mount_bindfs low m
	on_fs m
	expect fuse m "fsync-temp rename fsync:m/d sync fsync:m/d/t fsync:m/d" \
	    "start*2 fsync-temp*2 rename*2 fsync:m/d sync fsync:m/d/a fsync:m/d/b fsync:m/d"
	# --no-sync: only a replaced file (a) is flushed after its rename, as
	# without a journal; a created one (c) is not
	cp s/b s/c
	plan --no-sync -t m/d s/a s/c
	[ "$PLAN" = "start*2 fsync-temp*2 rename*2 fsync:m/d sync fsync:m/d/a fsync:m/d" ] ||
	    fail "--no-sync on FUSE: '$PLAN'"
}

# Issue 53: what holds a FUSE server's data cannot be known from its mount,
# and may have no journal.  Under bindfs over ext2 a crash left the target
# missing, zero-filled or garbage in 12 of 28 states of a replace (block
# level: tests/blockcrash, profiles ext2-bindfs, ext2-sshfs, ...): the old
# file stays linked until the new name is on the disk below, and bindfs and
# sshfs do not pass a directory's fsync on, so sync(2) writes it there and
# the renamed file's flush after it flushes the disk's cache.
# A server without hard links (EPERM): the plain sequence.  fuseblk
# (exfat-fuse, ntfs-3g, which hold their data themselves): as before.
# fuse-overlayfs passes a directory's fsync on: the link, no sync(2).
# unlinked_fuse DIR: on the FUSE file system mounted on DIR, a replace makes
# no link and no sync: the plain sequence with the renamed file's flush.
unlinked_fuse()
{
	on_fs "$1"
	link_trace -i s/a "$1/d/t"
	assert_status 0
	[ "$LINKS" = "flush rename:t flush flush" ] || fail "$1, one file: '$LINKS'"
	assert_content "$1/d/t" $'new a\n'
	assert_no_litter "$1/d"
}

# fuse-overlayfs leaves a whiteout (char 0:0) in its upper directory for
# each name removed in a directory of its lower layer: the kept link has one
# name a target, so a target replaced five times leaves one whiteout (five
# before, one a random name).
@test "fuse-overlayfs over ext2: the old file stays linked under one name a target, so one whiteout however often it is replaced" {
	mount_fs ext2 low -F
	mkdir -p low/layers/lower/d s
	echo old > low/layers/lower/d/t
	printf 'new a\n' > s/a
	printf 'new b\n' > s/b
	mount_fuse_overlayfs o low/layers
	link_trace -i s/a o/d/t
	assert_status 0
	[ "$LINKS" = "flush link:t rename:t flush flush unlink flush" ] ||
	    fail "one file: '$LINKS'"
	grep -q '^[0-9]* *linkat(.*"\.t\.ponywrite-old"' "$BATS_TEST_TMPDIR/link.log" ||
	    fail "the link's name: $(cat "$BATS_TEST_TMPDIR/link.log")"
	local i
	for i in 1 2 3 4; do
		echo "v$i" | "$PONYWRITE" o/d/t || fail "replace $i"
	done
	assert_content o/d/t $'v4\n'
	run ls -A low/layers/upper/d
	[ "$output" = $'.t.ponywrite-old\nt' ] || fail "upper directory: $output"
	[ -c low/layers/upper/d/.t.ponywrite-old ] || fail "not a whiteout"
	assert_no_litter o/d
	run "$PONYWRITE" --check -i s/a o/d/t
	assert_status 0
	[[ $output == *$'\tfsync-new,link-old,rename,fsync-dir,fsync-renamed,unlink-old\t'* ]] ||
	    fail "--check: $output"

	# that name taken (left by a crash): a random one; the leftover stays
	echo stale > o/d/.t.ponywrite-old
	link_trace -i s/b o/d/t
	assert_status 0
	[ "$LINKS" = "flush link:t link:t rename:t flush flush unlink flush" ] ||
	    fail "name taken: '$LINKS'"
	assert_content o/d/t $'new b\n'
	assert_content o/d/.t.ponywrite-old $'stale\n'
	assert_no_litter o/d .t.ponywrite-old
	rm o/d/.t.ponywrite-old

	# a batch whose other target has that name: a random name, so that
	# the link is not renamed over before the directory flush
	printf '%s\0' o/d/t s/a o/d/.t.ponywrite-old s/b > list
	link_trace --batch=list
	assert_status 0
	[ "$LINKS" = "flush flush link:t rename:t rename:.t.ponywrite-old flush flush flush unlink flush" ] ||
	    fail "batch: '$LINKS'"
	grep -q 'linkat(.*"\.t~\.' "$BATS_TEST_TMPDIR/link.log" ||
	    fail "not a random name: $(grep linkat "$BATS_TEST_TMPDIR/link.log")"
	assert_content o/d/t $'new a\n'
	assert_content o/d/.t.ponywrite-old $'new b\n'
	rm o/d/.t.ponywrite-old

	# another's file renamed over that link while the run waits after its
	# rename (stopped there): not the old file any more, so not removed
	local log=$BATS_TEST_TMPDIR/stop.log pid= state= n
	strace -f -qq -o "$log" -e trace=renameat -e inject=renameat:signal=SIGSTOP \
	    "$PONYWRITE" -i s/b o/d/t &
	for n in $(seq 100); do
		pid=$(sed -n '1s/ .*//p' "$log" 2>/dev/null)
		[ -n "$pid" ] && state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
		[ "$state" = t ] || [ "$state" = T ] && break
		sleep 0.1
	done
	[ "$state" = t ] || [ "$state" = T ] || fail "not stopped after its rename: $(cat "$log")"
	echo other > o/d/.other
	mv o/d/.other o/d/.t.ponywrite-old
	kill -CONT "$pid"
	wait $! || fail "exit $?"
	assert_content o/d/t $'new b\n'
	assert_content o/d/.t.ponywrite-old $'other\n'
	rm o/d/.t.ponywrite-old

	# names cut to fit (NAME_MAX 251) that begin alike: one name each
	local long
	long=$(printf 'l%.0s' {1..236})
	echo 1 > s/"${long}1"
	echo 2 > s/"${long}2"
	for i in 1 2 3; do
		"$PONYWRITE" -t o/d s/"${long}1" s/"${long}2" || fail "-t $i"
	done
	run ls -A low/layers/upper/d
	[ "$(grep -c "^\.${long:0:200}.*\.ponywrite-old\$" <<<"$output")" = 2 ] ||
	    fail "upper directory: $output"
	[ "$(grep -c '^\.l' <<<"$output")" = 2 ] || fail "upper directory: $output"
}

@test "FUSE over a file system without a journal: the old file stays linked till the name is on the disk below (sync(2) where the server keeps a directory's fsync)" {
	mount_fs ext2 low -F
	mount_bindfs low m
	on_fs m
	link_trace -i s/a m/d/t
	assert_status 0
	[ "$LINKS" = "flush link:t rename:t flush sync flush unlink flush" ] ||
	    fail "bindfs, one file: '$LINKS'"
	assert_content m/d/t $'new a\n'
	link_trace -t m/d s/a s/b
	assert_status 0
	[ "$LINKS" = "flush flush link:a rename:a rename:b flush sync flush flush unlink flush" ] ||
	    fail "bindfs, -t: '$LINKS'"
	link_trace -b -i s/b m/d/t
	assert_status 0
	# -b: the backup's probe first; TARGET~ keeps the old file
	[ "$LINKS" = "link:t unlink flush link:t rename:t rename:t~ flush sync flush" ] ||
	    fail "bindfs, -b: '$LINKS'"
	assert_no_litter m/d
	run "$PONYWRITE" --check -i s/a m/d/t
	assert_status 0
	[[ $output == *$'\tfsync-new,link-old,rename,fsync-dir,sync,fsync-renamed,unlink-old\t'* ]] ||
	    fail "--check: $output"


	# a server that refuses hard links (bindfs over vfat): the plain sequence
	link_trace --inject linkat:error=EPERM -i s/b m/d/t
	assert_status 0
	[ -z "$(cat "$BATS_TEST_TMPDIR/link.err")" ] || fail "EPERM: $(cat "$BATS_TEST_TMPDIR/link.err")"
	[ "$LINKS" = "flush link:t rename:t flush sync flush" ] ||
	    fail "bindfs, no hard links: '$LINKS'"
	assert_content m/d/t $'new b\n'
	assert_no_litter m/d

	# a link fs.protected_hardlinks refuses (nobody, root's 0644 file in
	# nobody's directory): foreseen, so the run and --check go on without
	if [ "$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null)" = 1 ] &&
	    getent passwd nobody >/dev/null; then
		require_nobody
		mkdir -p low/nb
		echo rootold > low/nb/r
		chown nobody:nogroup low/nb
		mount_bindfs low u -o allow_other
		run --separate-stderr as_nobody "$PONYWRITE" --check -o nobody:nogroup -i s/a u/nb/r
		assert_status 0
		[ "$(cut -f5 <<<"$output")" = "fsync-new,rename,fsync-dir,sync,fsync-renamed" ] ||
		    fail "--check, a link protected_hardlinks refuses: $output"
		run --separate-stderr as_nobody "$PONYWRITE" -o nobody:nogroup -i s/a u/nb/r
		assert_status 0
		assert_content low/nb/r $'new a\n'
		assert_no_litter low/nb
	fi

	# exfat-fuse (fuseblk) is the file system itself: no link, no sync
	# (a kept link made ntfs-3g's directory unreadable after a crash)
	mount_exfat x
	unlinked_fuse x
}


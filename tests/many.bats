#!/usr/bin/env bats
# Many files: -t DIRECTORY SOURCE... and --batch=LIST.  Every target keeps the
# single-file guarantees; nothing is renamed before every new file is
# durable; the flushes are counted per file system, not per file.

load helpers
load features_helpers

# old content in d/a d/b d/c, new content in s/a s/b s/c
three()
{
	mkdir -p d s
	local f
	for f in a b c; do
		printf 'old %s\n' "$f" > "d/$f"
		printf 'new %s\n' "$f" > "s/$f"
	done
}

# A NUL-separated list of TARGET SOURCE pairs, from the arguments.
pairs()
{
	printf '%s\0' "$@"
}

@test "-t: each SOURCE replaces DIRECTORY/NAME, metadata kept, new inode" {
	three
	chmod 0640 d/a
	chmod 0604 d/b
	local ia
	ia=$(inode d/a)
	run --separate-stderr "$PONYWRITE" -t d s/a s/b s/c
	assert_status 0
	assert_quiet
	assert_content d/a $'new a\n'
	assert_content d/b $'new b\n'
	assert_content d/c $'new c\n'
	assert_mode d/a 640
	assert_mode d/b 604
	[ "$(inode d/a)" != "$ia" ] || fail "d/a rewritten in place"
	assert_content s/a $'new a\n'
	assert_no_litter
}

@test "-t with a trailing slash on the directory, and new targets created with the umask" {
	mkdir -p d s
	echo one > s/x
	echo two > s/y
	umask 027
	run --separate-stderr "$PONYWRITE" -v --target-directory=d/ s/x s/y
	assert_status 0
	assert_stderr $'ponywrite: d/x: created\nponywrite: d/y: created'
	assert_content d/x $'one\n'
	assert_mode d/x 640
	assert_no_litter
}

@test "-t with a missing directory says so once, not once per source; --check too" {
	# Issue 54, item 6: 10,000 sources printed the line 10,000 times.
	mkdir s
	local i
	for i in $(seq 100); do echo "$i" > "s/$i"; done
	run --separate-stderr "$PONYWRITE" -t missing s/*
	assert_status 1
	assert_stderr $'ponywrite: missing: No such file or directory\nponywrite: nothing replaced: 100 of 100 targets failed'
	[ ! -e missing ] || fail "missing was made"
	run --separate-stderr "$PONYWRITE" --check -t missing s/*
	assert_status 1
	assert_stderr $'ponywrite: missing: No such file or directory\nponywrite: a run would replace nothing: 100 of 100 targets would fail'
	[ "$(grep -c '^fail' <<<"$output")" = 100 ] || fail "--check printed: $output"
	# Another directory after it is still asked, and said.
	mkdir d
	run --separate-stderr "$PONYWRITE" --batch=<(pairs missing/a s/1 missing/b s/2 d/a s/1 gone/a s/1)
	assert_status 1
	assert_stderr $'ponywrite: missing: No such file or directory\nponywrite: gone: No such file or directory\nponywrite: nothing replaced: 3 of 4 targets failed'
	assert_no_litter
}

@test "--batch=LIST: targets in several directories, odd names, a source from stdin" {
	mkdir -p one two s
	echo old > one/t
	printf 'n1\n' > s/1
	local odd=$'new\nline and space'
	run --separate-stderr "$PONYWRITE" --batch=<(pairs one/t s/1 "two/$odd" - one/u s/1) -v < <(echo from-stdin)
	assert_status 0
	assert_content one/t $'n1\n'
	assert_content "two/$odd" $'from-stdin\n'
	assert_content one/u $'n1\n'
	assert_stderr_has "ponywrite: one/t: replaced"
	assert_stderr_has "ponywrite: one/u: created"
	assert_no_litter
}

@test "--batch=-: the list on stdin" {
	three
	run --separate-stderr "$PONYWRITE" --batch=- < <(pairs d/a s/c d/c s/a)
	assert_status 0
	assert_content d/a $'new c\n'
	assert_content d/c $'new a\n'
	assert_content d/b $'old b\n'
	assert_no_litter
}

@test "--batch: an empty list does nothing and succeeds" {
	run --separate-stderr "$PONYWRITE" --batch=/dev/null
	assert_status 0
	assert_quiet
}

@test "--batch: two targets swap contents (every source read before any rename)" {
	three
	run --separate-stderr "$PONYWRITE" --batch=<(pairs d/a d/b d/b d/a)
	assert_status 0
	assert_content d/a $'old b\n'
	assert_content d/b $'old a\n'
	assert_no_litter
}

@test "-C --print-changed: stdout lists exactly the targets that changed, under set -e" {
	three
	cp d/b s/b
	set -e
	changed=$("$PONYWRITE" -C --print-changed -v -t d s/a s/b s/c 2>"$BATS_TEST_TMPDIR/err")
	set +e
	[ "$changed" = $'d/a\nd/c' ] || fail "stdout: $changed"
	grep -qx "ponywrite: d/b: unchanged" "$BATS_TEST_TMPDIR/err" ||
	    fail "stderr: $(cat "$BATS_TEST_TMPDIR/err")"
	assert_content d/a $'new a\n'
	assert_no_litter
	# A second run changes nothing and prints nothing.
	changed=$("$PONYWRITE" -C --print-changed -t d s/a s/b s/c)
	[ -z "$changed" ] || fail "second run printed: $changed"
}

@test "-C leaves unchanged targets alone (same inode and mtime)" {
	three
	cp -p d/b s/b
	snapshot d/b
	run --separate-stderr "$PONYWRITE" -C -t d s/a s/b
	assert_status 0
	assert_untouched d/b
	assert_content d/a $'new a\n'
}

@test "-b -m -S apply to every target" {
	three
	run --separate-stderr "$PONYWRITE" -b -S .orig -m 0600 -t d s/a s/b
	assert_status 0
	assert_content d/a.orig $'old a\n'
	assert_content d/b.orig $'old b\n'
	assert_mode d/a 600
	assert_mode d/b 600
	assert_no_litter
}

@test "-o -g apply to every target (root)" {
	require_root
	three
	run --separate-stderr "$PONYWRITE" -o nobody:nogroup -t d s/a s/b
	assert_status 0
	assert_owner d/a "$(id -u nobody)" "$(getent group nogroup | cut -d: -f3)"
	assert_owner d/b "$(id -u nobody)" "$(getent group nogroup | cut -d: -f3)"
}

@test "symbolic links are followed per target; -P replaces the link itself" {
	three
	ln -s a d/la
	echo linked > s/la
	run --separate-stderr "$PONYWRITE" -t d s/la
	assert_status 0
	assert_symlink d/la
	assert_content d/a $'linked\n'
	run --separate-stderr "$PONYWRITE" -P -t d s/la
	assert_status 0
	assert_regular d/la
	assert_no_litter
}

@test "a link to a target named again is a duplicate: usage error, nothing done" {
	three
	ln -s a d/la
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" --batch=<(pairs d/a s/a d/la s/b)
	assert_status 2
	assert_stderr "ponywrite: d/la: the same target as d/a; each target can be given once"
	assert_untouched d/a d/b
	assert_no_litter
}

@test "a target given twice is a usage error, nothing done" {
	three
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -t d s/a s/b s/a
	assert_status 2
	assert_stderr "ponywrite: d/a: given twice; each target can be given once"
	run --separate-stderr "$PONYWRITE" --batch=<(pairs d/a s/a ./d/a s/b)
	assert_status 2
	assert_stderr "ponywrite: ./d/a: the same target as d/a; each target can be given once"
	assert_untouched d/a d/b
	assert_no_litter
}

@test "bad sources: each failure named, exit 1, every target untouched, no temporary file" {
	three
	snapshot d/a d/b d/c
	run --separate-stderr "$PONYWRITE" -t d s/a s/missing s/b s/
	assert_status 1
	assert_stderr_has "ponywrite: s/missing: No such file or directory"
	assert_stderr_has "ponywrite: s/: Is a directory"
	assert_stderr_has "ponywrite: nothing replaced: 2 of 4 targets failed"
	assert_untouched d/a d/b d/c
	[ ! -e d/missing ] || fail "d/missing was created"
	assert_no_litter
}

@test "a missing directory or a non-regular target fails the whole batch" {
	three
	mkdir d/sub
	snapshot d/a
	run --separate-stderr "$PONYWRITE" --batch=<(pairs d/a s/a nodir/x s/b d/sub s/c)
	assert_status 1
	assert_stderr_has "ponywrite: nodir: No such file or directory"
	assert_stderr_has "ponywrite: d/sub: not a regular file"
	assert_stderr_has "ponywrite: nothing replaced: 2 of 3 targets failed"
	assert_untouched d/a
	assert_no_litter
}

@test "-E: one empty source fails the batch" {
	three
	: > s/b
	snapshot d/a d/b
	run --separate-stderr "$PONYWRITE" -E -t d s/a s/b
	assert_status 1
	assert_stderr_has "ponywrite: d/b: input is empty, not replaced (-E)"
	assert_untouched d/a d/b
	assert_no_litter
}

@test "-p creates the missing directories of every target" {
	mkdir s
	echo x > s/x
	run --separate-stderr "$PONYWRITE" -p --batch=<(pairs a/b/x s/x c/y s/x)
	assert_status 0
	assert_content a/b/x $'x\n'
	assert_content c/y $'x\n'
	# A target given twice is found once its directory exists: the
	# directory stays (documented), nothing else is done.
	run --separate-stderr "$PONYWRITE" -p --batch=<(pairs n/m/x s/x n/m/x s/x)
	assert_status 2
	[ -d n/m ] || fail "n/m was not created"
	[ ! -e n/m/x ] || fail "n/m/x was created"
	assert_no_litter
}

@test "a user: the batch works, and an unwritable directory fails it" {
	three
	mkdir ro
	echo old > ro/t
	pairs d/a s/a ro/t s/b > list
	unpriv_setup
	chmod 0555 ro
	snapshot d/a ro/t
	run --separate-stderr unpriv "$PONYWRITE" --batch=list
	assert_status 1
	assert_stderr_has "ponywrite: ro: cannot create a temporary file in this directory: Permission denied"
	assert_untouched d/a ro/t
	run --separate-stderr unpriv "$PONYWRITE" -t d s/a s/b
	assert_status 0
	assert_content d/a $'new a\n'
	assert_no_litter
}

@test "options the many-files forms do not take are refused" {
	three
	snapshot d/a
	local o
	for o in -a -l "-w 1" "-i s/a"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$PONYWRITE" $o -t d s/a
		assert_status 2
		assert_stderr_has "cannot be used with -t"
	done
	run --separate-stderr "$PONYWRITE" -a --batch=/dev/null
	assert_status 2
	assert_stderr_has "ponywrite: -a cannot be used with --batch"
	run --separate-stderr "$PONYWRITE" --batch=/dev/null d/a
	assert_status 2
	assert_stderr_has "ponywrite: --batch takes no operands: 'd/a'"
	run --separate-stderr "$PONYWRITE" -t d --batch=/dev/null
	assert_status 2
	assert_stderr_has "ponywrite: -t and --batch cannot be combined"
	run --separate-stderr "$PONYWRITE" -t d
	assert_status 2
	assert_stderr_has "ponywrite: missing source after -t d"
	run --separate-stderr "$PONYWRITE" -t d -
	assert_status 2
	assert_stderr_has "ponywrite: -: no file name to give it in d"
	assert_untouched d/a
	assert_no_litter
}

@test "a malformed list is a usage error" {
	three
	snapshot d/a
	run --separate-stderr "$PONYWRITE" --batch=<(printf 'd/a\0s/a')
	assert_status 2
	assert_stderr_has "not a list of NUL-terminated target and source pairs"
	run --separate-stderr "$PONYWRITE" --batch=<(printf 'd/a\0s/a\0d/b\0')
	assert_status 2
	assert_stderr_has "not a list of NUL-terminated target and source pairs"
	run --separate-stderr "$PONYWRITE" --batch=<(printf 'd/a\0\0')
	assert_status 2
	assert_stderr_has "an empty name in pair 1"
	# Checked as it is read: an endless list of NULs is refused at once,
	# and so is a name no path can have.
	run --separate-stderr timeout 20 "$PONYWRITE" --batch=/dev/zero
	assert_status 2
	assert_stderr_has "/dev/zero: an empty name in pair 1"
	run --separate-stderr timeout 20 "$PONYWRITE" --batch=<(printf 'd/a\0s/a\0'; yes | tr -d '\n')
	assert_status 2
	assert_stderr_has "a name longer than PATH_MAX in pair 2"
	run --separate-stderr "$PONYWRITE" --batch=<(pairs d/a - d/b -) </dev/null
	assert_status 2
	assert_stderr_has "stdin (-) can be the source of one target only"
	run --separate-stderr "$PONYWRITE" --batch=- < <(pairs d/a -)
	assert_status 2
	assert_stderr_has "no source can be -"
	run --separate-stderr "$PONYWRITE" --batch=nolist
	assert_status 1
	assert_stderr "ponywrite: nolist: No such file or directory"
	assert_untouched d/a
	assert_no_litter
}

# expect_plan DIR ORDERED SYNCFS [SAFE [NOJOURNAL]]: the plan expected on
# DIR's file system by the allow-list (plan_of): ORDERED where the journal
# orders data (ext4 with a journal, XFS, with proven options), SYNCFS where
# only one syncfs is proven (btrfs: plan_of filelog, a batch's syncfs), SAFE elsewhere (each new file flushed;
# SAFE defaults to SYNCFS with its "start*N syncfs" as "start*N fsync-temp*N":
# a batch starts each new file's write-back, and flushes it a few files
# later), NOJOURNAL without a journal (default SYNCFS: a batch's one syncfs;
# where old files are replaced, their hidden links' removal flushed too).
expect_plan()
{
	local want
	case $(plan_of "$1") in
	ordered) want=$2 ;;
	filelog | nojournal) want=$3 ;;
	*) want=${4-$(sed -E 's/start(\*[0-9]+)? syncfs/start\1 fsync-temp\1/' <<<"$3")} ;;
	esac
	[ "$(plan_of "$1")" != nojournal ] || want=${5-$want}
	[ "$PLAN" = "$want" ] || fail "plan on $1: '$PLAN', expected '$want' ($TRACE)"
}

# The flush plan, as system calls: nothing flushed per file, the flush that
# orders the data before the names once per file system, one after.
@test "flush plan, one directory: no flush per file, renames, one directory flush" {
	three
	plan -t d s/a s/b s/c
	assert_status 0
	# without a journal: the old files' hidden links removed and flushed
	expect_plan d "start*3 wait*3 rename*3 fsync:d" \
	    "start*3 syncfs rename*3 fsync:d" \
	    "start*3 fsync-temp*3 rename*3 fsync:d" \
	    "start*3 syncfs fsync:d rename*3 fsync:d*2"
	plan --no-sync --batch=<(pairs d/b s/a d/a s/b)
	assert_status 0
	expect_plan d "start*2 wait*2 rename*2" "start*2 syncfs rename*2" \
	    "start*2 fsync-temp*2 rename*2" \
	    "start*2 syncfs fsync:d rename*2 fsync:d*2"
	assert_content d/b $'new a\n'
}

@test "flush plan, two directories on one file system: one syncfs after the renames" {
	mkdir -p one two s
	echo x > s/x
	plan --batch=<(pairs one/a s/x two/b s/x one/c s/x)
	assert_status 0
	expect_plan one "start*3 wait*3 rename*3 syncfs" \
	    "start*3 syncfs rename*3 syncfs" \
	    "start*3 fsync-temp*3 rename*3 fsync:one fsync:two" \
	    "start*3 syncfs fsync:one rename*3 syncfs fsync:one"
	assert_content two/b $'x\n'
}

@test "flush plan, -C: an unchanged target is flushed with a syncfs before the renames" {
	three
	cp d/b s/b
	plan -C -t d s/a s/b
	assert_status 0
	expect_plan d "start wait syncfs rename fsync:d" \
	    "start syncfs rename fsync:d" \
	    "start fsync:d/b fsync-temp rename fsync:d" \
	    "start syncfs fsync:d rename fsync:d*2"
	plan -C --no-sync -t d s/b
	expect_plan d "" ""
}

@test "flush plan without a journal (ext4 -O ^has_journal): one file flushed, a batch's by one syncfs" {
	mount_fs ext4 m -F -O ^has_journal
	mkdir -p m/d m/e s
	echo x > s/x
	plan -t m/d s/x
	[ "$PLAN" = "fsync-temp rename fsync:m/d" ] || fail "plan: $PLAN"
	# m/d/x exists now: without a journal its directory is flushed before
	# the old file's hidden link goes, --no-sync or not; m/e/x is new.
	plan --no-sync --batch=<(pairs m/d/x s/x m/e/x s/x)
	[ "$PLAN" = "start*2 syncfs fsync:m/d rename*2 fsync:m/d*2" ] ||
	    fail "--no-sync plan: $PLAN"
	assert_content m/e/x $'x\n'
}

@test "flush plan where the journal orders data (ext4 with a journal, XFS)" {
	local fs
	for fs in ext4 xfs; do
		[ "$fs" = ext4 ] && ! [ -n "$(ls /sys/fs/ext4 2>/dev/null)" ] &&
		    continue	# without sysfs, ext4 keeps fsync
		mount_fs "$fs" "m$fs" $([ "$fs" = ext4 ] && echo -F)
		mkdir -p "m$fs/d" "m$fs/e" s
		echo x > s/x
		plan -t "m$fs/d" s/x
		expect_plan "m$fs/d" "wait rename fsync:m$fs/d" ""
		plan --batch=<(pairs "m$fs/d/x" s/x "m$fs/e/x" s/x)
		expect_plan "m$fs/d" "start*2 wait*2 rename*2 syncfs" ""
		plan --no-sync --batch=<(pairs "m$fs/d/x" s/x "m$fs/e/x" s/x)
		expect_plan "m$fs/d" "start*2 wait*2 rename*2" ""
	done
}

@test "flush plan: the number of flushes does not grow with the number of files" {
	mount_fs ext4 m -F
	cd m
	mkdir -p d s
	local i
	for i in $(seq 1 40); do echo "$i" > "s/f$i"; done
	trace_syncs -t d s/f1 s/f2
	small=$(count_in_trace '^(fsync|fdatasync|syncfs)\(')
	trace_syncs -t d s/f*
	assert_status 0
	large=$(count_in_trace '^(fsync|fdatasync|syncfs)\(')
	[ "$small" -eq "$large" ] && [ "$large" -le 2 ] ||
	    fail "flushes: $small for 2 files, $large for 40"
	[ "$(ls d | wc -l)" -eq 40 ] || fail "not every file replaced"
	# without a journal too (issue 53): one syncfs and a directory's fsync
	# before the renames, the directory after them and after the old files'
	# links go (40 old files)
	cd ..
	mount_fs ext4 n -F -O ^has_journal
	cp -r m/d m/s n/
	trace_syncs -t n/d n/s/f1 n/s/f2
	small=$(count_in_trace '^(fsync|fdatasync|syncfs)\(')
	trace_syncs -t n/d n/s/f*
	assert_status 0
	large=$(count_in_trace '^(fsync|fdatasync|syncfs)\(')
	[ "$small" -eq 4 ] && [ "$large" -eq 4 ] ||
	    fail "without a journal: $small for 2 files, $large for 40 ($TRACE)"
	assert_content n/d/f40 $'40\n'
	assert_no_litter n/d
}

# in_flight: from TRACE (trace_syncs), the most new files whose write-back
# was started (sync_file_range ... WRITE) and not yet waited for or flushed;
# "-1" if one is flushed without being started, or renamed before its flush.
in_flight()
{
	printf '%s\n' "$TRACE" | awk '
	function file() { match($0, /<[^>]*>/); return substr($0, RSTART, RLENGTH) }
	/^sync_file_range\(.*WAIT_AFTER/ || /^f(data)?sync\(/ {
		f = file(); if (!(f in open)) next
		delete open[f]; n--; flushed++; next
	}
	/^sync_file_range\(/ { open[file()] = 1; n++; if (n > most) most = n; next }
	/^rename/ { if (n > 0) bad = 1 }
	END { print bad ? -1 : most " " flushed }'
}

@test "a batch flushes its new files in a pipeline: many on their way to the disk at once, at most 32, all before the first rename" {
	local fs opts
	for fs in ext4 ext4-nobarrier; do
		opts=
		[ "$fs" = ext4-nobarrier ] && opts=nobarrier
		MOUNT_OPTS=$opts mount_fs ext4 "m$fs" -F
		mkdir -p "m$fs/d" s
		local i
		for i in $(seq 1 100); do echo "$i" > "s/f$i"; done
		trace_syncs -t "m$fs/d" s/f*
		assert_status 0
		[ "$(in_flight)" = "32 100" ] ||
		    fail "$fs: at most, files on their way and files flushed: $(in_flight) ($TRACE)"
		assert_content "m$fs/d/f100" $'100\n'
	done
}

# The pipeline's two halves, each failing for the second of two files: the
# start of its write-back (sync_file_range 2), the wait for it (the fourth:
# ext4 with a journal) or its fsync (the second: where each new file is
# flushed, as with an option the allow-list does not name).
@test "a batch's pipeline: a failed start of a write-back, wait or fsync: exit 1, nothing replaced, no temporary file" {
	require_cmd strace
	local fs opts inject
	for fs in ext4 ext4-nobarrier; do
		opts=
		[ "$fs" = ext4-nobarrier ] && opts=nobarrier
		MOUNT_OPTS=$opts mount_fs ext4 "m$fs" -F
		mkdir -p "m$fs/d" s
		echo 'old a' > "m$fs/d/a"
		echo 'old b' > "m$fs/d/b"
		echo 'new a' > s/a
		echo 'new b' > s/b
		snapshot "m$fs/d/a" "m$fs/d/b"
		for inject in sync_file_range:error=EIO:when=2 \
		    "$([ "$fs" = ext4 ] && echo sync_file_range:error=EIO:when=4 ||
		    echo fsync:error=EIO:when=2)"; do
			run --separate-stderr strace -f -qq -o /dev/null \
			    -e inject="$inject" "$PONYWRITE" -t "m$fs/d" s/a s/b
			assert_status 1
			assert_stderr "ponywrite: m$fs/d/b: cannot flush to disk: $E_EIO
ponywrite: nothing replaced: 1 of 2 targets failed"
			assert_untouched "m$fs/d/a" "m$fs/d/b"
			assert_no_litter "m$fs/d"
		done
	done
}

@test "the data of a new file cannot be written: exit 1, nothing replaced, no temporary file" {
	require_cmd strace
	three
	snapshot d/a d/b
	if [ "$(plan_of d)" != filelog ] && [ "$(plan_of d)" != nojournal ]; then
		local call=sync_file_range
		[ "$(plan_of d)" = ordered ] || call=fsync
		run --separate-stderr strace -f -qq -o "$BATS_TEST_TMPDIR/inj" \
		    -e trace=$call,rename,renameat,renameat2 \
		    -e inject=$call:error=EIO:when=2 "$PONYWRITE" -t d s/a s/b
		assert_stderr "ponywrite: d/b: cannot flush to disk: $E_EIO
ponywrite: nothing replaced: 1 of 2 targets failed"
	else
		run --separate-stderr strace -f -qq -o "$BATS_TEST_TMPDIR/inj" \
		    -e trace=syncfs,rename,renameat,renameat2 -e inject=syncfs:error=EIO \
		    "$PONYWRITE" -t d s/a s/b
		assert_stderr "ponywrite: d: cannot flush the new files to disk: $E_EIO; nothing replaced"
		[ "$(grep -c 'syncfs(' "$BATS_TEST_TMPDIR/inj")" -eq 1 ] || fail "syncfs retried"
	fi
	assert_status 1
	assert_untouched d/a d/b
	assert_no_litter
	! grep -q rename "$BATS_TEST_TMPDIR/inj" || fail "renamed after a failed flush"
}

# The syncfs plan is never the default file system's (ext4 waits for the
# data instead), so it is tested on a btrfs of its own, not only when the
# suite runs on btrfs (make fscheck).
@test "btrfs, a batch: a failed syncfs before the renames: exit 1, nothing replaced, no temporary file" {
	require_cmd strace
	mount_fs btrfs m
	cd m
	three
	snapshot d/a d/b
	[ "$(plan_of d)" = filelog ] || skip "btrfs plan here: $(plan_of d)"
	run --separate-stderr strace -f -qq -o "$BATS_TEST_TMPDIR/inj" \
	    -e trace=syncfs,rename,renameat,renameat2 -e inject=syncfs:error=EIO \
	    "$PONYWRITE" -t d s/a s/b
	assert_status 1
	assert_stderr "ponywrite: d: cannot flush the new files to disk: $E_EIO; nothing replaced"
	[ "$(grep -c 'syncfs(' "$BATS_TEST_TMPDIR/inj")" -eq 1 ] || fail "syncfs retried"
	assert_untouched d/a d/b
	assert_no_litter
	! grep -q rename "$BATS_TEST_TMPDIR/inj" || fail "renamed after a failed flush"
}

@test "a rename fails in the middle: the replaced and the others named, exit 4, no temporary file" {
	require_cmd strace
	three
	snapshot d/b d/c
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=rename,renameat,renameat2:error=EACCES:when=2 \
	    "$PONYWRITE" --print-changed -t d s/a s/b s/c
	assert_status 4
	[ "$output" = d/a ] || fail "stdout: $output"
	assert_stderr "ponywrite: d/b: Permission denied
ponywrite: d/a: replaced
ponywrite: d/b: not replaced
ponywrite: d/c: not replaced
ponywrite: stopped after replacing 1 of 3 targets"
	assert_content d/a $'new a\n'
	assert_untouched d/b d/c
	assert_no_litter
}

@test "the first rename fails: nothing replaced, exit 1" {
	require_cmd strace
	three
	snapshot d/a d/b
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=rename,renameat,renameat2:error=EIO:when=1 \
	    "$PONYWRITE" -b -t d s/a s/b
	assert_status 1
	assert_stderr "ponywrite: d/a: $E_EIO
ponywrite: nothing replaced"
	assert_untouched d/a d/b
	[ ! -e 'd/a~' ] || fail "a backup was made"
	assert_no_litter
}

@test "the directory flush after the renames fails: exit 3, all replaced, message says so" {
	require_cmd strace
	three
	local when=1	# the directory's is the first fsync, but where each file is
	# flushed (safe) or syncfs is followed by a directory's (nojournal)
	case $(plan_of d) in safe) when=3 ;; nojournal) when=2 ;; esac
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=fsync:error=EIO:when=$when "$PONYWRITE" -t d s/a s/b
	assert_status 3
	local msg="ponywrite: d: targets replaced, but flushing the directory failed: $E_EIO; the new content may not survive a crash"
	if [ "$(plan_of d)" = nojournal ]; then
		assert_stderr_has "$msg"
		kept_links d a b
	else
		assert_stderr "$msg"
	fi
	assert_content d/a $'new a\n'
	assert_content d/b $'new b\n'
	assert_no_litter
}

@test "SIGTERM while the files are written: dies by it, every target untouched, no temporary file" {
	require_cmd strace
	three
	snapshot d/a d/b d/c
	local call=sync_file_range
	[ "$(plan_of d)" != safe ] || call=fsync
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=$call:signal=SIGTERM:when=2 \
	    "$PONYWRITE" -t d s/a s/b s/c
	[ "$status" -eq $((128 + 15)) ] || fail "status $status: $stderr"
	assert_untouched d/a d/b d/c
	assert_no_litter
}

@test "SIGTERM during the renames waits until they and the flush are done" {
	require_cmd strace
	three
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject=renameat:signal=SIGTERM:when=1 \
	    "$PONYWRITE" -t d s/a s/b s/c
	[ "$status" -eq $((128 + 15)) ] || fail "status $status: $stderr"
	assert_content d/a $'new a\n'
	assert_content d/c $'new c\n'
	assert_no_litter
}

@test "a full disk while the files are written: exit 1, nothing replaced, no temporary file" {
	mount_ext4 m 8
	mkdir -p s
	echo old > m/a
	echo old > m/b
	head -c 3000000 /dev/zero > s/a
	head -c 6000000 /dev/zero > s/b
	snapshot m/a m/b
	run --separate-stderr "$PONYWRITE" -t m s/a s/b
	assert_status 1
	assert_stderr_has "ponywrite: m/b: cannot write the new content: No space left on device"
	assert_stderr_has "ponywrite: nothing replaced: 1 of 2 targets failed"
	assert_untouched m/a m/b
	assert_no_litter m
}

@test "targets on two file systems: the flush before the renames where each needs it, one directory flush each after" {
	require_ext4_sysfs
	mount_ext4 m 8
	mkdir -p d s
	echo x > s/x
	plan --batch=<(pairs d/a s/x m/b s/x d/c s/x)
	assert_status 0
	# m is ext4 with a journal: its file is waited for, no syncfs there.
	expect_plan d "start*3 wait*3 rename*3 fsync:d fsync:m" \
	    "start*3 wait syncfs rename*3 fsync:d fsync:m" \
	    "start*3 fsync-temp wait fsync-temp rename*3 fsync:d fsync:m" \
	    "start*3 wait syncfs fsync:d rename*3 fsync:d fsync:m"
	assert_content m/b $'x\n'
	assert_content d/c $'x\n'
}

@test "a few descriptors are enough for many files, and for many failures" {
	mkdir -p d s bad
	local i
	for i in $(seq 1 300); do echo "$i" > "s/f$i"; mkdir "bad/f$i"; done
	run --separate-stderr bash -c 'ulimit -n 32 && exec "$@"' sh "$PONYWRITE" -t d s/*
	assert_status 0
	assert_content d/f300 $'300\n'
	run --separate-stderr bash -c 'ulimit -n 32 && exec "$@"' sh "$PONYWRITE" -t d bad/*
	assert_status 1
	assert_stderr_has "ponywrite: bad/f300: Is a directory"
	assert_stderr_has "ponywrite: nothing replaced: 300 of 300 targets failed"
	! grep -q "Too many open files" <<<"$stderr" || fail "descriptors leak: $stderr"
	assert_no_litter
}

@test "a kernel before 5.8 (uname faked by setarch): each new file flushed, no syncfs" {
	require_uname26
	mkdir -p one two s
	echo x > s/x
	echo same > one/c
	cp -p one/c s/c
	local real=$PONYWRITE
	PONYWRITE=setarch plan --uname-2.6 "$real" -C --batch=<(pairs one/a s/x two/b s/x one/c s/c)
	assert_status 0
	expect_plan one "start*2 fsync:one/c wait*2 rename*2 fsync:one fsync:two" \
	    "start*2 fsync:one/c fsync-temp*2 rename*2 fsync:one fsync:two"
	assert_content two/b $'x\n'
}

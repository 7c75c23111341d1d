#!/usr/bin/env bats
# Sticky directories like /tmp: the kernel's protected_regular rule, which
# ponywrite applies itself because it never opens the old file with O_CREAT.

load helpers

setup()
{
	pw_setup
	PW_PROTECTED=
}

teardown()
{
	if [ -n "$PW_PROTECTED" ]; then
		sysctl -q -w fs.protected_regular="$PW_PROTECTED"
	fi
	pw_teardown
}

# protected_regular LEVEL: set the sysctl for this test (root).
protected_regular()
{
	require_nobody
	[ -w /proc/sys/fs/protected_regular ] ||
	    skip "cannot set fs.protected_regular"
	PW_PROTECTED=$(cat /proc/sys/fs/protected_regular)
	sysctl -q -w fs.protected_regular="$1"
}

# A root-owned sticky directory with MODE, and in it a 0666 file planted by
# nobody.
plant()
{
	mkdir -m "$1" s
	echo planted > s/prx
	chown nobody:nogroup s/prx
	chmod 0666 s/prx
}

@test "protected_regular=2: root refuses another user's file in a sticky world-writable dir" {
	protected_regular 2
	plant 1777
	snapshot s/prx
	run bash -c 'echo secret > s/prx'
	[ "$status" -ne 0 ] || fail "the kernel let root write: this test proves nothing"
	run --separate-stderr "$PONYWRITE" s/prx < <(echo secret)
	assert_status 1
	assert_stderr "ponywrite: s/prx: not writing to a file that nobody (65534) owns in the sticky directory s"
	assert_untouched s/prx
	assert_no_litter
	# Through a link outside the directory too, and with -a, -l, -C.
	ln -s s/prx link
	for o in "" -a -l -C; do
		run --separate-stderr "$PONYWRITE" $o link < <(echo secret)
		assert_status 1
		assert_stderr_has "not writing to a file that nobody (65534) owns"
	done
	assert_untouched s/prx
	assert_no_litter
}

@test "protected_regular: a second user is refused too; the owner and the dir owner's files are not" {
	protected_regular 2
	plant 1777
	snapshot s/prx
	run --separate-stderr setpriv --reuid=daemon --regid=daemon --clear-groups \
	    "$PONYWRITE" s/prx < <(echo secret)
	assert_status 1
	assert_stderr_has "not writing to a file that nobody (65534) owns in the sticky directory"
	assert_untouched s/prx
	# The file's owner may.
	run --separate-stderr as_nobody "$PONYWRITE" s/prx < <(echo mine)
	assert_status 0
	assert_quiet
	assert_content s/prx $'mine\n'
	# A file of the directory's owner (root) may be replaced by root.
	echo old > s/rootfile
	chmod 0666 s/rootfile
	run --separate-stderr "$PONYWRITE" s/rootfile < <(echo new)
	assert_status 0
	assert_content s/rootfile $'new\n'
	# A new file is no one's plant.
	run --separate-stderr setpriv --reuid=daemon --regid=daemon --clear-groups \
	    "$PONYWRITE" s/fresh < <(echo new)
	assert_status 0
	assert_owner s/fresh 1 1
	assert_no_litter
}

# Issue 52: with the sysctl at 0 (as in many containers) root's secret went
# into nobody's planted 0666 file in a sticky world-writable directory.
@test "protected_regular: world-writable sticky directories whatever the sysctl says (0 too), group-writable ones when it is 2" {
	protected_regular 1
	mkdir -m 1777 w
	mkdir -m 1770 g
	for d in w g; do
		echo planted > $d/f
		chown nobody:nogroup $d/f
		chmod 0666 $d/f
	done
	run --separate-stderr "$PONYWRITE" w/f < <(echo x)
	assert_status 1
	run --separate-stderr "$PONYWRITE" g/f < <(echo x)
	assert_status 0
	assert_content g/f $'x\n'
	sysctl -q -w fs.protected_regular=2
	chown nobody:nogroup g/f
	run --separate-stderr "$PONYWRITE" g/f < <(echo y)
	assert_status 1
	assert_content g/f $'x\n'
	sysctl -q -w fs.protected_regular=0
	snapshot w/f
	run --separate-stderr "$PONYWRITE" w/f < <(echo secret)
	assert_status 1
	assert_stderr "ponywrite: w/f: not writing to a file that nobody (65534) owns in the sticky directory w"
	assert_untouched w/f
	run --separate-stderr "$PONYWRITE" --check w/f </dev/null
	assert_status 1
	assert_stderr_has "not writing to a file that nobody (65534) owns"
	run --separate-stderr "$PONYWRITE" g/f < <(echo z)
	assert_status 0
	assert_content g/f $'z\n'
	assert_no_litter
}

# Issue 52: -b renamed the old file over daemon's own t~ in a sticky
# directory, which root may do and the sticky bit forbids any other user.
@test "-b in a sticky directory: another user's TARGET~ is not replaced, by root or by a user; --check says so (root)" {
	require_nobody
	mkdir -m 1777 s
	echo old > s/t
	chmod 0666 s/t
	echo daemons > 's/t~'
	chown daemon:daemon 's/t~'
	snapshot s/t 's/t~'
	why="ponywrite: s/t~: not replacing a file that daemon (1) owns in the sticky directory s"
	run --separate-stderr "$PONYWRITE" -b s/t < <(echo new)
	assert_status 1
	assert_stderr "$why"
	run --separate-stderr "$PONYWRITE" --check -b s/t </dev/null
	assert_status 1
	assert_stderr_has "$why"
	printf 's/t\0new\0' >list
	echo new > new
	run --separate-stderr "$PONYWRITE" -b --batch=list
	assert_status 1
	assert_stderr_has "$why"
	chown nobody:nogroup s/t
	snapshot s/t
	run --separate-stderr as_nobody "$PONYWRITE" -b s/t < <(echo new)
	assert_status 1
	assert_stderr "$why"
	assert_untouched s/t 's/t~'
	assert_no_litter
	# The caller's own TARGET~, and a link there, are replaced.
	chown nobody:nogroup 's/t~'
	run --separate-stderr as_nobody "$PONYWRITE" -b s/t < <(echo new)
	assert_status 0
	assert_content 's/t~' $'old\n'
	assert_content s/t $'new\n'
}

# Issue 54 (and the review of issue 53): in a sticky directory only the
# file's owner, the directory's, or CAP_FOWNER may rename over a name (the
# kernel's check_sticky).  A user who may write root's 0666 file there got
# the rename refused late: a batch stopped with exit 4 after replacing
# others, and where the old file is kept linked (no journal, FUSE) a link to
# root's file was left that the user could not remove.  Found first now.
@test "sticky directory: a rename the sticky bit refuses is found before anything is written, in a batch too, and by --check" {
	require_nobody
	mkdir -m 1777 s
	echo rootold > s/r
	chmod 0666 s/r
	echo mine > s/m
	chown nobody:nogroup s/m
	printf 'new\n' > src
	chmod 0644 src
	local msg="ponywrite: s/r: cannot be replaced: the sticky directory lets only its owner or the file's rename over it: Operation not permitted"
	run --separate-stderr as_nobody "$PONYWRITE" -o nobody:nogroup -i src s/r
	assert_status 1
	assert_stderr "$msg"
	assert_content s/r $'rootold\n'
	# a batch: nothing replaced (it stopped after replacing s/m, exit 4)
	printf 's/m\0src\0s/r\0src\0' > list
	run --separate-stderr as_nobody "$PONYWRITE" -o nobody:nogroup --batch=list
	assert_status 1
	[[ $stderr == "$msg"*"nothing replaced: 1 of 2 targets failed" ]] || fail "stderr: $stderr"
	assert_content s/m $'mine\n'
	assert_content s/r $'rootold\n'
	run --separate-stderr as_nobody "$PONYWRITE" --check -o nobody:nogroup --batch=list
	assert_status 1
	[[ $output == *$'fail\t-\t-\t-\t-\t-\ts/r'* ]] || fail "--check: $output"
	# -C: only a change needs the rename; --check warns
	run --separate-stderr as_nobody "$PONYWRITE" --check -C -g root s/r
	[[ $stderr == *"a run fails unless nothing changes (-C): the sticky directory"* ]] ||
	    fail "--check -C: $stderr"
	# the owner of the file, and root (CAP_FOWNER), may
	run --separate-stderr as_nobody "$PONYWRITE" -i src s/m
	assert_status 0
	assert_content s/m $'new\n'
	run "$PONYWRITE" -i src s/r
	assert_status 0
	assert_content s/r $'new\n'
	assert_no_litter s
}

# Issue 54, item 3: root's t~ in root's sticky directory is no plant (the
# directory's owner is trusted), but the sticky bit still refuses nobody the
# rename over it: -b replaced t, then failed (exit 3), the old t left under
# a hidden name.  Found first now, in a batch and by --check too.
@test "-b in a sticky directory: a TARGET~ the sticky bit keeps the caller from renaming over is found before anything is written" {
	require_nobody
	mkdir -m 1777 s
	echo mine > s/t
	chown nobody:nogroup s/t
	echo rootbak > 's/t~'
	echo new > new
	chmod 0644 new
	local why="ponywrite: s/t: cannot make backup: the sticky directory lets only its owner or the file's rename over t~: Operation not permitted"
	run --separate-stderr as_nobody "$PONYWRITE" -b -i new s/t
	assert_status 1
	assert_stderr "$why"
	run --separate-stderr as_nobody "$PONYWRITE" --check -b s/t </dev/null
	assert_status 1
	assert_stderr_has "$why"
	printf 's/t\0new\0' >list
	run --separate-stderr as_nobody "$PONYWRITE" -b --batch=list
	assert_status 1
	assert_stderr_has "$why"
	assert_content s/t $'mine\n'
	assert_content 's/t~' $'rootbak\n'
	assert_no_litter s
	# the owner of t~ may
	chown nobody:nogroup 's/t~'
	run --separate-stderr as_nobody "$PONYWRITE" -b -i new s/t
	assert_status 0
	assert_content 's/t~' $'mine\n'
	assert_content s/t $'new\n'
}

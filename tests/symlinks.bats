#!/usr/bin/env bats
# Symbolic links: followed to the real file, -P, the sticky-directory rule.

load helpers

@test "a link is followed: the real file is replaced, the link stays" {
	mkdir real
	echo old > real/f
	chmod 0640 real/f
	ln -s real/f link
	old=$(inode real/f)
	snapshot link
	run --separate-stderr "$PONYWRITE" link < <(echo new)
	assert_status 0
	assert_quiet
	assert_untouched link
	assert_regular real/f
	assert_content real/f $'new\n'
	assert_mode real/f 640
	[ "$(inode real/f)" != "$old" ] || fail "real/f not replaced by rename"
	[ "$(ls -A real)" = f ] || fail "real holds: $(ls -A real)"
	assert_no_litter
}

@test "the temporary file is made in the real file's directory" {
	mkdir real here
	echo old > real/f
	ln -s ../real/f here/link
	start_slow here/link
	printf 'x' >&9
	tmp=$(temp_of "$PW_PID" real)
	[[ ${tmp##*/} == .f.* ]] || fail "temporary name ${tmp##*/} is not after the real file"
	[ -z "$(ls -A here | grep -v '^link$')" ] || fail "here holds: $(ls -A here)"
	printf 'y\n' >&9
	finish_slow
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	assert_symlink here/link
	assert_content real/f $'xy\n'
	assert_no_litter
}

@test "a chain of links is followed to the end" {
	mkdir a b c
	echo old > c/f
	ln -s ../c/f b/l2
	ln -s ../b/l2 a/l1
	ln -s a/l1 l0
	snapshot l0 a/l1 b/l2
	run --separate-stderr "$PONYWRITE" l0 < <(echo new)
	assert_status 0
	assert_quiet
	assert_untouched l0 a/l1 b/l2
	assert_content c/f $'new\n'
	assert_no_litter
}

@test "a chain of 20 links works" {
	echo old > f0
	for i in $(seq 1 20); do
		ln -s "f$((i - 1))" "f$i"
	done
	run --separate-stderr "$PONYWRITE" f20 < <(echo new)
	assert_status 0
	assert_content f0 $'new\n'
	assert_symlink f1
	assert_symlink f20
	assert_no_litter
}

@test "an absolute link is followed" {
	mkdir real
	echo old > real/f
	ln -s "$WORK/real/f" link
	run --separate-stderr "$PONYWRITE" link < <(echo new)
	assert_status 0
	assert_symlink link
	assert_content real/f $'new\n'
	assert_no_litter
}

@test "relative links resolve from the link's real directory, like the kernel" {
	# x/y/a/l -> ../c/f is x/y/c/f even when reached through the link a -> x/y/a;
	# a textual a/../c/f would be c/f.
	mkdir -p x/y/a x/y/c c
	echo old > x/y/c/f
	ln -s x/y/a a
	ln -s ../c/f x/y/a/l
	[ "$(readlink -f a/l)" = "$WORK/x/y/c/f" ]
	run --separate-stderr "$PONYWRITE" a/l < <(echo new)
	assert_status 0
	assert_quiet
	assert_content x/y/c/f $'new\n'
	[ -z "$(ls -A c)" ] || fail "wrote into c/: $(ls -A c)"
	assert_symlink x/y/a/l
	assert_no_litter
}

@test "a symbolic link in the directory part is followed" {
	mkdir real
	echo old > real/f
	ln -s real dir
	start_slow dir/f
	printf 'x' >&9
	tmp=$(temp_of "$PW_PID" real)
	printf '\n' >&9
	finish_slow
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	assert_symlink dir
	assert_content real/f $'x\n'
	assert_no_litter
}

@test "a dangling link creates its target" {
	mkdir a b
	ln -s ../b/new a/link
	ln -s here.txt local
	snapshot a/link local
	run --separate-stderr "$PONYWRITE" -v a/link < <(echo one)
	assert_status 0
	assert_stderr "ponywrite: a/link: created"
	assert_untouched a/link
	assert_regular b/new
	assert_content b/new $'one\n'
	assert_mode b/new 644
	run --separate-stderr "$PONYWRITE" local < <(echo two)
	assert_status 0
	assert_quiet
	assert_untouched local
	assert_content here.txt $'two\n'
	assert_no_litter
}

@test "-P replaces the link itself with a regular file" {
	echo old > real
	chmod 0600 real
	ln -s real link
	ln -s nowhere dangling
	snapshot real
	run --separate-stderr "$PONYWRITE" -P link < <(echo new)
	assert_status 0
	assert_quiet
	assert_regular link
	assert_content link $'new\n'
	assert_mode link 644
	assert_untouched real
	run --separate-stderr "$PONYWRITE" --no-dereference dangling < <(echo new)
	assert_status 0
	assert_regular dangling
	[ ! -e nowhere ] || fail "-P created the link's target"
	assert_no_litter
}

@test "a loop of links fails with ELOOP" {
	ln -s b a
	ln -s a b
	ln -s self self
	snapshot a b self
	run --separate-stderr "$PONYWRITE" a < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: a: $E_LOOP"
	run --separate-stderr "$PONYWRITE" self < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: self: $E_LOOP"
	assert_untouched a b self
	assert_no_litter
}

@test "a link to a directory is not a regular file" {
	mkdir d
	ln -s d link
	snapshot d link
	run --separate-stderr "$PONYWRITE" link < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: link: not a regular file"
	assert_untouched d link
	[ -z "$(ls -A d)" ] || fail "d holds: $(ls -A d)"
	assert_no_litter
}

# A sticky world-writable directory s owned by root; victim outside it.
sticky_setup()
{
	require_nobody
	mkdir -m 1777 s
	echo victim > victim
	chmod 0666 victim
}

@test "sticky world-writable dir: a link owned by someone else is refused (root)" {
	sticky_setup
	ln -s "$WORK/victim" s/evil
	chown -h nobody:nogroup s/evil
	ln -s "$WORK/created" s/dangling
	chown -h nobody:nogroup s/dangling
	ln -s s/evil indirect
	snapshot victim s/evil s/dangling indirect created
	run --separate-stderr "$PONYWRITE" s/evil < <(echo pwned)
	assert_status 1
	assert_stderr "ponywrite: s/evil: not following a link that nobody (65534) owns in the sticky directory s"
	run --separate-stderr "$PONYWRITE" s/dangling < <(echo pwned)
	assert_status 1
	assert_stderr "ponywrite: s/dangling: not following a link that nobody (65534) owns in the sticky directory s"
	run --separate-stderr "$PONYWRITE" indirect < <(echo pwned)
	assert_status 1
	assert_stderr_has "not following a link that "
	assert_untouched victim s/evil s/dangling indirect created
	assert_no_litter
}

# A batch walks the directory of a run of sources in it once: each source
# there is still opened by the sticky-directory rule, and a refusal still
# names the directory.
@test "a batch's sources in one sticky directory: a link another user planted there refused, the directory named, nothing replaced (root)" {
	sticky_setup
	echo fine > s/ok
	ln -s "$WORK/victim" s/evil
	chown -h nobody:nogroup s/evil
	mkdir d
	printf '%s\0' d/a s/ok d/b s/evil d/c s/ok d/e ./s/ok >list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 1
	assert_stderr "ponywrite: s/evil: not following a link that nobody (65534) owns in the sticky directory s
ponywrite: nothing replaced: 1 of 4 targets failed"
	[ -z "$(ls -A d)" ] || fail "made $(ls -A d)"
	printf '%s\0' d/a s/ok d/b s/missing d/c ./s/ok >list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 1
	assert_stderr "ponywrite: s/missing: No such file or directory
ponywrite: nothing replaced: 1 of 3 targets failed"
	printf '%s\0' d/a s/ok d/c ./s/ok d/b s/ok >list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 0
	assert_content d/b $'fine\n'
	assert_content victim $'victim\n'
}

@test "sticky world-writable dir: links owned by the caller or the dir owner are followed (root)" {
	sticky_setup
	ln -s "$WORK/victim" s/mine
	run --separate-stderr "$PONYWRITE" s/mine < <(echo one)
	assert_status 0
	assert_quiet
	assert_symlink s/mine
	assert_content victim $'one\n'
	# Directory owned by nobody, link owned by nobody, caller root.
	mkdir -m 1777 s2
	chown nobody:nogroup s2
	ln -s "$WORK/victim" s2/theirs
	chown -h nobody:nogroup s2/theirs
	run --separate-stderr "$PONYWRITE" s2/theirs < <(echo two)
	assert_status 0
	assert_content victim $'two\n'
	# Sticky but not world-writable: the rule does not apply.
	mkdir -m 1775 s3
	ln -s "$WORK/victim" s3/other
	chown -h nobody:nogroup s3/other
	run --separate-stderr "$PONYWRITE" s3/other < <(echo three)
	assert_status 0
	assert_content victim $'three\n'
	assert_no_litter
}

@test "sticky world-writable dir, as nobody: root's link followed, a stranger's refused (root)" {
	sticky_setup
	mkdir vd
	echo old > vd/f
	chown -R nobody:nogroup vd
	ln -s "$WORK/vd/f" s/rootlink
	ln -s "$WORK/vd/f" s/stranger
	chown -h 12345:12345 s/stranger
	snapshot vd/f
	run --separate-stderr as_nobody "$PONYWRITE" s/stranger < <(echo pwned)
	assert_status 1
	assert_stderr "ponywrite: s/stranger: not following a link that uid 12345 owns in the sticky directory s"
	assert_untouched vd/f
	run --separate-stderr as_nobody "$PONYWRITE" s/rootlink < <(echo new)
	assert_status 0
	assert_quiet
	assert_content vd/f $'new\n'
	assert_owner vd/f 65534 65534
	assert_no_litter
}

# protected_symlinks 0: the kernel's own default, so that the kernel does
# not apply the rule for ponywrite; restored by teardown.
symlinks_sysctl_off()
{
	[ -w /proc/sys/fs/protected_symlinks ] ||
	    skip "cannot set fs.protected_symlinks"
	PW_SYMLINKS=$(cat /proc/sys/fs/protected_symlinks)
	sysctl -q -w fs.protected_symlinks=0
}

teardown()
{
	if [ -n "${PW_SYMLINKS:-}" ]; then
		sysctl -q -w fs.protected_symlinks="$PW_SYMLINKS"
	fi
	pw_teardown
}

# Every form that opens a path, run by CALLER on what nobody planted: the
# link s/evil -> vdir (CALLER's directory) is refused, vdir untouched.
refused_forms()
{
	local form
	local -a caller=("$@")
	printf '%s\0' s/evil/conf s/evil/made >list
	echo src >src
	# -i: the planted link must not lead root to read the victim either.
	for form in "s/evil/conf" "-p s/evil/conf" "-p s/evil/new/conf" \
	    "-l s/evil/conf" "-a s/evil/conf" "-t s/evil src" "--batch=list" \
	    "-i s/evil/conf out" "-t . s/evil/conf"; do
		# shellcheck disable=SC2086
		run --separate-stderr "${caller[@]}" "$PONYWRITE" $form < <(echo evil)
		[ "$status" -ge 1 ] || fail "$form: followed the planted link (status 0)"
		assert_stderr_has "ponywrite: s/evil: not following a link that nobody (65534) owns in the sticky directory s"
		assert_untouched vdir/conf
		[ "$(ls -A vdir)" = conf ] || fail "$form: made $(ls -A vdir)"
		[ ! -e out ] && [ ! -e conf ] || fail "$form: read the victim"
	done
	# Deeper: a link of ours that leads through the planted one.
	run --separate-stderr "${caller[@]}" "$PONYWRITE" via/conf < <(echo evil)
	assert_status 1
	assert_stderr "ponywrite: s/evil: not following a link that nobody (65534) owns in the sticky directory s"
	assert_untouched vdir/conf
}

@test "a link to a directory planted in a sticky directory is not followed on the way, whatever the sysctl, by root or another user" {
	require_nobody
	symlinks_sysctl_off
	mkdir -m 1777 s
	mkdir vdir
	echo victim > vdir/conf
	as_nobody ln -s "$WORK/vdir" s/evil
	ln -s s/evil via
	# The kernel alone follows it now: this test can fail.
	run bash -c 'echo x >> s/evil/conf'
	[ "$status" -eq 0 ] || fail "the kernel refused: this test proves nothing"
	echo victim > vdir/conf
	snapshot vdir/conf
	refused_forms
	# A second user (daemon), whose directory vdir is, run where it may
	# write: the same with the sysctl at 0 and at 1.
	chown -R daemon:daemon vdir
	chown -h daemon:daemon via
	chmod 0777 .
	snapshot vdir/conf
	refused_forms setpriv --reuid=daemon --regid=daemon --clear-groups --
	sysctl -q -w fs.protected_symlinks=1
	refused_forms setpriv --reuid=daemon --regid=daemon --clear-groups --
	refused_forms
	assert_no_litter
}

@test "a directory link of the caller or of the sticky directory's owner is followed on the way" {
	require_nobody
	symlinks_sysctl_off
	mkdir -m 1777 s
	mkdir -m 0777 n
	ln -s "$WORK/n" s/rootlink		# the directory's owner's
	as_nobody ln -s "$WORK/n" s/ownlink	# the caller's below
	run --separate-stderr as_nobody "$PONYWRITE" s/rootlink/a < <(echo A)
	assert_status 0
	assert_content n/a $'A\n'
	run --separate-stderr as_nobody "$PONYWRITE" -p s/ownlink/sub/b < <(echo B)
	assert_status 0
	assert_content n/sub/b $'B\n'
	# A second user does not trust nobody's link.
	run --separate-stderr setpriv --reuid=daemon --regid=daemon --clear-groups -- \
	    "$PONYWRITE" s/ownlink/c < <(echo C)
	assert_status 1
	assert_stderr_has "not following a link that "
	[ ! -e n/c ] || fail "daemon followed nobody's link"
	assert_no_litter
}

# Issue 52: the list of --batch=LIST is opened by the same rule as every other
# path, so a link another user planted cannot make root read a list of its
# choosing.
@test "--batch=LIST follows another user's link in a sticky directory no more than -i does (root)" {
	require_nobody
	symlinks_sysctl_off
	mkdir -m 1777 s
	echo old > victim
	echo new > src
	printf '%s\0' victim src > rootlist
	chmod 0600 rootlist
	as_nobody ln -s "$WORK/rootlist" s/list
	as_nobody ln -s "$WORK/victim" s/evil
	echo old > target
	snapshot victim target
	run --separate-stderr "$PONYWRITE" -i s/evil target
	assert_status 1
	assert_stderr "ponywrite: s/evil: not following a link that nobody (65534) owns in the sticky directory s"
	assert_untouched target
	run --separate-stderr "$PONYWRITE" --batch=s/list
	assert_status 1
	assert_stderr_has "s/list: not following a link that nobody (65534) owns in the sticky directory s"
	assert_untouched victim
	assert_no_litter
}

# Issue 52: --check walks a source as the run does, so a planted link to
# something that is not a regular file is refused by the link's rule first,
# with the run's message, not passed over because --check does not read it.
@test "--check refuses a planted link to a source as a run does: to /dev/null, to a FIFO (root)" {
	require_nobody
	mkdir -m 1777 s
	mkfifo fifo
	echo old > target
	as_nobody ln -s /dev/null s/evil
	as_nobody ln -s "$WORK/fifo" s/pipe
	snapshot target
	for l in s/evil s/pipe; do
		run --separate-stderr timeout 10 "$PONYWRITE" -i "$l" target
		assert_status 1
		assert_stderr "ponywrite: $l: not following a link that nobody (65534) owns in the sticky directory s"
		run --separate-stderr timeout 10 "$PONYWRITE" --check -i "$l" target
		assert_status 1
		assert_stderr "ponywrite: $l: not following a link that nobody (65534) owns in the sticky directory s"
		assert_untouched target
	done
	assert_no_litter
}

@test "links in /proc stand for open files: /dev/stdout and a deleted file's fd are refused" {
	echo old > file
	snapshot file
	run bash -c '"$0" /dev/stdout < <(echo new) > file' "$PONYWRITE"
	assert_status 1
	[[ $output == *"ponywrite: /dev/stdout: refusing to follow a link in /proc: it stands for an open file, which cannot be replaced"* ]] ||
	    fail "message: $output"
	exec 5>deleted
	rm deleted
	run --separate-stderr "$PONYWRITE" /proc/self/fd/5 < <(echo new)
	exec 5>&-
	assert_status 1
	assert_stderr "ponywrite: /proc/self/fd/5: refusing to follow a link in /proc: it stands for an open file, which cannot be replaced"
	[ -z "$(ls -A)" ] || [ "$(ls -A)" = file ] || fail "created: $(ls -A)"
	[ ! -e "deleted (deleted)" ] || fail "created 'deleted (deleted)'"
	assert_no_litter
}

@test "a magic link in the directory part is the kernel's: /proc/self/cwd/file works" {
	echo old > file
	run --separate-stderr "$PONYWRITE" /proc/self/cwd/file < <(echo new)
	assert_status 0
	assert_content file $'new\n'
	assert_no_litter
}

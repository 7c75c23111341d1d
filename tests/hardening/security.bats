#!/usr/bin/env bats
# Security properties of ponywrite: how the temporary file is named, created
# and given its metadata; that nothing is looked up again by path once
# checked; the protected_symlinks rule; backups never followed; the
# environment ignored; descriptors and shells kept away from a command.
#
#	PONYWRITE=./ponywrite bats tests/hardening/security.bats
#
# Most tests watch ponywrite with strace; those skip without it.  Tests that
# need another user run as root (CI) and skip otherwise.

# Single quotes keep shell syntax literal on purpose throughout.
# shellcheck disable=SC2016

PONYWRITE=${PONYWRITE:-$BATS_TEST_DIRNAME/../../ponywrite}
load ../helpers

# trace OUT [strace option...] -- ARG...: run ponywrite ARG... under strace
# -f -y into $BATS_TEST_TMPDIR/OUT; its status in $status, stderr in $stderr.
trace()
{
	local out=$BATS_TEST_TMPDIR/$1
	shift
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	status=0
	strace -f -qq -y -o "$out" "${opts[@]}" "$PONYWRITE" "$@" \
	    2>"$BATS_TEST_TMPDIR/stderr" || status=$?
	stderr=$(cat "$BATS_TEST_TMPDIR/stderr")
}

# The lines of a trace that create the temporary file.
temp_creations()
{
	grep -E 'openat\(.*O_CREAT.*O_EXCL' "$BATS_TEST_TMPDIR/$1" || :
}

# Run ponywrite under strace with an injected delay of 1.5 s in the Nth call
# of SYSCALL, N counted in a first, undelayed run on a copy of WORK.  Used
# to change the file system while ponywrite is stopped between two steps.
# Standard input is $BATS_TEST_TMPDIR/input.
#   delayed_start SYSCALL PATTERN ARG...   (PATTERN picks the call in the trace)
delayed_start()
{
	local call=$1 pattern=$2 n
	shift 2
	rm -rf "$BATS_TEST_TMPDIR/dry"
	cp -a "$WORK" "$BATS_TEST_TMPDIR/dry"
	(cd "$BATS_TEST_TMPDIR/dry" && strace -qq -o "$BATS_TEST_TMPDIR/count" \
	    -e trace="$call" "$PONYWRITE" "$@" <"$BATS_TEST_TMPDIR/input" \
	    >/dev/null 2>&1) || :
	n=$(grep -n -E "$pattern" "$BATS_TEST_TMPDIR/count" | head -n 1 | cut -d: -f1)
	[ -n "$n" ] || fail "no $call matching $pattern in a first run"
	PW_DELAYED_STATUS=$BATS_TEST_TMPDIR/delayed.status
	(
		status=0
		strace -qq -o "$BATS_TEST_TMPDIR/delayed.trace" -e trace="$call" \
		    -e inject="$call":delay_enter=1500000:when="$n" \
		    "$PONYWRITE" "$@" <"$BATS_TEST_TMPDIR/input" \
		    2>"$BATS_TEST_TMPDIR/delayed.err" || status=$?
		echo "$status" >"$PW_DELAYED_STATUS"
	) &
	PW_PID=$!
	# Wait until ponywrite is in the delayed call.
	for _ in $(seq 100); do
		grep -q . "$BATS_TEST_TMPDIR/delayed.trace" 2>/dev/null &&
		    [ "$(wc -l <"$BATS_TEST_TMPDIR/delayed.trace")" -ge $((n - 1)) ] &&
		    break
		sleep 0.02
	done
	sleep 0.3
}

delayed_finish()
{
	wait "$PW_PID" || :
	PW_PID=
	status=$(cat "$PW_DELAYED_STATUS")
	stderr=$(cat "$BATS_TEST_TMPDIR/delayed.err")
}

setup()
{
	pw_setup
	# strace -y prints resolved paths.
	REAL=$(pwd -P)
}

teardown()
{
	pw_teardown
}

# --- 1. The temporary file: unpredictable name, exclusive creation -------

@test "temporary file: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600, in the target's directory" {
	require_cmd strace
	mkdir d
	echo old > d/t
	echo new > "$BATS_TEST_TMPDIR/input"
	trace t.trace -e trace=openat,open,creat,getrandom -- d/t <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	local c
	c=$(temp_creations t.trace)
	[ "$(printf '%s\n' "$c" | grep -c .)" -eq 1 ] ||
	    fail "expected one exclusive creation, got: $c"
	case $c in
	*O_NOFOLLOW*) ;; *) fail "no O_NOFOLLOW: $c" ;;
	esac
	case $c in
	*O_CLOEXEC*) ;; *) fail "no O_CLOEXEC: $c" ;;
	esac
	case $c in
	*", 0600) = "*) ;; *) fail "not created 0600: $c" ;;
	esac
	# Relative to the directory's descriptor, a plain hidden name.
	[[ $c =~ openat\([0-9]+\<$REAL/d\>,\ \"\.t\.[A-Za-z0-9_-]{12}\" ]] ||
	    fail "not .t.RANDOM in $REAL/d by its descriptor: $c"
	# The random part comes from getrandom, asked just before.
	grep -B1 -E 'O_CREAT.*O_EXCL' "$BATS_TEST_TMPDIR/t.trace" |
	    grep -qE 'getrandom\(.*, 12, 0\) = 12' ||
	    fail "no getrandom(12) right before the creation"
	assert_content d/t $'new\n'
	assert_no_litter
}

@test "temporary file: created 0600, so no one but its owner has any access" {
	require_cmd strace
	local m
	echo x > "$BATS_TEST_TMPDIR/input"
	# Owner-only whatever the final mode: the owner may need to write the
	# attributes of a read-only file (0400) before the final mode is set.
	for m in 0400 0640 0604 0000 0200 4700; do
		rm -f "t$m"
		echo old > "t$m"
		chmod "$m" "t$m"
		trace c.trace -e trace=openat -- "t$m" <"$BATS_TEST_TMPDIR/input"
		assert_status 0
		temp_creations c.trace | grep -qE ", 0600\) = [0-9]" ||
		    fail "target mode $m: temp not created 0600: $(temp_creations c.trace)"
		assert_mode "t$m" "$m"
	done
	# A new file under umask 0277: 0600 less the umask, readable by its
	# owner only.
	run --separate-stderr bash -c 'umask 0277; exec strace -qq -o "$1" -e trace=openat "$2" new' \
	    _ "$BATS_TEST_TMPDIR/u.trace" "$PONYWRITE" <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	temp_creations u.trace | grep -qE ', 0600\) = [0-9]' ||
	    fail "umask 0277: $(temp_creations u.trace)"
	assert_mode new 400
	assert_no_litter
}

@test "temporary and backup names differ from run to run" {
	require_cmd strace
	echo old > t
	echo x > "$BATS_TEST_TMPDIR/input"
	: >"$BATS_TEST_TMPDIR/names"
	for _ in $(seq 20); do
		trace n.trace -e trace=openat,linkat -- -b t <"$BATS_TEST_TMPDIR/input"
		assert_status 0
		grep -oE '"\.t~?\.[A-Za-z0-9_-]{12}"' "$BATS_TEST_TMPDIR/n.trace" \
		    >>"$BATS_TEST_TMPDIR/names"
	done
	# Each run: the temporary file, the link that proves the file system
	# has hard links (made and removed at once), the backup's link.
	[ "$(wc -l <"$BATS_TEST_TMPDIR/names")" -eq 60 ] ||
	    fail "expected 60 names: $(cat "$BATS_TEST_TMPDIR/names")"
	[ "$(sort -u "$BATS_TEST_TMPDIR/names" | wc -l)" -eq 60 ] ||
	    fail "a name was used twice: $(sort "$BATS_TEST_TMPDIR/names" | uniq -d)"
	assert_no_litter "$WORK" t~
}

@test "an existing file with the temporary name is never opened or removed" {
	require_cmd strace
	# Plant files under every name a first run used; a second run whose
	# random part collided would have to pick another name, not reuse one.
	echo old > t
	echo x > "$BATS_TEST_TMPDIR/input"
	trace p.trace -e trace=openat,unlinkat -- t <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	! grep -E 'openat\(.*O_CREAT' "$BATS_TEST_TMPDIR/p.trace" | grep -v O_EXCL ||
	    fail "a file was created without O_EXCL"
	! grep -q 'O_TRUNC' "$BATS_TEST_TMPDIR/p.trace" || fail "O_TRUNC used"
}

# --- 2. Nothing looked up again by path -----------------------------------

# Every call that takes a path, after the target's directory is open, must
# name an entry of a directory it holds open: a descriptor and no slash.
assert_only_at_calls()
{
	local f=$BATS_TEST_TMPDIR/$1 line bad=
	local calls='open|openat|openat2|creat|stat|lstat|newfstatat|fstatat64|statx|access|faccessat|faccessat2|readlink|readlinkat|link|linkat|symlink|symlinkat|rename|renameat|renameat2|unlink|unlinkat|mkdir|mkdirat|rmdir|chmod|fchmodat|chown|lchown|fchownat|truncate|utimensat|getxattr|lgetxattr|setxattr|lsetxattr|listxattr|llistxattr|removexattr|lremovexattr'
	# The loader and the directory itself come before.
	awk -v dir="$2" 'seen { print } /O_DIRECTORY/ && index($0, "<" dir ">") { seen = 1 }' "$f" \
	    >"$f.after"
	[ -s "$f.after" ] || fail "directory $2 never opened: $(cat "$f")"
	while IFS= read -r line; do
		[[ $line =~ ^[0-9]+\ +($calls)\( ]] || continue
		case $line in
		*'"", '*AT_EMPTY_PATH*) continue ;;	# fstatat of a descriptor
		# The kernel's own files (does this ext4 have a journal? the
		# mount's options, its ID): no user can plant anything there.
		*'("/sys/'*|*', "/sys/'*) continue ;;
		*'("/proc/self/'*|*', "/proc/self/'*) continue ;;
		*AT_FDCWD*|*'("'*) bad="$bad
$line" ;;
		esac
		# Names must not contain a slash.
		if [[ $line =~ \>,\ \"[^\"]*/[^\"]*\" ]]; then
			bad="$bad
$line"
		fi
	done <"$f.after"
	[ -z "$bad" ] || fail "path looked up again after the checks:$bad"
}

@test "after opening the directory, every lookup is by descriptor and name" {
	require_cmd strace
	mkdir d
	echo old > d/t
	echo new > "$BATS_TEST_TMPDIR/input"
	local opts
	for opts in "" "-a" "-b" "-l" "-C" "-b -l -a -m u+x" "-v --no-sync"; do
		# shellcheck disable=SC2086
		trace at.trace -e trace=%file,%desc -- $opts d/t <"$BATS_TEST_TMPDIR/input"
		assert_status 0
		assert_only_at_calls at.trace "$REAL/d"
	done
	# A new target and a new target under -l.
	trace at.trace -e trace=%file,%desc -- -l d/new <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	assert_only_at_calls at.trace "$REAL/d"
	assert_no_litter "$WORK" t~
}

@test "the target swapped for a symbolic link after it was checked is not followed" {
	require_cmd strace
	echo old > t
	echo victim > victim
	echo new > "$BATS_TEST_TMPDIR/input"
	snapshot victim
	delayed_start openat '"t", O_RDONLY' t
	mv t t.orig
	ln -s victim t
	delayed_finish
	[ "$status" -ne 0 ] || fail "followed the swapped link (status 0)"
	assert_untouched victim
	assert_symlink t
	assert_no_litter
}

@test "the target swapped for a FIFO after it was checked: refused, no hang" {
	require_cmd strace timeout
	echo old > t
	echo new > "$BATS_TEST_TMPDIR/input"
	delayed_start openat '"t", O_RDONLY' t
	mv t t.orig
	mkfifo t
	delayed_finish
	[ "$status" -eq 1 ] || fail "status $status: $stderr"
	assert_stderr "ponywrite: t: not a regular file"
	[ -p t ] || fail "the FIFO was replaced"
	assert_no_litter
}

# --- 3. protected_symlinks ------------------------------------------------

# A root-owned sticky world-writable directory, like /tmp.
make_sticky()
{
	mkdir -m 1777 "$1"
	chown root:root "$1"
}

@test "sticky world-writable directory: another user's link is not followed" {
	require_nobody
	make_sticky s
	echo victim > victim
	chmod 0666 victim
	as_nobody ln -s "$WORK/victim" s/link
	snapshot victim s/link
	run --separate-stderr "$PONYWRITE" s/link < <(echo evil)
	assert_status 1
	assert_stderr "ponywrite: s/link: not following a link that nobody (65534) owns in the sticky directory s"
	assert_untouched victim s/link
	assert_no_litter
}

@test "sticky world-writable directory: links of the caller or of the directory's owner are followed" {
	require_nobody
	make_sticky s
	mkdir -m 0777 n
	echo one > n/a
	echo two > n/b
	chown nobody:nogroup n/a n/b
	ln -s "$WORK/n/a" s/rootlink			# owned by the directory's owner
	as_nobody ln -s "$WORK/n/b" s/ownlink		# owned by the caller below
	run --separate-stderr as_nobody "$PONYWRITE" s/rootlink < <(echo A)
	assert_status 0
	assert_content n/a $'A\n'
	run --separate-stderr as_nobody "$PONYWRITE" s/ownlink < <(echo B)
	assert_status 0
	assert_content n/b $'B\n'
	assert_symlink s/rootlink
	assert_symlink s/ownlink
	assert_no_litter
}

@test "protected_symlinks is applied at every hop of a chain" {
	require_nobody
	make_sticky s
	echo victim > victim
	chmod 0666 victim
	as_nobody ln -s "$WORK/victim" s/evil
	ln -s s/evil start				# ours, outside s
	snapshot victim
	run --separate-stderr "$PONYWRITE" start < <(echo evil)
	assert_status 1
	assert_stderr_has "not following a link that "
	assert_untouched victim
	assert_no_litter
}

@test "a dangling link of another user in a sticky directory creates nothing" {
	require_nobody
	make_sticky s
	as_nobody ln -s "$WORK/created-by-root" s/dangle
	run --separate-stderr "$PONYWRITE" s/dangle < <(echo evil)
	assert_status 1
	[ ! -e created-by-root ] || fail "the link's target was created"
	assert_no_litter
}

# --- 4. Backup names never followed ---------------------------------------

@test "-b: a symbolic link named TARGET~ is replaced, never followed" {
	echo old > t
	echo victim > victim
	mkdir vdir
	echo inside > vdir/f
	ln -s victim t~
	snapshot victim vdir/f
	run --separate-stderr "$PONYWRITE" -b t < <(echo new)
	assert_status 0
	assert_untouched victim
	assert_regular t~
	assert_content t~ $'old\n'
	assert_content t $'new\n'
	# A link to a directory is replaced too, and nothing lands inside.
	ln -sfn vdir t~
	run --separate-stderr "$PONYWRITE" -b t < <(echo newer)
	assert_status 0
	assert_regular t~
	assert_content t~ $'new\n'
	[ "$(ls vdir)" = f ] || fail "something was put in vdir: $(ls vdir)"
	assert_untouched vdir/f
	assert_no_litter
}

@test "-b: a dangling TARGET~ link does not create its target" {
	echo old > t
	ln -s "$WORK/made-by-backup" t~
	run --separate-stderr "$PONYWRITE" -b -S '~' t < <(echo new)
	assert_status 0
	[ ! -e made-by-backup ] || fail "the backup followed the dangling link"
	assert_regular t~
	assert_content t~ $'old\n'
	assert_no_litter
}

@test "-b: the backup is a hard link made by descriptor, not a copy" {
	require_cmd strace
	echo old > t
	local ino
	ino=$(inode t)
	echo new > "$BATS_TEST_TMPDIR/input"
	trace b.trace -e trace=linkat,link,renameat,renameat2,rename,openat -- -b t <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	[ "$(inode t~)" = "$ino" ] || fail "t~ is not the old inode"
	grep -qE '^[0-9]+ +linkat\([0-9]+<[^>]*>, "t", [0-9]+<[^>]*>, "\.t~\.[A-Za-z0-9_-]{12}", 0\)' \
	    "$BATS_TEST_TMPDIR/b.trace" || fail "no linkat to a hidden name: $(cat "$BATS_TEST_TMPDIR/b.trace")"
	! grep -q 'O_CREAT.*"t~"' "$BATS_TEST_TMPDIR/b.trace" || fail "t~ was opened for writing"
}

# --- 5. Owner before set-id bits ------------------------------------------

# The order of metadata calls on the temporary file, one word each.
metadata_calls()
{
	grep -oE '^[0-9]+ +(fchown|fchownat|chown|lchown|fchmod|fchmodat|chmod|fsetxattr|setxattr)\([^,]*' \
	    "$BATS_TEST_TMPDIR/$1" | sed -E 's/^[0-9]+ +//; s/\(.*//' | paste -sd ' ' -
}

@test "fchown comes before the only fchmod, which sets the final mode with its set-id bits" {
	require_cmd strace
	echo old > t
	chmod 6755 t
	echo new > "$BATS_TEST_TMPDIR/input"
	trace o.trace -e trace=openat,fchown,fchownat,chown,lchown,fchmod,fchmodat,chmod,fsetxattr,setxattr -- t <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	assert_mode t 6755
	[ "$(metadata_calls o.trace)" = "fchown fchmod" ] ||
	    fail "metadata calls: $(metadata_calls o.trace)"
	grep -qE 'fchmod\([0-9]+<[^>]*\.t\.[^>]*>, 06755\)' "$BATS_TEST_TMPDIR/o.trace" ||
	    fail "fchmod is not 06755 on the temporary file: $(grep fchmod "$BATS_TEST_TMPDIR/o.trace")"
	temp_creations o.trace | grep -qE ', 0600\) = ' ||
	    fail "set-id bits at creation: $(temp_creations o.trace)"
	assert_no_litter
}

@test "root, -o and -g: the new owner is set before the set-id bits" {
	require_nobody
	require_cmd strace
	echo new > "$BATS_TEST_TMPDIR/input"
	trace r.trace -e trace=fchown,fchownat,chown,lchown,fchmod,fchmodat,chmod,fsetxattr -- -o nobody -g nogroup -m 6750 t <"$BATS_TEST_TMPDIR/input"
	assert_status 0
	assert_mode t 6750
	assert_owner t "$(id -u nobody)" "$(getent group nogroup | cut -d: -f3)"
	# the group, then the owner given away, then the set-id mode (issue 56)
	[ "$(metadata_calls r.trace)" = "fchown fchown fchmod" ] ||
	    fail "metadata calls: $(metadata_calls r.trace)"
	assert_no_litter
}

# --- 6. Never more permissive than the final file -------------------------

# watch_modes TEMPGLOB: while ponywrite runs (delayed in fchmod), record every
# permission set the temporary file shows; print their union, in octal.
watch_modes()
{
	local seen=0 m f
	while [ ! -s "$PW_DELAYED_STATUS" ]; do
		for f in $1; do
			[ -f "$f" ] || continue
			m=$(stat -c %a "$f" 2>/dev/null) || continue
			seen=$((seen | 8#$m))
		done
		sleep 0.02
	done
	printf '%o\n' "$seen"
}

@test "-m tightening an existing mode: the temporary file is never looser than the result" {
	require_cmd strace
	echo old > t
	chmod 0644 t
	echo secret > "$BATS_TEST_TMPDIR/input"
	delayed_start fchmod 'fchmod' -m 0600 t
	local seen
	seen=$(watch_modes '.t.*')
	delayed_finish
	assert_status 0
	assert_mode t 0600
	[ $((8#$seen & ~0600 & 0777)) -eq 0 ] ||
	    fail "the temporary file had mode bits $seen beyond the final 0600"
	assert_no_litter
}

@test "an ACL and -m tightening: the temporary file is never looser than the result" {
	require_cmd strace setfacl getfacl
	echo old > t
	chmod 0644 t
	setfacl -m u:nobody:rw t 2>/dev/null || skip "no ACL support here"
	echo secret > "$BATS_TEST_TMPDIR/input"
	delayed_start fchmod 'fchmod' -m 0600 t
	local seen
	seen=$(watch_modes '.t.*')
	delayed_finish
	assert_status 0
	assert_mode t 0600
	# With an ACL the group bits show the mask, which limits user:nobody.
	[ $((8#$seen & ~0600 & 0777)) -eq 0 ] ||
	    fail "the temporary file, with the new content, had mode bits $seen beyond the final 0600: the old ACL was set on it before the mode (others and user:nobody could open it)"
	assert_no_litter
}

# --- 7. The environment changes nothing -----------------------------------

@test "TMPDIR and friends do not move the temporary file" {
	require_cmd strace
	mkdir d elsewhere
	echo old > d/t
	echo new > "$BATS_TEST_TMPDIR/input"
	status=0
	TMPDIR=/nonexistent "$PONYWRITE" d/t <"$BATS_TEST_TMPDIR/input" || status=$?
	assert_status 0
	assert_content d/t $'new\n'
	status=0
	TMPDIR=$WORK/elsewhere TMP=$WORK/elsewhere TEMP=$WORK/elsewhere \
	    TEMPDIR=$WORK/elsewhere HOME=$WORK/elsewhere \
	    strace -f -qq -y -o "$BATS_TEST_TMPDIR/e.trace" -e trace=%file \
	    "$PONYWRITE" d/t <"$BATS_TEST_TMPDIR/input" || status=$?
	assert_status 0
	! grep -q "$REAL/elsewhere" "$BATS_TEST_TMPDIR/e.trace" ||
	    fail "looked at \$TMPDIR: $(grep elsewhere "$BATS_TEST_TMPDIR/e.trace")"
	temp_creations e.trace | grep -q "<$REAL/d>" ||
	    fail "temporary file not in d: $(temp_creations e.trace)"
	[ -z "$(ls -A elsewhere)" ] || fail "elsewhere: $(ls -A elsewhere)"
	assert_no_litter
}

@test "messages are the same whatever the locale" {
	local l expected
	run --separate-stderr env -i LC_ALL=C "$PONYWRITE" no/such/dir/t </dev/null
	expected=$stderr
	assert_status 1
	for l in C.UTF-8 en_US.UTF-8 de_DE.UTF-8 fr_FR.UTF-8; do
		run --separate-stderr env -i LANG="$l" LC_ALL="$l" LANGUAGE=de \
		    "$PONYWRITE" no/such/dir/t </dev/null
		assert_status 1
		assert_stderr "$expected"
	done
}

# --- 8. Descriptors in command mode ---------------------------------------

# assert_same_fds OPTIONS [new]: the descriptors a command sees, as numbers,
# run directly and through ponywrite OPTIONS fds (a missing fds with "new",
# else an empty one), must match.
assert_same_fds()
{
	rm -f fds fds~
	[ "${2:-}" = new ] || : >fds
	local via direct
	ls /proc/self/fd >"$BATS_TEST_TMPDIR/direct"
	direct=$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/direct")
	# shellcheck disable=SC2086
	run --separate-stderr "$PONYWRITE" $1 fds ls /proc/self/fd
	assert_status 0
	via=$(tr '\n' ' ' <fds)
	[ "$via" = "$direct" ] ||
	    fail "ponywrite $1: the command saw descriptors $via where run directly it sees $direct"
}

@test "command mode: the command sees the descriptors it would see run directly" {
	assert_same_fds ""
	assert_same_fds "" new
	assert_same_fds "-a"
	assert_same_fds "-b"
	assert_same_fds "-l"
	assert_same_fds "-l" new
	assert_same_fds "-b -l -a -C"
	assert_same_fds "-p -v --no-sync" new
	assert_no_litter "$WORK" fds~
}

@test "command mode: the command's stdout is a pipe; the temporary file is not open in it" {
	echo old > t
	run --separate-stderr "$PONYWRITE" t sh -c 'for fd in /proc/$$/fd/*; do printf "%s -> %s\n" "${fd##*/}" "$(readlink "$fd")"; done'
	assert_status 0
	local n
	n=$(grep -c '/\.t\.' t || :)
	[ "$n" -eq 0 ] || fail "the temporary file is open $n times in the command:
$(cat t)"
	grep -q '^1 -> pipe:' t || fail "fd 1 is not a pipe: $(cat t)"
}

# --- 9. No shell ----------------------------------------------------------

@test "command mode runs the command itself, arguments verbatim, no shell" {
	require_cmd strace
	echo old > t
	trace x.trace -e trace=execve -- t printf '%s|' '$(touch pwned1)' '`touch pwned2`' '; touch pwned3' '*' '$HOME' </dev/null
	assert_status 0
	assert_content t '$(touch pwned1)|`touch pwned2`|; touch pwned3|*|$HOME|'
	[ ! -e pwned1 ] && [ ! -e pwned2 ] && [ ! -e pwned3 ] || fail "a shell ran"
	local execs
	execs=$(grep -E 'execve\(' "$BATS_TEST_TMPDIR/x.trace" | grep -v ENOENT |
	    sed -E 's/^[0-9]+ +execve\("([^"]*)".*/\1/')
	[ "$(printf '%s\n' "$execs" | grep -c .)" -eq 2 ] ||
	    fail "expected ponywrite and printf only, got: $execs"
	! printf '%s\n' "$execs" | grep -qE '/(sh|bash|dash)$' || fail "a shell was executed: $execs"
}

@test "a target name with shell metacharacters is used literally" {
	local name='$(touch pwned);`id`*?[a]'
	run --separate-stderr "$PONYWRITE" "$name" < <(echo x)
	assert_status 0
	assert_content "$name" $'x\n'
	[ ! -e pwned ] || fail "a shell ran"
	assert_no_litter
}

# --- -l lock files ---------------------------------------------------------

@test "-l: a file of the user's that has the lock file's name is not removed" {
	echo "my precious" > .new.lock
	run --separate-stderr "$PONYWRITE" -l new < <(echo x)
	assert_status 0
	[ -f .new.lock ] || fail "ponywrite -l removed the user's .new.lock"
	assert_content .new.lock $'my precious\n'
}

@test "-l: a FIFO planted under the lock file's name does not hang ponywrite" {
	require_cmd timeout
	mkfifo .new.lock
	run --separate-stderr timeout 10 "$PONYWRITE" -l new < <(echo x)
	[ "$status" -ne 124 ] || fail "ponywrite -l hung opening the FIFO .new.lock"
}

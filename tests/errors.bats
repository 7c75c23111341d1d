#!/usr/bin/env bats
# Failures: exit status, message, untouched target, no temporary file left.

load helpers
load features_helpers

# fails_untouched STATUS MESSAGE TARGET ARG...: run ponywrite ARG... with
# "new" on stdin; it must exit STATUS saying exactly MESSAGE, print nothing
# on stdout, and leave TARGET as it was and WORK without litter.
fails_untouched()
{
	local st=$1 msg=$2 target=$3
	shift 3
	snapshot "$target"
	run --separate-stderr "$PONYWRITE" "$@" < <(echo new)
	assert_status "$st"
	assert_stderr "$msg"
	[ -z "$output" ] || fail "stdout: $output"
	assert_untouched "$target"
	assert_no_litter
}

@test "target is a directory" {
	mkdir d
	touch d/inside
	fails_untouched 1 "ponywrite: d: not a regular file" d d
	[ "$(ls -A d)" = inside ] || fail "d holds: $(ls -A d)"
}

# The real /dev/null is only ever given to ponywrite without root (as nobody
# when we are root), so that a broken build cannot replace it.
@test "target is /dev/null" {
	unpriv_setup
	snapshot /dev/null
	run --separate-stderr unpriv "$PONYWRITE" /dev/null < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: /dev/null: not a regular file"
	run --separate-stderr unpriv "$PONYWRITE" -P /dev/null < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: /dev/null: not a regular file"
	assert_untouched /dev/null
	[ -c /dev/null ] || fail "/dev/null is no longer a character device"
	[ -z "$(find /dev -maxdepth 1 -name '.null*')" ] || fail "litter in /dev"
}

@test "a link to /dev/null is refused and stays a link" {
	ln -s /dev/null link
	unpriv_setup
	snapshot /dev/null link
	run --separate-stderr unpriv "$PONYWRITE" link < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: link: not a regular file"
	assert_untouched /dev/null link
	[ -z "$(find /dev -maxdepth 1 -name '.null*')" ] || fail "litter in /dev"
	assert_no_litter
}

@test "a character device is refused, even for root (root)" {
	require_mknod
	mknod -m 0666 null c 1 3
	ln -s null link
	snapshot null link
	run --separate-stderr "$PONYWRITE" -m 0644 -o root null < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: null: not a regular file"
	run --separate-stderr "$PONYWRITE" link < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: link: not a regular file"
	run --separate-stderr "$PONYWRITE" -P null < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: null: not a regular file"
	assert_untouched null link
	[ -c null ] || fail "null is no longer a character device"
	assert_no_litter
}

@test "/dev/null is refused for root (root, private /dev)" {
	require_root
	require_cmd unshare
	# A private tmpfs on /dev in a private mount namespace: whatever
	# ponywrite does to /dev/null there cannot reach the real one.
	unshare --mount --propagation private true 2>/dev/null ||
	    skip "no mount namespaces"
	out="$BATS_TEST_TMPDIR/ns"
	run --separate-stderr unshare --mount --propagation private sh -c '
	    mount -t tmpfs -o mode=0755 pwdev /dev || exit 99
	    mknod -m 0666 /dev/null c 1 3 || exit 99
	    st=0
	    "$1" /dev/null 2>"$2.err" || st=$?
	    stat -c "%F %t:%T" /dev/null > "$2.stat"
	    ls -A /dev > "$2.ls"
	    exit $st' _ "$PONYWRITE" "$out" < <(echo new)
	[ "$status" -ne 99 ] || skip "cannot mount a private /dev"
	assert_status 1
	[ "$(cat "$out.err")" = "ponywrite: /dev/null: not a regular file" ] ||
	    fail "stderr: $(cat "$out.err")"
	[ "$(cat "$out.stat")" = "character special file 1:3" ] ||
	    fail "/dev/null became: $(cat "$out.stat")"
	[ "$(cat "$out.ls")" = null ] || fail "litter in /dev: $(cat "$out.ls")"
	[ -c /dev/null ] || fail "the real /dev/null is no longer a character device"
}

@test "a trailing slash on a regular file is refused, message as typed" {
	echo old > t
	snapshot t
	run --separate-stderr "$PONYWRITE" t/ < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t/: Not a directory"
	assert_untouched t
	assert_no_litter
}

@test "'.', '..' and '/' are not regular files" {
	mkdir d
	unpriv_setup
	cd d
	snapshot . ..
	# "/" only without root: a broken build must not litter the real root.
	for bad in . / ..; do
		run --separate-stderr unpriv "$PONYWRITE" "$bad" < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: $bad: not a regular file"
	done
	run --separate-stderr "$PONYWRITE" . < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: .: not a regular file"
	assert_untouched . ..
	assert_no_litter "$WORK"
}

@test "an empty target name is refused" {
	run --separate-stderr "$PONYWRITE" '' < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: : No such file or directory"
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "target is a FIFO: refused without blocking" {
	mkfifo p
	snapshot p
	run --separate-stderr timeout 5 "$PONYWRITE" p < <(echo new)
	[ "$status" -ne 124 ] || fail "ponywrite blocked on the FIFO"
	assert_status 1
	assert_stderr "ponywrite: p: not a regular file"
	ln -s p link
	run --separate-stderr timeout 5 "$PONYWRITE" link < <(echo new)
	[ "$status" -ne 124 ] || fail "ponywrite blocked on the FIFO"
	assert_status 1
	assert_stderr "ponywrite: link: not a regular file"
	assert_untouched p
	[ -p p ] || fail "p is no longer a FIFO"
	assert_no_litter
}

@test "target is a socket" {
	require_cmd perl
	perl -MIO::Socket::UNIX -e '
	    IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $ARGV[0], Listen => 1)
		or die "$!\n"' sock
	[ -S sock ]
	fails_untouched 1 "ponywrite: sock: not a regular file" sock sock
	[ -S sock ] || fail "sock is no longer a socket"
}

@test "missing directory without -p: exit 1, nothing created" {
	fails_untouched 1 "ponywrite: nodir: No such file or directory" nodir nodir/t
	mkdir a
	fails_untouched 1 "ponywrite: a/b/c: No such file or directory" a/b a/b/c/t
	[ -z "$(ls -A a)" ] || fail "a holds: $(ls -A a)"
}

@test "missing directories with -p are created" {
	run --separate-stderr "$PONYWRITE" -p a/b/c/t < <(echo new)
	assert_status 0
	assert_quiet
	assert_content a/b/c/t $'new\n'
	assert_mode a 755
	assert_mode a/b/c 755
	run --separate-stderr "$PONYWRITE" --parents a/b/c/t < <(echo again)
	assert_status 0
	assert_content a/b/c/t $'again\n'
	assert_no_litter
}

@test "-p in a directory the user cannot write: the message names the directory it could not make and where" {
	unpriv_setup
	mkdir -p top/ro
	chmod 0555 top/ro
	run --separate-stderr unpriv "$PONYWRITE" -p top/ro/n1/n2/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: top/ro/n1/n2/t: cannot create directory top/ro/n1 in top/ro: Permission denied"
	run --separate-stderr unpriv "$PONYWRITE" -p "$WORK/top/ro/n1/t" < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: $WORK/top/ro/n1/t: cannot create directory $WORK/top/ro/n1 in $WORK/top/ro: Permission denied"
	cd top/ro
	run --separate-stderr unpriv "$PONYWRITE" -p n1/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: n1/t: cannot create directory n1 in .: Permission denied"
	[ -z "$(ls -A)" ] || fail "top/ro holds: $(ls -A)"
	cd "$WORK"
	# A directory on the way that can be searched but not read is passed,
	# as the kernel's walk passes it.
	mkdir -p sx/in
	chown nobody sx/in 2>/dev/null || :
	chmod 0711 sx
	run --separate-stderr unpriv "$PONYWRITE" -p "$WORK/sx/in/new/t" < <(echo new)
	assert_status 0
	assert_content sx/in/new/t $'new\n'
}

@test "-p in a directory the user may write but not read: nothing made there, the message says so" {
	unpriv_setup
	mkdir -p up/wx
	chmod 0333 up/wx
	chown nobody up/wx 2>/dev/null || :
	run --separate-stderr unpriv "$PONYWRITE" -p up/wx/new/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: up/wx/new/t: cannot create directory up/wx/new in up/wx: Permission denied"
	chmod 0755 up/wx
	[ -z "$(ls -A up/wx)" ] || fail "up/wx holds: $(ls -A up/wx)"
	# with --no-sync nothing is flushed, so nothing needs reading
	chmod 0333 up/wx
	run --separate-stderr unpriv "$PONYWRITE" --no-sync -p up/wx/new/t < <(echo new)
	assert_status 0
	chmod 0755 up/wx
	assert_content up/wx/new/t $'new\n'
}

@test "-p through a chain of 25 links: the links are counted once, as mkdir -p counts them" {
	mkdir real
	ln -s real l25
	for i in $(seq 24 -1 1); do ln -s "l$((i + 1))" "l$i"; done
	echo new | "$PONYWRITE" l1/t
	assert_content real/t $'new\n'
	echo new | "$PONYWRITE" -p l1/sub/t || fail "-p through the chain failed"
	assert_content real/sub/t $'new\n'
}

@test "a file in the way of -p fails" {
	echo file > a
	fails_untouched 1 "ponywrite: a: Not a directory" a a/t
	snapshot a
	run --separate-stderr "$PONYWRITE" -p a/b/t < <(echo new)
	assert_status 1
	assert_stderr_has "ponywrite: a"
	assert_untouched a
	assert_no_litter
}

@test "unwritable directory: the message names the directory (non-root)" {
	mkdir ro locked
	echo old > ro/t
	echo old > locked/t
	unpriv_setup
	chmod 0555 ro
	chmod 0000 locked
	snapshot ro/t
	run --separate-stderr unpriv "$PONYWRITE" ro/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: ro: cannot create a temporary file in this directory: Permission denied"
	[ -z "$output" ] || fail "stdout: $output"
	assert_untouched ro/t
	run --separate-stderr unpriv "$PONYWRITE" ro/new < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: ro: cannot create a temporary file in this directory: Permission denied"
	[ ! -e ro/new ] || fail "ro/new created"
	run --separate-stderr unpriv bash -c 'cd ro && exec "$1" t' _ "$PONYWRITE" < <(echo new)
	assert_status 1
	assert_stderr_has "cannot create a temporary file in this directory: Permission denied"
	assert_untouched ro/t
	run --separate-stderr unpriv "$PONYWRITE" locked/t < <(echo new)
	assert_status 1
	assert_stderr_has "ponywrite: locked"
	assert_stderr_has "Permission denied"
	chmod 0755 locked
	assert_content locked/t $'old\n'
	assert_no_litter
}

@test "read-only file system: EROFS, target untouched (root)" {
	mount_ext4 mnt 4
	echo old > mnt/t
	mount -o remount,ro mnt
	snapshot mnt/t
	run --separate-stderr "$PONYWRITE" mnt/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: mnt: cannot create a temporary file in this directory: Read-only file system"
	assert_untouched mnt/t
	run --separate-stderr "$PONYWRITE" mnt/new < <(echo new)
	assert_status 1
	assert_stderr_has "Read-only file system"
	[ ! -e mnt/new ] || fail "mnt/new exists"
	assert_no_litter mnt lost+found
}

@test "full file system: ENOSPC, target untouched, temporary file removed (root)" {
	mount_ext4 mnt 8
	seq 1 1000 > mnt/t
	dd if=/dev/zero of=mnt/fill bs=1M status=none 2>/dev/null || :
	sync -f mnt/fill
	free=$(df --output=avail -k mnt | tail -1)
	[ "$free" -lt 1024 ] || fail "file system not full: $free KiB free"
	snapshot mnt/t
	head -c 4M /dev/zero > "$BATS_TEST_TMPDIR/in"
	run --separate-stderr "$PONYWRITE" mnt/t < "$BATS_TEST_TMPDIR/in"
	assert_status 1
	assert_stderr "ponywrite: mnt/t: cannot write the new content: No space left on device"
	assert_untouched mnt/t
	run --separate-stderr "$PONYWRITE" -i "$BATS_TEST_TMPDIR/in" mnt/t </dev/null
	assert_status 1
	assert_stderr "ponywrite: mnt/t: cannot write the new content: No space left on device"
	assert_untouched mnt/t
	run --separate-stderr bash -c 'cat "$2" | "$1" mnt/t' _ "$PONYWRITE" "$BATS_TEST_TMPDIR/in"
	assert_status 1
	assert_stderr "ponywrite: mnt/t: cannot write the new content: No space left on device"
	assert_untouched mnt/t
	assert_no_litter mnt lost+found
	# The space is back: the temporary file's blocks were freed.
	rm mnt/fill
	run --separate-stderr "$PONYWRITE" mnt/t < "$BATS_TEST_TMPDIR/in"
	assert_status 0
	cmp mnt/t "$BATS_TEST_TMPDIR/in"
}

@test "ulimit -f: EFBIG is a clean failure, not death by SIGXFSZ" {
	seq 1 10 > t
	head -c 1M /dev/zero > "$BATS_TEST_TMPDIR/in"
	snapshot t
	for how in pipe file redirect; do
		run --separate-stderr bash -c '
		    ulimit -f 64
		    case $2 in
		    pipe) cat "$3" | "$1" t ;;
		    file) "$1" -i "$3" t ;;
		    redirect) "$1" t < "$3" ;;
		    esac' _ "$PONYWRITE" "$how" "$BATS_TEST_TMPDIR/in"
		[ "$status" -ne $((128 + 25)) ] || fail "$how: killed by SIGXFSZ"
		assert_status 1
		assert_stderr "ponywrite: t: cannot write the new content: File too large"
		assert_untouched t
		assert_no_litter
	done
}

@test "unreadable -i source: exit 1, target untouched (non-root)" {
	echo secret > src
	echo old > t
	unpriv_setup
	chmod 0000 src
	snapshot t
	run --separate-stderr unpriv "$PONYWRITE" -i src t </dev/null
	assert_status 1
	assert_stderr "ponywrite: src: Permission denied"
	assert_untouched t
	assert_no_litter
}

@test "-i source that is missing, a directory, or fails with EIO" {
	echo old > t
	mkdir d
	fails_untouched 1 "ponywrite: nosuch: No such file or directory" t -i nosuch t
	fails_untouched 1 "ponywrite: d: Is a directory" t -i d t
	fails_untouched 1 "ponywrite: /proc/self/mem: $E_EIO" t -i /proc/self/mem t
	run --separate-stderr "$PONYWRITE" t < /proc/self/mem
	assert_status 1
	assert_stderr "ponywrite: stdin: $E_EIO"
	assert_untouched t
	assert_no_litter
}

@test "stdin is a directory" {
	echo old > t
	mkdir d
	snapshot t
	run --separate-stderr "$PONYWRITE" t < d
	assert_status 1
	assert_stderr "ponywrite: stdin: Is a directory"
	assert_untouched t
	assert_no_litter
}

# Trace of the flushes and renames of a normal run of ponywrite ARG...;
# sets FLUSHES to "NAME NAME ... rename NAME ..." in call order.
trace_flushes()
{
	strace -f -qq -o "$BATS_TEST_TMPDIR/flush.trace" \
	    -e trace=fsync,fdatasync,syncfs,sync_file_range,rename,renameat,renameat2 \
	    "$PONYWRITE" "$@" < <(echo traced) ||
	    fail "traced run failed"
	FLUSHES=$(sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$BATS_TEST_TMPDIR/flush.trace" | tr '\n' ' ')
	FLUSHES=${FLUSHES//renameat2/rename}
	FLUSHES=${FLUSHES//renameat/rename}
}

# occurrence NAME POSITION: how many times NAME appears in FLUSHES up to and
# including word POSITION (0-based).
occurrence()
{
	local -a w=($FLUSHES)
	local i n=0
	for ((i = 0; i <= $2; i++)); do
		[ "${w[i]}" = "$1" ] && n=$((n + 1))
	done
	echo "$n"
}

@test "the protocol: one data flush, one rename, one directory flush" {
	require_cmd strace
	mkdir d
	echo old > d/t
	trace_flushes d/t
	local want="|fdatasync rename fsync |fsync rename fsync |sync_file_range rename fsync |"
	# without a journal the old file's hidden link is removed, then flushed
	[ "$(plan_of d)" != nojournal ] || want="|fsync rename fsync fsync |"
	case $want in
	*"|$FLUSHES|"*) ;;
	*) fail "flushes and renames: $FLUSHES" ;;
	esac
	assert_content d/t $'traced\n'
}

@test "data flush fails with EIO: exit 1, no retry, no rename, target untouched" {
	require_cmd strace
	mkdir d
	echo old > d/t
	trace_flushes d/t
	echo old > d/t
	local -a w=($FLUSHES)
	local i
	for ((i = 0; i < ${#w[@]}; i++)); do
		[ "${w[i]}" = rename ] && break
	done
	[ "$i" -gt 0 ] && [ "$i" -lt ${#w[@]} ] || fail "no flush before rename: $FLUSHES"
	sc=${w[i - 1]}
	n=$(occurrence "$sc" $((i - 1)))
	snapshot d/t
	for sync in "" --no-sync; do
		run --separate-stderr strace -f -qq -o "$BATS_TEST_TMPDIR/inj.trace" \
		    -e trace=fsync,fdatasync,sync_file_range,rename,renameat,renameat2 \
		    -e inject="$sc":error=EIO:when="$n" "$PONYWRITE" $sync d/t < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: d/t: cannot flush to disk: $E_EIO"
		assert_untouched d/t
		assert_no_litter
		! grep -q rename "$BATS_TEST_TMPDIR/inj.trace" ||
		    fail "renamed after a failed flush: $(cat "$BATS_TEST_TMPDIR/inj.trace")"
		[ "$(grep -c "$sc(" "$BATS_TEST_TMPDIR/inj.trace")" -eq "$n" ] ||
		    fail "flush retried: $(cat "$BATS_TEST_TMPDIR/inj.trace")"
	done
}

# Where the plan is filelog (btrfs) the flush after the rename is the file's.
@test "directory flush fails: exit 3, new content in place, message says so" {
	require_cmd strace
	mkdir d
	echo old > d/t
	trace_flushes d/t
	local -a w=($FLUSHES)
	local i
	for ((i = 0; i < ${#w[@]}; i++)); do
		[ "${w[i]}" = rename ] && break
	done
	[ $((i + 1)) -lt ${#w[@]} ] || fail "no flush after rename: $FLUSHES"
	sc=${w[i + 1]}
	n=$(occurrence "$sc" $((i + 1)))
	old=$(inode d/t)
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject="$sc":error=EIO:when="$n" "$PONYWRITE" d/t < <(echo new)
	assert_status 3
	local what="directory d" fresh="directory "
	[ "$(plan_of d)" != filelog ] || what=it fresh="it"
	local msg="ponywrite: d/t: replaced, but flushing $what failed: $E_EIO; the new content may not survive a crash"
	if [ "$(plan_of d)" = nojournal ]; then
		assert_stderr_has "$msg"
		kept_links d t
	else
		assert_stderr "$msg"
	fi
	[ -z "$output" ] || fail "stdout: $output"
	assert_content d/t $'new\n'
	[ "$(inode d/t)" != "$old" ] || fail "not replaced"
	assert_no_litter
	# The same for a new file in the current directory.
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject="$sc":error=EIO:when="$n" "$PONYWRITE" -v fresh < <(echo new)
	assert_status 3
	assert_stderr_has "ponywrite: fresh: replaced, but flushing $fresh"
	assert_stderr_has " failed: $E_EIO; the new content may not survive a crash"
	assert_content fresh $'new\n'
	assert_no_litter
}

@test "rename fails: exit 1, target untouched, temporary file removed" {
	require_cmd strace
	echo old > t
	trace_flushes t
	echo old > t
	sc=$(grep -o -m1 -E '^[0-9]* *rename(at2?)?\(' "$BATS_TEST_TMPDIR/flush.trace" | sed 's/^[0-9]* *//; s/($//')
	[ -n "$sc" ] || fail "no rename in the trace"
	snapshot t
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject="$sc":error=EIO:when=1 "$PONYWRITE" t < <(echo new)
	assert_status 1
	assert_stderr_has "ponywrite: t"
	assert_stderr_has "$E_EIO"
	assert_untouched t
	assert_no_litter
}

@test "write errors (EIO, ENOSPC, EDQUOT, EFBIG) on the temporary file" {
	require_cmd strace
	seq 1 1000 > "$BATS_TEST_TMPDIR/in"
	# inject MODE STRACE-OPTION...: ponywrite under strace, input from a
	# pipe or a file (-i); only ponywrite is traced.
	inject()
	{
		local how=$1
		shift
		if [ "$how" = pipe ]; then
			seq 1 1000 | strace -qq "$@" "$PONYWRITE" t
		else
			strace -qq "$@" "$PONYWRITE" -i "$BATS_TEST_TMPDIR/in" t </dev/null
		fi
	}
	for how in pipe file; do
		# Which call moves the data? The first one not writing to stderr.
		echo old > t
		inject "$how" -o "$BATS_TEST_TMPDIR/w.trace" \
		    -e trace=write,pwrite64,writev,splice,copy_file_range,sendfile
		sc=$(grep -v -E '^[a-z0-9_]+\(2,' "$BATS_TEST_TMPDIR/w.trace" | grep -o -m1 -E '^[a-z0-9_]+\(' | tr -d '(')
		[ -n "$sc" ] || fail "no data call in: $(cat "$BATS_TEST_TMPDIR/w.trace")"
		echo old > t
		snapshot t
		while read -r err text; do
			extra=()
			# ponywrite falls back to pread/pwrite after copy_file_range
			# fails with EIO (it may be the source's); fail that too.
			if [ "$sc" = copy_file_range ] && [ "$err" = EIO ]; then
				extra=(-e inject=pwrite64:error=EIO:when=1)
			fi
			run --separate-stderr inject "$how" -o /dev/null \
			    -e inject="$sc":error="$err":when=1 "${extra[@]}"
			assert_status 1
			assert_stderr "ponywrite: t: cannot write the new content: $text"
			assert_untouched t
			assert_no_litter
		done <<-EOF
		EIO $E_EIO
		ENOSPC No space left on device
		EDQUOT $E_DQUOT
		EFBIG File too large
		EOF
	done
}

# closed_pipe_run FD CMD...: run CMD with descriptor FD (1 or 2) a pipe whose
# reading end is already closed; prints the status.
closed_pipe_run()
{
	python3 - "$@" <<'PY'
import os, subprocess, sys
fd = int(sys.argv[1])
r, w = os.pipe()
os.close(r)
kw = {"stdout": w} if fd == 1 else {"stderr": w}
p = subprocess.run(sys.argv[2:], stdin=open("in"), **kw)
print(p.returncode)
PY
}

@test "-v with a stderr nobody reads: the replace still exits 0, not 141" {
	require_cmd python3
	echo old > t
	echo new > in
	run closed_pipe_run 2 "$PONYWRITE" -v t
	[ "$output" = 0 ] || fail "status $output"
	assert_content t $'new\n'
	assert_no_litter
}

@test "--help and --version to a closed stdout: exit 1 with a message" {
	for o in --help --version; do
		run --separate-stderr sh -c 'exec "$0" "$1" >&-' "$PONYWRITE" "$o"
		assert_status 1
		assert_stderr "ponywrite: stdout: Bad file descriptor"
	done
}

@test "--help and --version without /dev/null and a closed stdout: no abort (root)" {
	require_mount_ns
	run --separate-stderr unshare -m sh -c \
	    'mount -t tmpfs none /dev && exec "$0" --version >&-' "$PONYWRITE"
	assert_status 1
	assert_stderr "ponywrite: stdout: Bad file descriptor"
}

# same_sparse IN OUT: OUT holds IN's data in at most 16 blocks of 512 bytes
# (IN's data is in its first and last 4 KiB): every other byte of OUT is a
# hole and reads as zero, as in IN.  Reading the GiBs of zeros is not needed.
same_sparse()
{
	local size blocks
	size=$(stat -c %s "$1")
	blocks=$(stat -c %b "$2")
	[ "$blocks" -le 16 ] || fail "$2: holes filled: $blocks blocks of 512 bytes"
	cmp -n 4096 "$1" "$2" || fail "$2: the first 4 KiB differ"
	cmp -i $((size - 4096)) "$1" "$2" || fail "$2: the last 4 KiB differ"
}

@test "a sparse input file stays sparse: a 2 GiB hole fits a 64 MiB file system (root)" {
	mount_ext4 m 64
	truncate -s 2G sparse
	printf head | dd of=sparse conv=notrunc status=none
	printf tail | dd of=sparse bs=1 seek=$((2 * 1024 * 1024 * 1024 - 4)) conv=notrunc status=none
	echo old > m/t
	run --separate-stderr "$PONYWRITE" -i sparse m/t
	assert_status 0
	assert_quiet
	[ "$(stat -c %s m/t)" -eq $((2 * 1024 * 1024 * 1024)) ] || fail "size $(stat -c %s m/t)"
	same_sparse sparse m/t
	# From standard input too, and a trailing hole.
	truncate -s 1G sparse2
	printf x > sparse2.tmp && dd if=sparse2.tmp of=sparse2 conv=notrunc status=none
	run --separate-stderr "$PONYWRITE" m/t2 < sparse2
	assert_status 0
	[ "$(stat -c %s m/t2)" -eq $((1024 * 1024 * 1024)) ] || fail "size $(stat -c %s m/t2)"
	same_sparse sparse2 m/t2
	assert_no_litter m lost+found
}

@test "standard input that is a file read from its current offset, as cat does" {
	printf 'first\nrest\n' > in
	echo old > t
	run --separate-stderr bash -c '{ read -r line; "$0" t; } < in' "$PONYWRITE"
	assert_status 0
	assert_content t $'rest\n'
	assert_no_litter
}

@test "ulimit -f: an input of exactly the limit fits, from a file and a pipe; one byte over fails" {
	head -c 10240 /dev/zero | tr '\0' x > exact
	head -c 10241 /dev/zero | tr '\0' x > over
	echo old > t
	run --separate-stderr bash -c 'ulimit -f 10; "$0" -i exact t' "$PONYWRITE"
	assert_status 0
	cmp exact t || fail "content differs"
	run --separate-stderr bash -c 'ulimit -f 10; "$0" t < exact' "$PONYWRITE"
	assert_status 0
	run --separate-stderr bash -c 'ulimit -f 10; cat exact | "$0" t' "$PONYWRITE"
	assert_status 0
	cmp exact t || fail "content differs"
	snapshot t
	run --separate-stderr bash -c 'ulimit -f 10; "$0" -i over t' "$PONYWRITE"
	assert_status 1
	assert_stderr "ponywrite: t: cannot write the new content: File too large"
	assert_untouched t
	assert_no_litter
}

@test "ulimit -f: a short write is continued, never taken as complete" {
	echo old > t
	# /proc/self/status reads as about 1.4 KB with st_size 0: the read/write
	# path, where a write at the 1 KiB limit comes back short.
	snapshot t
	run --separate-stderr bash -c 'ulimit -f 1; "$0" -i /proc/self/status t' "$PONYWRITE"
	assert_status 1
	assert_stderr "ponywrite: t: cannot write the new content: File too large"
	assert_untouched t
	assert_no_litter
}

@test "a long message is not cut: a 3000-byte directory path in the exit-3 message" {
	require_cmd strace
	d=.
	for i in $(seq 15); do
		d="$d/$(printf 'd%.0s' $(seq 200))"
	done
	mkdir -p "$d"
	echo old > "$d/t"
	# The directory's is the first fsync after the rename (with -b where
	# the plan is filelog: one file alone flushes itself there).
	local b=
	[ "$(plan_of)" != filelog ] || b=-b
	n=$(strace -qq -o /dev/stdout -e trace=fsync,rename,renameat,renameat2 \
	    "$PONYWRITE" $b "$d/t" < <(echo new) |
	    awk '/^fsync\(/ { n++ } /^rename/ { r = 1 } r && /^fsync\(/ { print n; exit }')
	run --separate-stderr strace -qq -o /dev/null -e inject=fsync:error=EIO:when="$n" \
	    "$PONYWRITE" $b "$d/t" < <(echo new)
	assert_status 3
	assert_stderr_has "replaced, but flushing directory $d failed: $E_EIO; the new content may not survive a crash"
}

@test "an unreadable file without /proc: the message says why (root)" {
	require_root
	[ -z "${PONYWRITE_SANITIZER:-}" ] || skip "the sanitizers' runtime needs /proc"
	require_mount_ns
	unpriv_setup
	echo old > t
	chown nobody:nogroup t
	chmod 0200 t
	snapshot t
	run --separate-stderr unshare -m sh -c \
	    'umount -l /proc && exec setpriv --reuid=nobody --regid=nogroup --clear-groups "$0" t' \
	    "$PONYWRITE" < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: cannot read its attributes: the file is not readable and /proc is not mounted"
	assert_untouched t
	assert_no_litter
}

@test "a disk that fills in the middle of the last write: the rest is retried, ENOSPC, untouched (root)" {
	mount_ext4 m 16
	# Leave about 64 KiB free, then write 96 KiB from another file system:
	# copy_file_range cannot cross it, so pwrite(2) writes, and comes back
	# short when the disk fills.
	head -c 65536 /dev/zero > m/keep
	dd if=/dev/zero of=m/fill bs=4k 2>/dev/null || :
	sync
	rm m/keep
	sync
	echo old > m/t 2>/dev/null || { rm m/fill; skip "could not leave room for the target"; }
	snapshot m/t
	head -c 98304 /dev/urandom > in
	run --separate-stderr strace -f -qq -o "$BATS_TEST_TMPDIR/w.trace" -e trace=pwrite64 \
	    "$PONYWRITE" -i in m/t
	short=$(sed -nE 's/.*, ([0-9]+), [0-9]+\) += ([0-9]+)$/\1 \2/p' "$BATS_TEST_TMPDIR/w.trace" |
	    awk '$2 < $1' | wc -l)
	[ "$short" -gt 0 ] || skip "no short pwrite here: $(cut -c1-60 "$BATS_TEST_TMPDIR/w.trace")"
	assert_status 1
	assert_stderr "ponywrite: m/t: cannot write the new content: No space left on device"
	assert_untouched m/t
	assert_no_litter m lost+found
}

@test "a regular input file whose pread fails with EIO: exit 1 naming it, untouched" {
	require_cmd strace
	seq 1000 > in
	echo old > t
	snapshot t
	# copy_file_range says "not here", then pread(2) of the input fails.
	run --separate-stderr strace -qq -o /dev/null -P in \
	    -e inject=copy_file_range:error=EXDEV -e inject=pread64:error=EIO \
	    "$PONYWRITE" -i in t
	assert_status 1
	assert_stderr_has "ponywrite: in: $E_EIO"
	assert_untouched t
	assert_no_litter
	# The same past the size known at the start (a growing file).
	run --separate-stderr strace -qq -o /dev/null -P in \
	    -e inject=pread64:error=EIO "$PONYWRITE" -i in t
	assert_status 1
	assert_stderr_has "ponywrite: in: $E_EIO"
	assert_untouched t
	assert_no_litter
}

@test "a temporary file that cannot be removed (file system turned read-only) is named" {
	require_cmd strace
	mkdir d
	echo old > d/t
	snapshot d/t
	run --separate-stderr strace -f -qq -o /dev/null -e inject=unlinkat:error=EROFS \
	    "$PONYWRITE" -E d/t < /dev/null
	assert_status 1
	left=$(cd d && ls -A | grep -v '^t$')
	[ -n "$left" ] || fail "the injected unlink did not leave the temporary file"
	assert_stderr "ponywrite: d/t: input is empty, not replaced (-E)
ponywrite: d: cannot remove the temporary file $left: Read-only file system"
	assert_untouched d/t
	rm -f "d/$left"
	# The many-files form names each one it leaves.
	echo new > a
	: > empty
	run --separate-stderr strace -f -qq -o /dev/null -e inject=unlinkat:error=EROFS \
	    "$PONYWRITE" -E -t d a empty
	assert_status 1
	[ "$(cd d && ls -A | grep -c -v '^t$')" -eq 2 ] || fail "left: $(ls -A d)"
	for f in $(cd d && ls -A | grep -v '^t$'); do
		assert_stderr_has "ponywrite: d: cannot remove the temporary file $f: Read-only file system"
	done
	assert_untouched d/t
}

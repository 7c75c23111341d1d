#!/usr/bin/env bats
# --check: each target resolved as a run would, one line a target on stdout
# (what a run would do, mode, owner, file system, flush sequence, what it
# rests on, the target), the failures a run would meet with its messages and
# exit status; and nothing written.  Each verdict is compared with what a
# run then does.

load helpers
load features_helpers

# tree_state: every entry under WORK with inode, mode, owner, size, times
# and content hash; equal before and after a --check.
tree_state()
{
	find "$WORK" -printf '%p %i %m %U:%G %s %T@ %C@\n' | sort
	find "$WORK" -type f -exec sha256sum {} + 2>/dev/null | sort
}

# writes_in_trace LOG: what a traced --check did that writes: an open for
# writing or creating, a write to a descriptor other than 1 and 2, and any
# call that changes a file, a name or a lock.
writes_in_trace()
{
	sed -E 's/^[0-9]+ +//' "$1" | grep -E \
	    '^(open|openat|creat)\(.*(O_WRONLY|O_RDWR|O_CREAT|O_TRUNC)|^(write|pwrite64|writev)\(([03-9]|[1-9][0-9])|^(rename|renameat2?|link|linkat|symlinkat|unlink|unlinkat|mkdir|mkdirat|rmdir|fchown|fchownat|fchmod|fchmodat|ftruncate|fsetxattr|fremovexattr|setxattr|copy_file_range|sync_file_range|fsync|fdatasync|syncfs|flock|fcntl\(.*F_SETLK)' || :
}

# check_writes_nothing ARG...: ponywrite --check ARG... under strace (stdin
# from new), with the tree the same after and no writing call; CHECK_STATUS,
# CHECK_OUT (stdout) and CHECK_ERR.
check_writes_nothing()
{
	require_cmd strace
	local before log="$BATS_TEST_TMPDIR/check.log"
	before=$(tree_state)
	CHECK_STATUS=0
	strace -f -qq -o "$log" "$PONYWRITE" --check "$@" <"$BATS_TEST_TMPDIR/new" \
	    >"$BATS_TEST_TMPDIR/check.out" 2>"$BATS_TEST_TMPDIR/check.err" || CHECK_STATUS=$?
	CHECK_OUT=$(cat "$BATS_TEST_TMPDIR/check.out")
	CHECK_ERR=$(cat "$BATS_TEST_TMPDIR/check.err")
	[ -z "$(writes_in_trace "$log")" ] ||
	    fail "--check $*: wrote:" "$(writes_in_trace "$log")"
	[ "$(tree_state)" = "$before" ] ||
	    fail "--check $*: the tree changed:" "$(diff <(printf '%s\n' "$before") <(tree_state))"
}

# field N LINE: the Nth tab-separated field of LINE.
field() { cut -f"$1" <<<"$2"; }

@test "--check writes nothing, in every form: no open for writing, no write, rename, link, unlink, mkdir, chown, chmod, flush or lock; the tree the same" {
	echo new > "$BATS_TEST_TMPDIR/new"
	mkdir d
	echo old > d/t
	echo old > d/u
	chmod 0640 d/t
	echo src > s
	printf 'd/t\0s\0d/n\0s\0' > list
	check_writes_nothing d/t
	[ "$CHECK_STATUS" = 0 ] || fail "d/t: $CHECK_STATUS $CHECK_ERR"
	check_writes_nothing -b -C -m 0600 d/t
	[ "$CHECK_STATUS" = 0 ] || fail "-b -C -m: $CHECK_STATUS $CHECK_ERR"
	check_writes_nothing -p x/y/z
	[ "$CHECK_STATUS" = 0 ] || fail "-p: $CHECK_STATUS $CHECK_ERR"
	check_writes_nothing -a d/u
	[ "$CHECK_STATUS" = 0 ] || fail "-a: $CHECK_STATUS $CHECK_ERR"
	check_writes_nothing -l -w 1 d/u sh -c 'echo ran > ran'
	[ "$CHECK_STATUS" = 0 ] || fail "command: $CHECK_STATUS $CHECK_ERR"
	[ ! -e ran ] || fail "the command ran"
	check_writes_nothing -b -t d s
	[ "$CHECK_STATUS" = 0 ] || fail "-t: $CHECK_STATUS $CHECK_ERR"
	check_writes_nothing --batch=list
	[ "$CHECK_STATUS" = 0 ] || fail "--batch: $CHECK_STATUS $CHECK_ERR"
	[ "$(cut -f1,7 <<<"$CHECK_OUT")" = $'replace\td/t\ncreate\td/n' ] ||
	    fail "--batch lines: $CHECK_OUT"
	# a failure writes nothing either
	check_writes_nothing nodir/t
	[ "$CHECK_STATUS" = 1 ] || fail "nodir/t: $CHECK_STATUS"
	assert_no_litter
}

@test "--check reads no input: stdin, a terminal or a FIFO left alone, the list read" {
	echo new > "$BATS_TEST_TMPDIR/new"
	mkfifo fifo
	# a FIFO source with no writer: opening it would block
	run --separate-stderr timeout 10 "$PONYWRITE" --check -i fifo t
	assert_status 0
	[ "$(field 1 "$output")" = create ] || fail "stdout: $output"
	# stdin holds data that must still be there for the next reader
	run --separate-stderr sh -c '{ "$1" --check t; cat; } <"$2"' sh "$PONYWRITE" "$BATS_TEST_TMPDIR/new"
	assert_status 0
	[[ $output == create$'\t'0644$'\t'"$(id -u):$(id -g)"$'\t'*$'\tt\nnew' ]] ||
	    fail "stdout: $output"
	[ ! -e t ] || fail "created t"
}

@test "--check's line: what a run then does, the mode and owner it gives, with -m, -o, a setgid directory, the umask, -p, -z" {
	echo new > "$BATS_TEST_TMPDIR/new"
	mkdir d g
	echo old > d/t
	chmod 0640 d/t
	chmod 2775 g
	local expect line
	local -a forms=("d/t" "-m 0600 d/t" "d/n" "-m u=rw,go= d/m" "g/n" "-p x/y/n")
	[ "$(id -u)" = 0 ] && forms+=("-o nobody d/o" "-o nobody:nogroup d/t")
	for f in "${forms[@]}"; do
		# shellcheck disable=SC2086 # the words of each form
		run --separate-stderr "$PONYWRITE" --check $f < "$BATS_TEST_TMPDIR/new"
		assert_status 0
		line=$output
		[ "$(field 7 "$line")" = "${f##* }" ] || fail "$f: $line"
		expect=$([ -e "${f##* }" ] && echo replace || echo create)
		[ "$(field 1 "$line")" = "$expect" ] || fail "$f: $line, expected $expect"
		# shellcheck disable=SC2086
		run --separate-stderr "$PONYWRITE" $f < "$BATS_TEST_TMPDIR/new"
		assert_status 0
		[ "$(field 2 "$line")" = "$(stat -c %04a "${f##* }")" ] ||
		    fail "$f: --check said mode $(field 2 "$line"), the run gave $(stat -c %04a "${f##* }")"
		[ "$(field 3 "$line")" = "$(stat -c %u:%g "${f##* }")" ] ||
		    fail "$f: --check said owner $(field 3 "$line"), the run gave $(stat -c %u:%g "${f##* }")"
		[ "$(field 4 "$line")" = "$(findmnt -no FSTYPE -T "${f##* }")" ] ||
		    fail "$f: file system $(field 4 "$line")"
	done
	umask 027
	"$PONYWRITE" --check -z d/u <"$BATS_TEST_TMPDIR/new" >"$BATS_TEST_TMPDIR/z" ||
	    fail "-z: exit $?"
	[ "$(tail -c 1 "$BATS_TEST_TMPDIR/z" | od -An -tx1 | tr -d ' ')" = 00 ] ||
	    fail "-z: not ended with NUL: $(od -c "$BATS_TEST_TMPDIR/z")"
	[ "$(tr '\0' '\n' <"$BATS_TEST_TMPDIR/z" | cut -f2)" = 0640 ] ||
	    fail "umask 027: $(tr '\0' '\n' <"$BATS_TEST_TMPDIR/z")"
}

# same_verdict ARG...: --check ARG... and then ARG... (stdin from new) fail
# alike: the same exit status, the same messages (a batch's last, its
# summary, apart), a "fail" line for the check, nothing changed by it.
same_verdict()
{
	local before cstatus cerr cout
	before=$(tree_state)
	cstatus=0
	cout=$("${PW_PREFIX[@]}" "$PONYWRITE" --check "$@" <"$BATS_TEST_TMPDIR/new" 2>"$BATS_TEST_TMPDIR/c.err") || cstatus=$?
	cerr=$(cat "$BATS_TEST_TMPDIR/c.err")
	[ "$(tree_state)" = "$before" ] || fail "--check $*: the tree changed"
	# a target named twice fails the run (2) whole: found after the lines
	[[ $cout == *fail* || $cstatus == 2 ]] || fail "--check $*: no fail line: $cout"
	run --separate-stderr "${PW_PREFIX[@]}" "$PONYWRITE" "$@" <"$BATS_TEST_TMPDIR/new"
	[ "$status" = "$cstatus" ] ||
	    fail "$*: --check exit $cstatus ($cerr), the run $status ($stderr)"
	if [[ $* == *--batch* || $* == *-t\ * ]]; then
		cerr=$(sed '/replace nothing/d' <<<"$cerr")
		stderr=$(sed '/nothing replaced/d' <<<"$stderr")
	fi
	[ "$cerr" = "$stderr" ] ||
	    fail "$*: --check said" "$cerr" "the run said" "$stderr"
	[ "$status" != 0 ] || fail "$*: the run succeeded"
}

@test "--check finds what a run then fails on, with its message and status: a missing directory, a file for a directory, a long name, a directory, a missing source, a duplicate, a backup name, command mode" {
	echo new > "$BATS_TEST_TMPDIR/new"
	mkdir d d/t~ e
	echo old > d/t
	echo old > e/t
	echo x > f
	snapshot d/t e/t
	same_verdict nodir/t
	same_verdict f/t
	same_verdict -p f/x/t
	same_verdict "d/$(printf 'n%.0s' {1..256})"
	same_verdict d
	same_verdict -t d missing
	same_verdict -t d e
	same_verdict -i e d/n
	same_verdict -b d/t
	same_verdict -b d/t true
	printf 'd/t\0f\0e/../d/t\0f\0' > list
	same_verdict --batch=list
	printf 'e/t\0f\0d/nodir/x\0f\0' > list2
	same_verdict --batch=list2
	assert_untouched d/t e/t
	assert_no_litter
}

# files_state: as tree_state, but a directory's times (a temporary file
# made and removed, as -C's still is (issue 55), changes them).
files_state()
{
	find "$WORK" \( -type d -printf '%p %i %m %U:%G\n' \) -o \
	    -printf '%p %i %m %U:%G %s %T@ %C@\n' | sort
	find "$WORK" -type f -exec sha256sum {} + 2>/dev/null | sort
}

# same_status ARG...: --check ARG... exits as the run then does (stdin from
# $BATS_TEST_TMPDIR/in), and a run that fails leaves the files as they were
# (but, with -p, the directories it made).
same_status()
{
	local before cstatus=0
	before=$(files_state)
	"${PW_PREFIX[@]}" "$PONYWRITE" --check "$@" <"$BATS_TEST_TMPDIR/in" >/dev/null 2>&1 || cstatus=$?
	run --separate-stderr "${PW_PREFIX[@]}" "$PONYWRITE" "$@" <"$BATS_TEST_TMPDIR/in"
	[ "$status" = "$cstatus" ] || fail "$*: --check exit $cstatus, the run $status ($stderr)"
	[ "$status" = 0 ] || [[ " $* " == *" -p "* ]] || [ "$(files_state)" = "$before" ] ||
	    fail "$*: a failed run changed the tree"
}

@test "--check exits as the run where the generated test found them apart: a duplicate among failures, -C with what only a change needs, -p" {
	# tests/differential found each on c9d7ff2.
	require_root
	echo old > "$BATS_TEST_TMPDIR/in"
	mkdir d s
	echo old > s/a
	echo old > d/a
	echo old > d/i
	echo old > d/m
	echo x > other
	local long
	long=$(printf 'L%.0s' {1..255})
	echo old > "d/$long"
	# A target given twice is a usage error even where another check fails
	# it: --check said 1.
	chattr +a d/a 2>/dev/null || skip "no chattr here"
	printf 'd/a\0s/a\0d/a\0s/a\0' > list
	same_status --batch=list
	[ "$status" = 2 ] || fail "exit $status"
	chattr -a d/a
	# -C, nothing changed: a run needs no rename, so an immutable file, a
	# mount point and a backup name too long are not failures: --check
	# said 1.
	chattr +i d/i
	same_status -C d/i
	[ "$status" = 0 ] || fail "exit $status"
	chattr -i d/i
	mount --bind d/a d/m || skip "cannot bind-mount"
	PW_MOUNTS+=("$WORK/d/m")
	same_status -C d/m
	[ "$status" = 0 ] || fail "exit $status"
	same_status -C -b "d/$long"
	[ "$status" = 0 ] || fail "exit $status"
	# ... but where -m, -o or -g asks for other metadata, a change is
	# certain, and so is the failure (found by review: --check said 0).
	chattr +i d/i
	same_status -C -m 0600 d/i
	[ "$status" = 1 ] || fail "exit $status"
	# -C -a with something to append (a file, or standard input
	# redirected from one): a change is certain (--check said 0).
	same_status -C -a -i other d/i
	[ "$status" = 1 ] || fail "exit $status"
	same_status -C -a d/i
	[ "$status" = 1 ] || fail "exit $status"
	: > empty
	same_status -C -a -i empty d/i
	[ "$status" = 0 ] || fail "exit $status"
	chattr -i d/i
	same_status -C -o 1 d/m
	[ "$status" = 1 ] || fail "exit $status"
	same_status -C -b -m 0600 "d/$long"
	[ "$status" = 1 ] || fail "exit $status"
	# -p: the targets of one missing directory are one place: --check
	# said 0 to a duplicate and to a backup name.
	printf 'n/x/a\0s/a\0n/x/a\0s/a\0' > list
	same_status -p --batch=list
	[ "$status" = 2 ] || fail "exit $status"
	printf 'n/x/a\0s/a\0n/x/a~\0s/a\0' > list
	same_status -p -b --batch=list
	[ "$status" = 2 ] || fail "exit $status"
	# Not in a row, and spelled apart (review: --check said 0).
	rm -rf n
	printf 'n/x/a\0s/a\0d/new\0s/a\0./n//x/a\0s/a\0' > list
	same_status -p --batch=list
	[ "$status" = 2 ] || fail "exit $status"
	rm -rf n
	printf 'n/x/a\0s/a\0d/new\0s/a\0%s/n/x/a\0s/a\0' "$PWD" > list
	same_status -p --batch=list
	[ "$status" = 2 ] || fail "exit $status"
	rm -rf n
	# ... and a name over NAME_MAX there: --check said 0.
	same_status -p "q/y/L$long"
	[ "$status" = 1 ] || fail "exit $status"
	# ... or a directory's name to make (--check said 0).
	same_status -p "q/L$long/y/a"
	[ "$status" = 1 ] || fail "exit $status"
	# Spelled with ".." or through a link (--check said 0, the run 2).
	mkdir e
	ln -s e le
	local l
	for l in 'n/y/../x/a s/a n/x/a s/a' 'le/n/a s/a e/n/a s/a' \
	    'e/../n/a s/a n/a s/a' 'n/./x/../x/a s/a n/x/a s/a'; do
		# shellcheck disable=SC2086 # a list of words
		printf '%s\0' $l > list
		same_status -p --batch=list
		[ "$status" = 2 ] || fail "$l: exit $status"
		rm -rf n e/n
	done
	printf '%s\0' n/x/a s/a n/y/a s/a > list
	same_status -p --batch=list
	[ "$status" = 0 ] || fail "two directories: exit $status"
	rm -rf n
	# A link to nothing on the way: a run's mkdir finds it there and its
	# walk fails (review: --check said create).
	ln -s nowhere dl
	same_status -p dl/a
	[ "$status" = 1 ] || fail "a link to nothing: exit $status"
	# A name of 100 characters, 300 bytes: too long for ext4, which counts
	# bytes (review: --check said create).
	same_status -p "q2/$(printf '\xe4\xb8\xad%.0s' {1..100})/a"
	[ "$status" = 1 ] || fail "exit $status"
	# A sysfs file whose size says 4096 and that reads nothing: -C -a may
	# leave the target (review: --check said 1, the run 0).
	if [ -r /sys/power/state ] && [ -z "$(cat /sys/power/state)" ]; then
		chattr +i d/i
		same_status -C -a -i /sys/power/state d/i
		[ "$status" = 0 ] || fail "sysfs: exit $status"
		chattr -i d/i
	fi
}

# Review: paths through links longer than PATH_MAX, where stat(2) of a
# prefix fails: a real duplicate missed, two directories taken for one.
@test "--check -p: a missing directory's place is found a name at a time, past PATH_MAX" {
	require_root
	local n t e i q
	n=$(printf 'd%.0s' {1..200})
	t=T
	for i in {1..11}; do t=$t/$n$i; done
	e=e
	for i in {1..9}; do e=$e/$n$i; done
	q=$(printf 'q%.0s' $(seq $((4100 - ${#t} - 1 - ${#e}))))
	mkdir -p "$t/$e/$q"
	(cd "$t" && ln -s "$e/$q/../../m/a" t)
	ln -s "$t/${e%/*}" lp
	echo x > "$BATS_TEST_TMPDIR/in"
	printf '%s\0' "$t/t" "$BATS_TEST_TMPDIR/in" lp/n/../../m/a "$BATS_TEST_TMPDIR/in" > list
	same_status -p --batch=list
	[ "$status" = 0 ] || fail "two directories: exit $status"
	rm -rf T lp
	e=e
	for i in {1..11}; do e=$e/$n$i; done
	mkdir -p "$t"
	(cd "$t" && mkdir -p "$e" && ln -s "$e/m/a" t)
	ln -s "$t" lt
	printf '%s\0' "$t/t" "$BATS_TEST_TMPDIR/in" "lt/$e/m/a" "$BATS_TEST_TMPDIR/in" > list
	same_status -p --batch=list
	[ "$status" = 2 ] || fail "one directory: exit $status"
}

@test "--check exits as the run as an ordinary user: -p where the directories cannot be made, a duplicate; -C with an owner it cannot keep" {
	require_nobody
	echo old > "$BATS_TEST_TMPDIR/in"
	chmod 0644 "$BATS_TEST_TMPDIR/in"
	mkdir s mine
	echo old > s/a
	chmod -R a+rX s
	echo old > mine/t
	chown nobody:nogroup mine
	PW_PREFIX=("${NOBODY[@]}")
	# The run fails at step 1, making them (exit 1); --check said 2.
	printf 'n/x/a\0s/a\0s/b\0s/a\0n/x/a\0s/a\0' > list
	chmod 0644 list
	same_status -p --batch=list
	[ "$status" = 1 ] || fail "exit $status"
	# -C -a needs no temporary file when there is nothing to append, and
	# one when there is (review: --check said 0; issue 55: the run then
	# failed unchanged too); in command mode -C compares first (issue
	# 55): the same output needs none, other output does (exit 125).
	mkdir ro5
	echo old > ro5/t
	chown nobody:nogroup ro5/t
	chmod 0555 ro5
	: > "$BATS_TEST_TMPDIR/empty"
	cp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/keep"
	cp "$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/in"
	same_status -C -a ro5/t
	[ "$status" = 0 ] || fail "exit $status"
	cp "$BATS_TEST_TMPDIR/keep" "$BATS_TEST_TMPDIR/in"
	same_status -C -a ro5/t
	[ "$status" = 1 ] || fail "exit $status"
	same_status -C ro5/t cat ro5/t
	[ "$status" = 0 ] || fail "exit $status"
	run --separate-stderr "${NOBODY[@]}" "$PONYWRITE" -C ro5/t echo other
	assert_status 125
	assert_content ro5/t $'old\n'
	# Said once for the targets there, as the run does (review: a line each).
	run --separate-stderr "${NOBODY[@]}" "$PONYWRITE" --check -p -t n/x s/a s/a s/a
	assert_status 1
	[ "$(grep -c 'n/x' <<<"$stderr")" = 1 ] || fail "said: $stderr"
	# root's file in nobody's directory, unchanged: --check said 1.
	same_status -C mine/t
	[ "$status" = 0 ] || fail "exit $status"
	# Changed, the run fails as --check warned.
	echo new > "$BATS_TEST_TMPDIR/in"
	run --separate-stderr "${NOBODY[@]}" "$PONYWRITE" --check -C mine/t <"$BATS_TEST_TMPDIR/in"
	assert_status 0
	assert_stderr_has "ponywrite: mine/t: a run fails unless nothing changes (-C): cannot give owner 0 and group 0: Operation not permitted"
	run --separate-stderr "${NOBODY[@]}" "$PONYWRITE" -C mine/t <"$BATS_TEST_TMPDIR/in"
	assert_status 1
	assert_content mine/t $'old\n'
}

@test "--check finds what a run then fails on (root): read-only mount, mount point, chattr +i and +a, an immutable directory" {
	require_root
	echo new > "$BATS_TEST_TMPDIR/new"
	mkdir ro d i
	echo old > d/t
	echo old > d/a
	echo old > d/m
	echo old > i/t
	echo x > other
	mount -t tmpfs -o ro,size=1m tmpfs ro || skip "cannot mount tmpfs"
	PW_MOUNTS+=("$WORK/ro")
	same_verdict ro/t
	mount --bind other d/m || skip "cannot bind-mount"
	PW_MOUNTS+=("$WORK/d/m")
	same_verdict d/m
	chattr +i d/t 2>/dev/null || skip "no chattr +i here"
	same_verdict d/t
	chattr -i d/t
	chattr +a d/a
	same_verdict d/a
	chattr -a d/a
	chattr +i i
	same_verdict i/t
	same_verdict i/n
	chattr -i i
	# -C: a run succeeds if nothing changes, so a read-only directory is
	# a warning where the target exists
	mkdir ro2
	mount -t tmpfs -o size=1m tmpfs ro2
	PW_MOUNTS+=("$WORK/ro2")
	echo new > ro2/t
	mount -o remount,ro ro2
	run --separate-stderr "$PONYWRITE" --check -C ro2/t <"$BATS_TEST_TMPDIR/new"
	assert_status 0
	assert_stderr "ponywrite: ro2/t: a run fails unless nothing changes (-C): ro2: Read-only file system"
	[ "$(field 1 "$output")" = replace ] || fail "-C ro2/t: $output"
	run --separate-stderr "$PONYWRITE" -C ro2/t <"$BATS_TEST_TMPDIR/new"
	assert_status 0
	same_verdict -C ro2/n
	assert_no_litter
}

@test "--check finds what a run then fails on as an ordinary user: a directory it cannot write, an owner it cannot keep, an unreadable source; a link planted by another user (root)" {
	require_nobody
	echo new > "$BATS_TEST_TMPDIR/new"
	chmod 0644 "$BATS_TEST_TMPDIR/new"
	mkdir rootdir mine
	echo old > rootdir/t
	echo old > mine/t
	echo secret > secret
	chmod 0600 secret
	chown nobody:nogroup mine
	PW_PREFIX=("${NOBODY[@]}")
	same_verdict rootdir/t
	same_verdict rootdir/n
	same_verdict mine/t
	same_verdict -t mine secret
	PW_PREFIX=()
	# root following a link nobody planted in a sticky world-writable
	# directory (fs.protected_symlinks, which ponywrite applies itself)
	mkdir -m 1777 sticky
	ln -s "$WORK/rootdir/t" sticky/link
	chown -h nobody:nogroup sticky/link
	same_verdict sticky/link
	as_nobody "$PONYWRITE" --check mine/n </dev/null >"$BATS_TEST_TMPDIR/o" ||
	    fail "nobody: mine/n: $?"
	[ "$(cut -f1,3 "$BATS_TEST_TMPDIR/o")" = "create	$(id -u nobody):$(getent group nogroup | cut -d: -f3)" ] ||
	    fail "nobody's line: $(cat "$BATS_TEST_TMPDIR/o")"
	assert_no_litter
}

# run_words DIR ARG...: ponywrite ARG... under strace; WORDS: its flushes,
# links and renames in --check's words (a write-back only started is left
# out), DIR being the target's directory.
run_words()
{
	require_cmd strace
	local dir=$1 log="$BATS_TEST_TMPDIR/words.log"
	shift
	status=0
	strace -f -qq -y -o "$log" -e trace=fsync,fdatasync,sync,syncfs,sync_file_range,renameat,renameat2,rename,linkat,unlinkat \
	    "$PONYWRITE" "$@" 2>"$BATS_TEST_TMPDIR/words.err" || status=$?
	WORDS=$(sed -E 's/^[0-9]+ +//' "$log" | awk -v dir="$(cd "$dir" && pwd -P)" '
	function path() { match($0, /<[^>]*>/); return substr($0, RSTART + 1, RLENGTH - 2) }
	/^sync_file_range\(.*WAIT_AFTER/ { print "wait-new"; next }
	/^syncfs\(/ { print "syncfs"; next }
	/^sync\(/ { print "sync"; next }
	/^f(data)?sync\(/ { p = path()
		if (p == dir) print "fsync-dir"
		else if (p ~ /\/\.[^\/]*$/) print "fsync-new"
		else print "fsync-renamed"
		next }
	/^linkat\(/ { print "link-old"; next }
	/^rename/ { print (/~"/ ? "rename-backup" : "rename"); next }
	/^unlinkat\(/ { print "unlink-old" }' | paste -sd,)
	# -b's probe for hard links (a link made and removed at once, before
	# the input is read): not a step of the sequence
	WORDS=${WORDS#link-old,unlink-old,}
}

# seq_matches DIR ARG...: --check ARG... says what the run of ARG... then
# does (flushes, links, renames), and a word that follows the allow-list.
seq_matches()
{
	local dir=$1 line expect
	shift
	run --separate-stderr "$PONYWRITE" --check "$@"
	assert_status 0
	line=$output
	run_words "$dir" "$@"
	assert_status 0
	# unlink-old: the directory is flushed again after it
	expect=$(field 5 "$line" | sed 's/unlink-old/unlink-old,fsync-dir/')
	[ "$expect" = "$WORDS" ] ||
	    fail "$*: --check said '$(field 5 "$line")', the run did '$WORDS'"
	case $(plan_of "$dir") in
	ordered | filelog) [ "$(field 6 "$line")" = proven ] ;;
	fuse) [ "$(field 6 "$line")" = fuse ] ;;
	*) [ "$(field 6 "$line")" = safe ] ;;
	esac || fail "$*: --check said '$(field 6 "$line")', plan_of says $(plan_of "$dir")"
}

@test "--check's flush sequence is what the run then does, and its word follows the allow-list: ext4, ext4 nobarrier, ext2, XFS, btrfs, bindfs" {
	mkdir s
	printf 'new a\n' > s/a
	printf 'new b\n' > s/b
	require_ext4_sysfs
	mount_fs ext4 e4 -F
	MOUNT_OPTS=nobarrier mount_fs ext4 nb -F
	mount_fs ext2 e2 -F
	mount_fs xfs x -f
	mount_fs btrfs b -f
	local m
	for m in e4 nb e2 x b; do
		mkdir "$m/d"
		echo old > "$m/d/t"
		seq_matches "$m/d" -i s/a "$m/d/t"
		seq_matches "$m/d" -b -i s/b "$m/d/t"
		seq_matches "$m/d" --no-sync -i s/a "$m/d/t"
	done
	mkdir lower
	mount_bindfs lower bf
	mkdir bf/d
	echo old > bf/d/t
	seq_matches bf/d -i s/a bf/d/t
	# a batch on ext4: data waited for, the directories flushed after
	run --separate-stderr "$PONYWRITE" --check -t e4/d s/a s/b
	assert_status 0
	[ "$(cut -f5 <<<"$output")" = $'wait-new,rename,flush-dirs\nwait-new,rename,flush-dirs' ] ||
	    fail "-t: $output"
}

@test "--check on tmpfs says volatile; a usage error for --check with --print-changed" {
	mkdir t
	if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m tmpfs t; then
		PW_MOUNTS+=("$WORK/t")
	fi
	[ "$(findmnt -no FSTYPE -T t)" = tmpfs ] || skip "no tmpfs here"
	run --separate-stderr "$PONYWRITE" --check t/x </dev/null
	assert_status 0
	[ "$(field 6 "$output")" = volatile ] || fail "tmpfs: $output"
	run --separate-stderr "$PONYWRITE" --check --print-changed t/x </dev/null
	assert_status 2
	assert_stderr "ponywrite: --check and --print-changed cannot be combined
Try 'ponywrite --help' for more information."
}

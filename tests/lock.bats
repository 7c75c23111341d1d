#!/usr/bin/env bats
# -l, --lock: ponywrite -l runs on the same target are serialized for the
# whole run (command included), so read-modify-write is safe; no lock files.

load helpers
load features_helpers

# Restore fs.protected_regular if a test changed it.
eval "$(declare -f teardown | sed '1s/^teardown/features_teardown/')"
teardown()
{
	if [ -n "${PROTECTED_REGULAR:-}" ]; then
		sysctl -q -w fs.protected_regular="$PROTECTED_REGULAR"
	fi
	features_teardown
}

# parallel N ARG...: N ponywrite ARG... at once; fails unless all exit 0.
parallel()
{
	local n=$1 i p failed=0
	shift
	local pids=()
	for i in $(seq "$n"); do
		"$PONYWRITE" "$@" 3>&- 2>>errors &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || failed=$((failed + 1))
	done
	[ "$failed" -eq 0 ] || fail "$failed of $n runs failed: $(cat errors)"
	[ ! -s errors ] || fail "messages: $(cat errors)"
	rm -f errors
}

@test "100 parallel -l increments of a counter leave exactly 100" {
	echo 0 > counter
	before=$(listing)
	parallel 100 -l counter sh -c 'echo $(( $(cat counter) + 1 ))'
	assert_content counter $'100\n'
	[ "$(listing)" = "$before" ] || fail "directory was: $before; now: $(listing)"
	assert_no_litter
}

@test "100 parallel -l increments of a counter that does not exist yet leave 100" {
	before=$(listing)
	parallel 100 --no-sync -l counter sh -c 'echo $(( $(cat counter 2>/dev/null || echo 0) + 1 ))'
	assert_content counter $'100\n'
	[ "$(listing)" = "$(printf '%s\n' $before counter | sed '/^$/d' | LC_ALL=C sort)" ] ||
	    fail "directory was: $before; now: $(listing)"
	assert_no_litter
}

@test "--lock, through a symbolic link and by the real name: one lock" {
	mkdir sub
	echo 0 > sub/counter
	ln -s sub/counter link
	pids=()
	for i in $(seq 25); do
		"$PONYWRITE" --no-sync --lock link sh -c 'echo $(( $(cat link) + 1 ))' 3>&- &
		pids+=($!)
		"$PONYWRITE" --no-sync --lock sub/counter sh -c 'echo $(( $(cat sub/counter) + 1 ))' 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || fail "a run failed"
	done
	assert_content sub/counter $'50\n'
	assert_symlink link
	[ "$(listing)" = "$(printf 'link\nsub')" ] || fail "directory holds: $(listing)"
	[ "$(listing sub)" = counter ] || fail "sub holds: $(listing sub)"
	assert_no_litter
}

@test "-l with stdin works and leaves no lock file; -v says created/replaced" {
	run --separate-stderr "$PONYWRITE" -l -v t < <(printf 'one\n')
	assert_status 0
	assert_stderr "ponywrite: t: created"
	assert_content t $'one\n'
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
	run --separate-stderr "$PONYWRITE" -l -v t < <(printf 'two\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'two\n'
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
	assert_no_litter
}

@test "-l with -C: unchanged, -v says so, no lock file" {
	printf 'same\n' > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -l -C -v t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
}

# A second -l run waits for the first (which holds the lock until its command
# ends) and then reads the file the first one wrote.
second_waits_for_first()
{
	spawn -l t sh -c 'echo first; touch started; while [ ! -e go ]; do sleep 0.02; done'
	wait_for started
	"$PONYWRITE" -l t sh -c 'cat t; echo second; touch second-ran' \
	    3>&- 2>second.err &
	second=$!
	sleep 0.3
	[ ! -e second-ran ] || fail "the second run did not wait for the first"
	touch go
	reap
	[ "$BG_END" = "exit 0" ] || fail "first run: $BG_END; $BG_STDERR"
	wait "$second" || fail "second run failed: $(cat second.err)"
	assert_content t $'first\nsecond\n'
	assert_no_litter
}

@test "-l holds the lock for the whole command; the waiter sees the new file" {
	echo 0 > t
	second_waits_for_first
}

@test "-l on a missing target: the waiter sees the file the first run created" {
	second_waits_for_first
}

@test "-l: SIGTERM while waiting for the lock: dies by it, command never run" {
	echo 0 > t
	"$PONYWRITE" -l t sh -c 'echo holder; touch started; while [ ! -e go ]; do sleep 0.02; done' \
	    3>&- 2>holder.err &
	holder=$!
	wait_for started
	snapshot t
	spawn -l t sh -c 'touch waiter-ran; echo waiter'
	pid=$(spawned_pid)
	sleep 0.2
	kill -TERM "$pid"
	reap
	[ "$BG_END" = "signal 15" ] || fail "waiter ended with $BG_END; $BG_STDERR"
	[ ! -e waiter-ran ] || fail "the waiter's command ran"
	assert_untouched t
	touch go
	wait "$holder" || fail "holder failed: $(cat holder.err)"
	assert_content t $'holder\n'
	assert_no_litter
}

@test "-l: a failed run releases the lock and leaves the target untouched" {
	echo 0 > t
	snapshot t
	run --separate-stderr timeout 5 "$PONYWRITE" -l t sh -c 'echo x; exit 3'
	assert_status 3
	assert_stderr "ponywrite: t: not replaced: sh exited with status 3"
	assert_untouched t
	run --separate-stderr timeout 5 "$PONYWRITE" -l t echo 1
	assert_status 0
	assert_content t $'1\n'
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
	assert_no_litter
}

@test "-l: a holder killed by SIGKILL leaves no stale lock" {
	echo 0 > t
	spawn -l t sh -c 'echo $$ > cmdpid; touch started; exec sleep 30'
	pid=$(spawned_pid)
	wait_for started
	kill -KILL "$pid"
	reap
	kill -KILL "$(cat cmdpid)"
	[ "$BG_END" = "signal 9" ] || fail "holder ended with $BG_END"
	run --separate-stderr timeout 5 "$PONYWRITE" -l t echo 1
	assert_status 0
	assert_content t $'1\n'
}

@test "-l on a directory or in a missing directory: refused, untouched" {
	mkdir d
	snapshot d
	run --separate-stderr "$PONYWRITE" -l d < <(printf 'x\n')
	assert_status 1
	assert_stderr "ponywrite: d: not a regular file"
	assert_untouched d
	run --separate-stderr "$PONYWRITE" -l nodir/t < <(printf 'x\n')
	assert_status 1
	assert_stderr "ponywrite: nodir: No such file or directory"
	[ "$(listing)" = d ] || fail "directory holds: $(listing)"
	assert_no_litter
}

@test "-l on different new targets in one directory: no deadlock when nested" {
	run --separate-stderr timeout 3 "$PONYWRITE" --no-sync -l a "$PONYWRITE" --no-sync -l b echo hi
	assert_status 0
	assert_content b $'hi\n'
	assert_regular a
	[ ! -s a ] || fail "a is not empty"
	assert_no_litter
}

@test "-l on a new target does not block -l on another target" {
	spawn -l a sh -c 'touch started; while [ ! -e go ]; do sleep 0.02; done'
	wait_for started
	run --separate-stderr timeout 3 "$PONYWRITE" --no-sync -l b echo hi
	touch go
	reap
	assert_status 0
	assert_content b $'hi\n'
	[ "$BG_END" = "exit 0" ] || fail "first run: $BG_END; $BG_STDERR"
	assert_no_litter
}

# hold_lock TARGET: a -l run on TARGET that holds the lock until "go" exists.
hold_lock()
{
	spawn -l "$1" sh -c 'echo holder; touch started; while [ ! -e go ]; do sleep 0.02; done'
	wait_for started
}

release_lock()
{
	touch go
	reap
	[ "$BG_END" = "exit 0" ] || fail "holder: $BG_END; $BG_STDERR"
}

@test "-w: gives up on a busy lock after the time, exit 1, untouched, no busy loop" {
	echo old > t
	hold_lock t
	snapshot t
	TIMEFORMAT=%R:%U:%S
	{ time "$PONYWRITE" -w 0.5 t < <(echo new) 2>err; } 2>time || status=$?
	assert_status 1
	stderr=$(cat err)
	assert_stderr "ponywrite: t: lock is busy: gave up after 0.5 seconds (-w)"
	IFS=: read -r real user sys < time
	awk -v r="$real" 'BEGIN { exit !(r >= 0.45 && r < 3) }' ||
	    fail "gave up after $real s, not 0.5 s"
	awk -v u="$user" -v s="$sys" 'BEGIN { exit !(u + s < 0.2) }' ||
	    fail "used $user s user and $sys s system time while waiting"
	assert_untouched t
	release_lock
	assert_content t $'holder\n'
	assert_no_litter
}

@test "--wait in command mode: 125, the command never runs; -w 0 does not wait" {
	echo old > t
	hold_lock t
	snapshot t
	run --separate-stderr timeout 5 "$PONYWRITE" --wait=0.2 t sh -c 'touch ran; echo x'
	assert_status 125
	assert_stderr "ponywrite: t: lock is busy: gave up after 0.2 seconds (-w); target not replaced"
	[ ! -e ran ] || fail "the command ran"
	run --separate-stderr timeout 1 "$PONYWRITE" -w 0 t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: lock is busy: gave up after 0 seconds (-w)"
	assert_untouched t
	release_lock
	assert_no_litter
}

@test "-w implies -l: it waits for a holder that finishes in time" {
	echo old > t
	hold_lock t
	"$PONYWRITE" -w 5 t sh -c 'cat t; echo waiter' 3>&- 2>waiter.err &
	waiter=$!
	sleep 0.3
	release_lock
	wait "$waiter" || fail "waiter failed: $(cat waiter.err)"
	assert_content t $'holder\nwaiter\n'
	assert_no_litter
}

@test "-w on a missing target: busy lock file, gives up, no lock file left" {
	hold_lock t
	run --separate-stderr timeout 5 "$PONYWRITE" -w 0.2 t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: lock is busy: gave up after 0.2 seconds (-w)"
	[ ! -e t ] || fail "t was created"
	release_lock
	assert_content t $'holder\n'
	[ ! -e .t.ponywrite-lock ] || fail "the lock file is left"
	assert_no_litter
}

@test "invalid -w values: one line and a hint, exit 2, nothing done" {
	echo old > t
	snapshot t
	for w in x -1 '' ' 1' 1s nan inf 1e99 0x10 1e3 . 99999999999; do
		run --separate-stderr "$PONYWRITE" -w "$w" t < <(echo new)
		assert_status 2
		assert_stderr "ponywrite: invalid number of seconds: '$w'
Try 'ponywrite --help' for more information."
		assert_untouched t
	done
	run --separate-stderr "$PONYWRITE" -w 1.5 t < <(echo new)
	assert_status 0
	assert_content t $'new\n'
	assert_no_litter
}

@test "-l -P on a symbolic link: the link is replaced, no spinning, no lock file" {
	echo real > real
	ln -s real link
	run --separate-stderr timeout 5 "$PONYWRITE" -l -P link < <(echo new)
	assert_status 0
	assert_quiet
	assert_regular link
	assert_content link $'new\n'
	assert_content real $'real\n'
	ln -s real link2
	run --separate-stderr timeout 5 "$PONYWRITE" -a -P -v link2 < <(echo appended)
	assert_status 0
	assert_stderr "ponywrite: link2: replaced"
	assert_content link2 $'appended\n'
	[ "$(listing)" = "$(printf 'link\nlink2\nreal')" ] || fail "directory holds: $(listing)"
	assert_no_litter
}

@test "-l -P: parallel runs on a dangling link are serialized" {
	ln -s nowhere counter
	pids=()
	for i in $(seq 20); do
		timeout 10 "$PONYWRITE" --no-sync -l -P counter sh -c 'echo $(( $(cat counter 2>/dev/null || echo 0) + 1 ))' 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || fail "a run failed"
	done
	assert_regular counter
	assert_content counter $'20\n'
	[ "$(listing)" = counter ] || fail "directory holds: $(listing)"
}

# delay_lock_open ARG...: ponywrite ARG... (on target t) in the background
# under strace, its first open of .t.ponywrite-lock held back 1.5 s; DELAYED
# is the strace pid.  Returns once ponywrite has its directory open.
delay_lock_open()
{
	require_cmd strace pgrep
	strace -f -qq -o /dev/null -P .t.ponywrite-lock -e trace=openat \
	    -e inject=openat:delay_enter=1500000:when=1 \
	    "$PONYWRITE" "$@" 3>&- 2>delayed.err &
	DELAYED=$!
	local i pid
	for i in $(seq 250); do
		pid=$(pgrep -P "$DELAYED") && break
		sleep 0.02
	done
	[ -n "$pid" ] || fail "ponywrite did not start under strace"
	for i in $(seq 250); do
		ls -l /proc/"$pid"/fd 2>/dev/null | grep -q -- "-> $(pwd -P)\$" && break
		sleep 0.02
	done
	sleep 0.2
}

@test "-l: a waiter that saw the target missing leaves no lock file once it appears" {
	delay_lock_open -l t sh -c 'cat t; echo waiter'
	# Meanwhile another run creates t and removes its own lock file.
	run --separate-stderr timeout 5 "$PONYWRITE" -l t echo holder
	assert_status 0
	wait "$DELAYED" || fail "the waiter failed: $(cat delayed.err)"
	[ ! -s delayed.err ] || fail "waiter said: $(cat delayed.err)"
	rm delayed.err
	assert_content t $'holder\nwaiter\n'
	[ ! -e .t.ponywrite-lock ] || fail "the lock file was left behind"
	assert_no_litter
}

# as_daemon CMD...: a second ordinary user, next to nobody.
as_daemon()
{
	setpriv --reuid=daemon --regid=daemon --clear-groups -- "$@"
}

require_two_users()
{
	require_nobody
	getent passwd daemon >/dev/null || skip "needs user daemon"
	as_daemon test -x "$PONYWRITE" || skip "daemon cannot run $PONYWRITE"
}

# second_user_waits UMASK: nobody holds the lock of a missing pub/t, made
# under UMASK; daemon must wait for it, not fail, then create pub/t.
second_user_waits()
{
	"${NOBODY[@]}" sh -c 'umask "$1"; exec "$2" -l pub/t sh -c "touch pub/started
	    while [ ! -e pub/go ]; do sleep 0.02; done; exit 3"' _ "$1" "$PONYWRITE" \
	    3>&- 2>first.err &
	first=$!
	PW_PID=$first
	wait_for pub/started
	[ -e pub/.t.ponywrite-lock ] || fail "no lock file"
	run --separate-stderr timeout 5 setpriv --reuid=daemon --regid=daemon \
	    --clear-groups -- "$PONYWRITE" -w 0.3 pub/t < <(echo b)
	assert_status 1
	assert_stderr "ponywrite: pub/t: lock is busy: gave up after 0.3 seconds (-w)"
	setpriv --reuid=daemon --regid=daemon --clear-groups -- \
	    "$PONYWRITE" -l pub/t echo second 3>&- 2>second.err &
	second=$!
	sleep 0.3
	[ ! -e pub/t ] || fail "the second user did not wait"
	touch pub/go
	PW_PID=
	wait "$first" && fail "the first run did not fail" || :
	wait "$second" || fail "the second user failed: $(cat second.err)"
	assert_content pub/t $'second\n'
	assert_owner pub/t "$(id -u daemon)" "$(id -g daemon)"
	[ ! -e pub/.t.ponywrite-lock ] || fail "lock file left behind"
	assert_no_litter
}

@test "-l: another user waits for a lock file made under umask 077 (root)" {
	require_two_users
	mkdir -m 0777 pub
	second_user_waits 077
}

@test "-l: another user waits for a lock file in a sticky dir under protected_regular=2 (root)" {
	require_two_users
	[ -w /proc/sys/fs/protected_regular ] || skip "cannot set fs.protected_regular"
	PROTECTED_REGULAR=$(sysctl -n fs.protected_regular)
	sysctl -q -w fs.protected_regular=2
	mkdir -m 1777 pub
	second_user_waits 022
}

@test "-l: a symbolic link or FIFO planted as the lock file is not followed, no hang" {
	echo secret > victim
	snapshot victim
	ln -s victim .t.ponywrite-lock
	run --separate-stderr timeout 5 "$PONYWRITE" -l t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: cannot lock: $E_LOOP"
	assert_untouched victim
	[ ! -e t ] || fail "t was created"
	rm .t.ponywrite-lock
	mkfifo .t.ponywrite-lock
	run --separate-stderr timeout 5 "$PONYWRITE" -l t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: cannot lock: .t.ponywrite-lock is not a regular file"
	[ ! -e t ] || fail "t was created"
	rm .t.ponywrite-lock
	assert_no_litter
}

@test "-l -b: a second run waits until the first has put its backup in place" {
	require_cmd strace
	echo v0 > t
	# The first run's second rename (its backup into t~) is held back 1.5 s.
	strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 \
	    -e inject=rename,renameat,renameat2:delay_enter=1500000:when=2 \
	    "$PONYWRITE" -l -b t echo A 3>&- 2>first.err &
	first=$!
	for i in $(seq 250); do
		[ "$(cat t)" = A ] && break
		sleep 0.02
	done
	assert_content t $'A\n'
	run --separate-stderr timeout 10 "$PONYWRITE" -l -b t echo C
	assert_status 0
	wait "$first" || fail "the first run failed: $(cat first.err)"
	rm first.err
	assert_content t $'C\n'
	assert_content t~ $'A\n'
	assert_no_litter
}

# hold_forever FILE: this shell holds flock(2) on FILE until the test ends.
hold_forever()
{
	exec 8<"$1"
	flock -x 8
}

@test "-w with SIGALRM blocked on entry: gives up after the time, exit 1 (125 in command mode)" {
	require_cmd flock
	env --block-signal=ALRM true 2>/dev/null || skip "env has no --block-signal"
	echo old > t
	snapshot t
	hold_forever t
	run --separate-stderr timeout 10 env --block-signal=ALRM \
	    "$PONYWRITE" -w 0.5 t 8<&- < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: lock is busy: gave up after 0.5 seconds (-w)"
	assert_untouched t
	run --separate-stderr timeout 10 env --block-signal=ALRM \
	    "$PONYWRITE" --wait=0.5 t 8<&- sh -c 'touch ran; echo x'
	assert_status 125
	assert_stderr "ponywrite: t: lock is busy: gave up after 0.5 seconds (-w); target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched t
	exec 8<&-
	assert_no_litter
}

@test "-w: the command gets the signal mask it had on entry (SIGALRM blocked stays blocked)" {
	env --block-signal=ALRM true 2>/dev/null || skip "env has no --block-signal"
	echo old > t
	run --separate-stderr env --block-signal=ALRM "$PONYWRITE" -w 5 t \
	    awk '/^SigBlk/ { print $2 }' /proc/self/status
	assert_status 0
	blk=$(cat t)
	(( (0x$blk >> 13) & 1 )) || fail "SIGALRM not blocked in the command: SigBlk $blk"
	run --separate-stderr "$PONYWRITE" -w 5 t \
	    awk '/^SigBlk/ { print $2 }' /proc/self/status
	assert_status 0
	blk=$(cat t)
	(( ((0x$blk >> 13) & 1) == 0 )) || fail "SIGALRM blocked in the command: SigBlk $blk"
	assert_no_litter
}

@test "-w: fractions that round up to a whole second still time out" {
	require_cmd flock
	echo old > t
	snapshot t
	hold_forever t
	for w in 0.9999999 0.0000001 0.5000000001; do
		run --separate-stderr timeout 10 "$PONYWRITE" -w "$w" t 8<&- < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: t: lock is busy: gave up after $w seconds (-w)"
		assert_untouched t
	done
	exec 8<&-
	assert_no_litter
}

@test "-w 99999999: a long wait is set, and the lock taken when the holder lets go" {
	require_cmd flock
	echo old > t
	flock t sleep 0.5 &
	holder=$!
	for _ in $(seq 50); do
		flock -n t true || break
		sleep 0.05
	done
	run --separate-stderr timeout 10 "$PONYWRITE" -w 99999999 t < <(echo new)
	wait "$holder"
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	assert_no_litter
}

@test "-w: a timer that cannot be set fails the run, untouched" {
	require_cmd strace
	echo old > t
	snapshot t
	run --separate-stderr strace -qq -o /dev/null -e inject=setitimer:error=EINVAL \
	    "$PONYWRITE" -w 0.5 t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: cannot set the timer of -w: Invalid argument"
	assert_untouched t
	assert_no_litter
}

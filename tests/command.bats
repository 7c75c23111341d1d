#!/usr/bin/env bats
# Command mode: ponywrite TARGET COMMAND [ARG...] replaces TARGET with the
# command's standard output, only if the command succeeds.

load helpers
load features_helpers

@test "the command's stdout replaces the target" {
	echo old > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" t printf 'a\nb\n'
	assert_status 0
	assert_quiet
	assert_content t $'a\nb\n'
	[ "$(inode t)" != "$old" ] || fail "t kept its inode: not replaced by rename"
	assert_no_litter
}

@test "command mode creates a missing target; -v says created, then replaced" {
	run --separate-stderr "$PONYWRITE" -v t echo one
	assert_status 0
	assert_stderr "ponywrite: t: created"
	[ -z "$output" ] || fail "stdout: $output"
	assert_content t $'one\n'
	assert_mode t 644
	run --separate-stderr "$PONYWRITE" -v t echo two
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'two\n'
	assert_no_litter
}

@test "a command that succeeds with no output empties the target" {
	echo old > t
	run --separate-stderr "$PONYWRITE" t true
	assert_status 0
	assert_quiet
	assert_regular t
	[ ! -s t ] || fail "t is not empty"
	assert_no_litter
}

@test "the command writes into a pipe, copied into a temporary file in the target's directory" {
	mkdir sub
	echo old > sub/t
	run --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR" \
	    "$PONYWRITE" sub/t sh -c 'readlink /proc/$$/fd/1; readlink /proc/$PPID/fd/*'
	assert_status 0
	real=$(cd sub && pwd -P)
	[[ $(head -1 sub/t) == pipe:* ]] || fail "command's stdout was $(head -1 sub/t), not a pipe"
	grep -q "^$real/\.t\." sub/t || fail "no temporary file in $real: $(cat sub/t)"
	assert_no_litter
}

@test "command exits N: status N, message, target untouched" {
	echo old > t
	chmod 640 t
	snapshot t
	for n in 1 2 3 42 124 255; do
		run --separate-stderr "$PONYWRITE" t sh -c "echo partial; exit $n"
		assert_status "$n"
		assert_stderr "ponywrite: t: not replaced: sh exited with status $n"
		[ -z "$output" ] || fail "stdout: $output"
		assert_untouched t
		assert_no_litter
	done
}

@test "command exits 1 with a missing target: nothing is created" {
	run --separate-stderr "$PONYWRITE" new sh -c 'echo partial; exit 1'
	assert_status 1
	assert_stderr "ponywrite: new: not replaced: sh exited with status 1"
	[ ! -e new ] || fail "new was created"
	assert_no_litter
	[ -z "$(listing)" ] || fail "directory not empty: $(listing)"
}

@test "command killed by a signal: 128+N, message, target untouched" {
	echo old > t
	snapshot t
	run --separate-stderr "$PONYWRITE" t sh -c 'echo partial; kill -KILL $$'
	assert_status 137
	assert_stderr "ponywrite: t: not replaced: sh killed by signal 9"
	assert_untouched t
	assert_no_litter
	usr1=$(kill -l USR1)
	run --separate-stderr "$PONYWRITE" t sh -c 'echo partial; kill -USR1 $$'
	assert_status $((128 + usr1))
	assert_stderr "ponywrite: t: not replaced: sh killed by signal $usr1"
	assert_untouched t
	assert_no_litter
}

@test "command not found: 127, target untouched, nothing created" {
	echo old > t
	snapshot t
	# A PATH without unsearchable directories: execvp says EACCES for those.
	run -127 --separate-stderr env PATH=/usr/bin:/bin \
	    "$PONYWRITE" t ponywrite-no-such-command arg
	assert_status 127
	assert_stderr "ponywrite: t: not replaced: command 'ponywrite-no-such-command' not found"
	assert_untouched t
	assert_no_litter
	run -127 --separate-stderr "$PONYWRITE" t ./missing
	assert_status 127
	assert_stderr "ponywrite: t: not replaced: command './missing' not found"
	assert_untouched t
	assert_no_litter
	run -127 --separate-stderr env PATH=/usr/bin:/bin \
	    "$PONYWRITE" new ponywrite-no-such-command
	assert_status 127
	[ ! -e new ] || fail "new was created"
	assert_no_litter
}

@test "command not executable: 126, target untouched" {
	echo old > t
	printf '#!/bin/sh\necho hi\n' > script
	chmod 644 script
	mkdir dir
	snapshot t
	run --separate-stderr "$PONYWRITE" t ./script
	assert_status 126
	assert_stderr "ponywrite: t: not replaced: command './script' cannot be run: Permission denied"
	assert_untouched t
	assert_no_litter
	run --separate-stderr "$PONYWRITE" t ./dir
	assert_status 126
	assert_stderr "ponywrite: t: not replaced: command './dir' cannot be run: Permission denied"
	assert_untouched t
	assert_no_litter
}

@test "ponywrite's own failure (missing directory, directory or FIFO target) -> 125, command not run" {
	run --separate-stderr "$PONYWRITE" nodir/t sh -c 'touch marker; echo x'
	assert_status 125
	assert_stderr "ponywrite: nodir: No such file or directory; target not replaced"
	[ ! -e marker ] || fail "the command ran"
	[ ! -e nodir ] || fail "nodir was created"
	assert_no_litter
	mkdir d
	snapshot d
	run --separate-stderr "$PONYWRITE" d sh -c 'touch marker; echo x'
	assert_status 125
	assert_stderr "ponywrite: d: not a regular file; target not replaced"
	[ ! -e marker ] || fail "the command ran"
	assert_untouched d
	assert_no_litter
	mkfifo p
	snapshot p
	run --separate-stderr timeout 10 "$PONYWRITE" p sh -c 'touch marker; echo x'
	assert_status 125
	assert_stderr "ponywrite: p: not a regular file; target not replaced"
	[ ! -e marker ] || fail "the command ran"
	assert_untouched p
	assert_no_litter
}

@test "ponywrite's own failure: unwritable directory -> 125, command not run" {
	unpriv_setup
	mkdir ro
	echo old > ro/t
	[ "$(id -u)" -eq 0 ] && chown -R nobody:nogroup ro
	chmod 555 ro
	snapshot ro/t
	run --separate-stderr unpriv "$PONYWRITE" ro/t sh -c 'touch marker; echo x'
	assert_status 125
	assert_stderr "ponywrite: ro: cannot create a temporary file in this directory: Permission denied; target not replaced"
	[ ! -e marker ] || fail "the command ran"
	assert_untouched ro/t
	assert_no_litter
}

@test "options stop at the first operand: ponywrite f ls -l; ponywrite -v f echo -n x" {
	echo data > data
	expected=$(ls -l data)
	run --separate-stderr "$PONYWRITE" f ls -l data
	assert_status 0
	assert_quiet
	assert_content f "$expected"$'\n'
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -v g echo -n x
	assert_status 0
	assert_stderr "ponywrite: g: created"
	assert_content g x
	assert_no_litter
}

@test "ponywrite's own option letters after the target go to the command" {
	echo old > t
	echo src > src
	run --separate-stderr "$PONYWRITE" t sh -c 'printf "%s|" "$@"' sh \
	    -v -a -E -i src -C --help --version
	assert_status 0
	assert_quiet
	assert_content t "-v|-a|-E|-i|src|-C|--help|--version|"
	assert_no_litter
}

@test "-- ends options; a later -- goes to the command" {
	run --separate-stderr "$PONYWRITE" -v -- -t sh -c 'printf "%s|" "$@"' sh -- -v
	assert_status 0
	assert_stderr "ponywrite: -t: created"
	assert_content ./-t "--|-v|"
	assert_no_litter
}

@test "-i with a command is a usage error (exit 2), nothing done" {
	echo old > t
	echo src > src
	snapshot t
	for src in src -; do
		run --separate-stderr "$PONYWRITE" -i "$src" t sh -c 'touch marker; echo x'
		assert_status 2
		assert_stderr_has "ponywrite: -i cannot be combined with a command"
		[ ! -e marker ] || fail "the command ran"
		assert_untouched t
		assert_no_litter
	done
	run --separate-stderr "$PONYWRITE" --input=src new echo x
	assert_status 2
	assert_stderr_has "ponywrite: -i cannot be combined with a command"
	[ ! -e new ] || fail "new was created"
	assert_no_litter
}

@test "the command inherits stdin" {
	echo old > t
	printf 'one\ntwo\n' > in
	run --separate-stderr "$PONYWRITE" t tr a-z A-Z < in
	assert_status 0
	assert_quiet
	assert_content t $'ONE\nTWO\n'
	run --separate-stderr "$PONYWRITE" t sh -c 'read a; read b; echo "$b $a"' \
	    < <(printf 'x\ny\n')
	assert_status 0
	assert_content t $'y x\n'
	assert_no_litter
}

@test "the command inherits stderr; only stdout goes to the target" {
	echo old > t
	run --separate-stderr "$PONYWRITE" t sh -c 'echo to-err >&2; echo to-out'
	assert_status 0
	assert_stderr "to-err"
	[ -z "$output" ] || fail "stdout: $output"
	assert_content t $'to-out\n'
	# Same open file, not a copy: both name the same thing.
	"$PONYWRITE" t sh -c 'readlink /proc/$$/fd/2' 2>errfile
	assert_content t "$PWD/errfile"$'\n'
	assert_no_litter
}

@test "the command sees only descriptors 0, 1 and 2" {
	run only_std_fds "$PONYWRITE" t sh -c 'ls /proc/$$/fd'
	assert_status 0
	assert_content t $'0\n1\n2\n'
	# ls's own view: 0-2 and the descriptor it reads the directory with.
	run only_std_fds "$PONYWRITE" t ls /proc/self/fd
	assert_status 0
	assert_content t $'0\n1\n2\n3\n'
	assert_no_litter
}

@test "the command sees the descriptors it would see if run directly" {
	echo old > t
	direct=$(sh -c 'ls /proc/$$/fd' 4<t)
	"$PONYWRITE" -l t sh -c 'ls /proc/$$/fd' 4<t
	assert_content t "$direct"$'\n'
	assert_no_litter
}

# Signals sent to ponywrite while the command runs.
forwarded()
{
	local sig=$1 num
	num=$(kill -l "$sig")
	echo old > t
	snapshot t
	spawn t sh -c "
		trap 'echo $sig > marker; exit 7' $sig
		echo partial
		touch ready
		while :; do sleep 0.02; done"
	pid=$(spawned_pid)
	wait_for ready
	kill -"$sig" "$pid"
	reap
	[ "$BG_END" = "signal $num" ] ||
	    fail "ponywrite ended with $BG_END, not signal $num; stderr: $BG_STDERR"
	[ "$(cat marker)" = "$sig" ] || fail "the command did not get SIG$sig"
	assert_untouched t
	assert_no_litter
}

@test "SIGTERM is forwarded to the command; temp removed; dies by SIGTERM" {
	forwarded TERM
}

@test "SIGINT is forwarded to the command; temp removed; dies by SIGINT" {
	forwarded INT
}

@test "SIGHUP is forwarded to the command; temp removed; dies by SIGHUP" {
	forwarded HUP
}

@test "SIGTERM: a command that ignores it and succeeds still does not replace" {
	echo old > t
	snapshot t
	spawn t sh -c "
		trap 'touch marker' TERM
		echo new
		touch ready
		while [ ! -e marker ]; do sleep 0.02; done
		exit 0"
	pid=$(spawned_pid)
	wait_for ready
	kill -TERM "$pid"
	reap
	[ "$BG_END" = "signal 15" ] ||
	    fail "ponywrite ended with $BG_END, not signal 15; stderr: $BG_STDERR"
	[ -e marker ] || fail "the command did not get SIGTERM"
	assert_untouched t
	assert_no_litter
}

@test "SIGTERM with a missing target: nothing is created" {
	spawn new sh -c "trap 'exit 1' TERM; echo x; touch ready; while :; do sleep 0.02; done"
	pid=$(spawned_pid)
	wait_for ready
	kill -TERM "$pid"
	reap
	[ "$BG_END" = "signal 15" ] || fail "ponywrite ended with $BG_END"
	[ ! -e new ] || fail "new was created"
	assert_no_litter
}

@test "a signal ignored on entry (nohup) stays ignored for ponywrite and the command" {
	require_cmd perl
	echo old > t
	# Start it the way nohup(1) does: SIGHUP ignored.
	perl -e '$SIG{HUP} = "IGNORE"; exec { $ARGV[0] } @ARGV' \
	    "$PONYWRITE" t sh -c 'echo new; touch ready; while [ ! -e go ]; do sleep 0.02; done' \
	    </dev/null >/dev/null 2>err 3>&- &
	pid=$!
	wait_for ready
	kill -HUP "$pid"
	sleep 0.1
	touch go
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 0 ] || fail "nohup'd ponywrite exited $st after SIGHUP; stderr: $(cat err)"
	assert_content t $'new\n'
	assert_no_litter
}

@test "the command inherits a signal ignored on entry (nohup)" {
	require_cmd perl
	echo old > t
	run --separate-stderr perl -e '$SIG{HUP} = "IGNORE"; exec { $ARGV[0] } @ARGV' \
	    "$PONYWRITE" t sh -c 'kill -HUP $$; echo survived'
	assert_status 0
	assert_quiet
	assert_content t $'survived\n'
	assert_no_litter
}

@test "-E in command mode: empty output -> 125, target untouched" {
	echo old > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -E t true
	assert_status 125
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -E t sh -c 'echo only-stderr >&2'
	assert_status 125
	assert_untouched t
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -E t echo x
	assert_status 0
	assert_quiet
	assert_content t $'x\n'
	assert_no_litter
}

@test "command mode: large output is copied whole" {
	run --separate-stderr "$PONYWRITE" big sh -c 'head -c 5000000 /dev/zero | tr "\0" a'
	assert_status 0
	assert_quiet
	[ "$(stat -c %s big)" -eq 5000000 ] || fail "big has $(stat -c %s big) bytes"
	[ "$(tr -d a < big | wc -c)" -eq 0 ] || fail "big holds something else"
	assert_no_litter
}

@test "command mode works with SIGCHLD ignored on entry, and passes the status on" {
	echo old > t
	run --separate-stderr env --ignore-signal=CHLD "$PONYWRITE" t echo new
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	snapshot t
	run --separate-stderr env --ignore-signal=CHLD "$PONYWRITE" t sh -c 'echo x; exit 7'
	assert_status 7
	assert_stderr "ponywrite: t: not replaced: sh exited with status 7"
	assert_untouched t
	# The command itself still sees SIGCHLD ignored, as if run directly.
	run --separate-stderr env --ignore-signal=CHLD "$PONYWRITE" t \
	    grep SigIgn /proc/self/status
	assert_status 0
	ign=$(awk '{print $2}' t)
	(( (16#$ign >> 16) & 1 )) || fail "SIGCHLD not ignored in the command: $ign"
	assert_no_litter
}

@test "a background process of the command cannot write into the committed target" {
	echo old > t
	run --separate-stderr "$PONYWRITE" t sh -c 'echo main; (sleep 0.3; echo late) & exit 0'
	assert_status 0
	assert_content t $'main\nlate\n'
	sleep 0.4
	assert_content t $'main\nlate\n'
	assert_no_litter
}

@test "closed stdin and stderr are closed for the command too" {
	echo old > t
	"$PONYWRITE" t sh -c 'for fd in 0 2; do
		if [ -e /proc/$$/fd/$fd ]; then echo "$fd open"; else echo "$fd closed"; fi
	done' <&- 2>&-
	assert_content t $'0 closed\n2 closed\n'
	assert_no_litter
}

@test "SIGPIPE while the command runs is passed on; ponywrite waits for it, then dies by it" {
	echo old > t
	snapshot t
	spawn t sh -c "
		trap 'echo PIPE > marker; exit 7' PIPE
		touch ready
		while :; do sleep 0.02; done"
	pid=$(spawned_pid)
	wait_for ready
	kill -PIPE "$pid"
	reap
	[ "$BG_END" = "signal 13" ] || fail "ponywrite ended with $BG_END; stderr: $BG_STDERR"
	[ "$(cat marker)" = PIPE ] || fail "the command did not get SIGPIPE"
	assert_untouched t
	assert_no_litter
}

@test "Ctrl-C from the terminal reaches the command once, not twice" {
	require_cmd python3
	echo old > t
	snapshot t
	# The command counts the SIGINTs it is handed, one by one.
	cat > cmd <<'CMD'
import os, signal, time
r, w = os.pipe()
os.set_blocking(w, False)
os.set_blocking(r, False)
signal.signal(signal.SIGINT, lambda *a: None)
signal.set_wakeup_fd(w)
open("ready", "w").close()
time.sleep(1)
try:
    n = len(os.read(r, 100))
except BlockingIOError:
    n = 0
open("count", "w").write("int %d" % n)
CMD
	run python3 "$BATS_TEST_DIRNAME/pty-run" "$PONYWRITE" t python3 cmd
	[ "$(cat count)" = "int 1" ] || fail "the command got: $(cat count); $output"
	assert_untouched t
	assert_no_litter
}

@test "a command that exits 127 itself is not taken for one not found" {
	echo old > t
	snapshot t
	run -127 --separate-stderr "$PONYWRITE" t sh -c 'echo x; exit 127'
	assert_status 127
	assert_stderr "ponywrite: t: not replaced: sh exited with status 127"
	assert_untouched t
	assert_no_litter
}

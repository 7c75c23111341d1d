#!/usr/bin/env bats
# Signals while reading: temporary file removed, target untouched, death by
# the same signal.  After the rename: the directory flush is finished first.

load helpers

# killed_while_reading SIGNAL TARGET
killed_while_reading()
{
	local sig=$1 target=$2 num
	num=$(kill -l "$sig")
	snapshot "$target"
	start_slow "$target"
	printf 'partial' >&9
	tmp=$(temp_of "$PW_PID")
	wait_temp_size "$PW_PID" "$tmp" 7
	kill -s "$sig" "$PW_PID"
	finish_slow
	[ "$PW_STATUS" -eq $((128 + num)) ] ||
	    fail "SIG$sig: exit status $PW_STATUS, expected $((128 + num)); stderr: $PW_STDERR"
	[ ! -e "$tmp" ] || fail "SIG$sig: $tmp left behind"
	assert_untouched "$target"
	assert_no_litter
}

@test "SIGINT while reading a slow pipe" {
	echo old > t
	chmod 0640 t
	killed_while_reading INT t
}

@test "SIGTERM while reading a slow pipe" {
	echo old > t
	killed_while_reading TERM t
}

@test "SIGHUP while reading a slow pipe" {
	echo old > t
	killed_while_reading HUP t
}

@test "SIGPIPE while reading a slow pipe" {
	echo old > t
	killed_while_reading PIPE t
}

@test "a signal before a new target is created leaves nothing" {
	killed_while_reading TERM new
	[ ! -e new ] || fail "new was created"
}

@test "a signal while reading through a link to another directory cleans up there" {
	mkdir real
	echo old > real/f
	ln -s real/f link
	snapshot real/f
	start_slow link
	printf 'partial' >&9
	tmp=$(temp_of "$PW_PID" real)
	kill -s TERM "$PW_PID"
	finish_slow
	[ "$PW_STATUS" -eq 143 ] || fail "exit status $PW_STATUS"
	[ ! -e "$tmp" ] || fail "$tmp left behind"
	assert_untouched real/f
	assert_symlink link
	assert_no_litter
}

@test "a signal during the rename waits for the directory flush (held, then delivered)" {
	require_cmd strace
	echo old > t
	# Which rename call?
	strace -qq -o "$BATS_TEST_TMPDIR/r.trace" -e trace=rename,renameat,renameat2 \
	    "$PONYWRITE" t < <(echo first)
	sc=$(grep -o -m1 -E '^rename(at2?)?' "$BATS_TEST_TMPDIR/r.trace") || fail "no rename"
	echo old > t
	old=$(inode t)
	trace="$BATS_TEST_TMPDIR/d.trace"
	# Hold ponywrite at the entry of rename for a second, then signal it.
	strace -qq -o "$trace" -e trace=rename,renameat,renameat2,fsync,fdatasync \
	    -e inject="$sc":delay_enter=1000000 "$PONYWRITE" t < <(echo new) 3>&- &
	spid=$!
	for i in $(seq 100); do
		grep -q "^$sc(" "$trace" 2>/dev/null && break
		sleep 0.02
	done
	grep -q "^$sc(" "$trace" || fail "rename never reached"
	pid=$(cat /proc/"$spid"/task/*/children | tr -d ' ')
	[ -n "$pid" ] || fail "no ponywrite under strace"
	kill -s TERM "$pid"
	st=0
	wait "$spid" || st=$?
	[ "$st" -eq 143 ] || fail "exit status $st, expected 143: $(cat "$trace")"
	assert_content t $'new\n'
	[ "$(inode t)" != "$old" ] || fail "not replaced"
	# The directory flush came after the rename, before death.
	sed -n "/^$sc(/,\$p" "$trace" | grep -q '^fsync(' ||
	    fail "died without flushing the directory: $(cat "$trace")"
	assert_no_litter
}

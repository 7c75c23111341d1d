#!/usr/bin/env bats
# Core behaviour: input sources, replacement by rename, new files, messages.

load helpers

@test "stdin from a pipe replaces the target" {
	echo old > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" t < <(printf 'new\ncontent\n')
	assert_status 0
	assert_quiet
	assert_content t $'new\ncontent\n'
	[ "$(inode t)" != "$old" ] || fail "target kept its inode: not replaced by rename"
	assert_no_litter
}

@test "stdin from a shell pipeline" {
	echo old > t
	run --separate-stderr bash -c 'printf "a\nb\n" | "$1" t' _ "$PONYWRITE"
	assert_status 0
	assert_quiet
	assert_content t $'a\nb\n'
	assert_no_litter
}

@test "-i FILE reads the file, --input=FILE too" {
	echo old > t
	printf 'from file\n' > src
	run --separate-stderr "$PONYWRITE" -i src t < <(echo stdin)
	assert_status 0
	assert_quiet
	assert_content t $'from file\n'
	assert_content src $'from file\n'
	printf 'long form\n' > src2
	run --separate-stderr "$PONYWRITE" --input=src2 t </dev/null
	assert_status 0
	assert_content t $'long form\n'
	assert_no_litter
}

@test "-i - reads stdin" {
	echo old > t
	run --separate-stderr "$PONYWRITE" -i - t < <(echo dash)
	assert_status 0
	assert_quiet
	assert_content t $'dash\n'
	assert_no_litter
}

@test "same file: sort -u f | ponywrite f" {
	printf 'b\na\nb\nc\na\n' > f
	run --separate-stderr bash -c 'sort -u f | "$1" f' _ "$PONYWRITE"
	assert_status 0
	assert_quiet
	assert_content f $'a\nb\nc\n'
	assert_no_litter
}

@test "same file: ponywrite -i f f keeps content and gives a new inode" {
	seq 1 20000 > f
	cp f expected
	old=$(inode f)
	run --separate-stderr "$PONYWRITE" -i f f </dev/null
	assert_status 0
	assert_quiet
	cmp f expected
	[ "$(inode f)" != "$old" ] || fail "-i f f rewrote f in place"
	assert_no_litter
}

@test "empty input gives an empty file" {
	echo old > t
	run --separate-stderr "$PONYWRITE" t </dev/null
	assert_status 0
	assert_quiet
	assert_regular t
	[ ! -s t ] || fail "t is not empty"
	run --separate-stderr "$PONYWRITE" new < <(:)
	assert_status 0
	assert_regular new
	[ ! -s new ] || fail "new is not empty"
	assert_no_litter
}

@test "64 MiB from a pipe" {
	head -c 64M /dev/urandom > "$BATS_TEST_TMPDIR/big"
	echo old > t
	run --separate-stderr bash -c 'cat "$2" | "$1" t' _ "$PONYWRITE" "$BATS_TEST_TMPDIR/big"
	assert_status 0
	assert_quiet
	cmp t "$BATS_TEST_TMPDIR/big"
	assert_no_litter
}

@test "64 MiB from a file (-i) and from a redirected file" {
	head -c 64M /dev/urandom > big
	echo old > t
	run --separate-stderr "$PONYWRITE" -i big t </dev/null
	assert_status 0
	assert_quiet
	cmp t big
	assert_no_litter
}

@test "stdin that is a file already partly read is copied from its offset" {
	seq 1 100000 > src
	echo old > t
	run --separate-stderr bash -c '{ dd bs=10 count=1 of=/dev/null status=none; exec "$1" t; } < src' _ "$PONYWRITE"
	assert_status 0
	tail -c +11 src | cmp - t
	assert_no_litter
}

@test "input larger than the first chunk from a slow pipe is complete" {
	run --separate-stderr bash -c '
	    { seq 1 50000; sleep 0.2; seq 50001 100000; } | "$1" t' _ "$PONYWRITE"
	assert_status 0
	seq 1 100000 | cmp - t
	assert_no_litter
}

@test "replace gives the target a new inode; hard links keep the old content" {
	echo old > t
	ln t other
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" t < <(echo new)
	assert_status 0
	[ "$(inode t)" != "$old" ] || fail "target kept its inode"
	[ "$(inode other)" = "$old" ] || fail "the other link changed"
	assert_content other $'old\n'
	assert_content t $'new\n'
	[ "$(stat -c %h t)" = 1 ] || fail "t still has other links"
	assert_no_litter
}

@test "new file gets 0666 & ~umask" {
	for m in 022:644 077:600 002:664 027:640 000:666 777:0; do
		rm -f "n$m"
		run --separate-stderr bash -c 'umask "$2"; exec "$1" "$3"' _ "$PONYWRITE" "${m%:*}" "n$m" < <(echo x)
		assert_status 0
		assert_quiet
		assert_mode "n$m" "${m#*:}"
		chmod u+r "n$m"
		assert_content "n$m" $'x\n'
	done
	assert_no_litter
}

@test "stdin from /dev/null, without a controlling terminal, gives an empty file" {
	require_cmd setsid
	echo old > t
	run --separate-stderr setsid -w "$PONYWRITE" t </dev/null
	assert_status 0
	assert_quiet
	[ -f t ] && [ ! -s t ] || fail "t should be empty"
	run --separate-stderr setsid -w "$PONYWRITE" t < <(echo piped)
	assert_status 0
	assert_content t $'piped\n'
	assert_no_litter
}

@test "a terminal on stdin is read like any other input with -i -" {
	require_cmd script
	echo old > t
	# script(1) gives ponywrite a pseudo-terminal; ^D ends the input.
	run timeout 10 bash -c 'printf "typed line\n\004" |
	    script -qec "\"$1\" -i - t" /dev/null' _ "$PONYWRITE"
	[ "$status" -ne 124 ] || fail "ponywrite hung on a terminal"
	assert_status 0
	assert_content t $'typed line\n'
	assert_no_litter
}

@test "closed stdin fails without touching the target" {
	echo old > t
	snapshot t
	# Not under run: its command substitution would put a pipe on fd 0.
	status=0
	timeout 10 "$PONYWRITE" t <&- >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || status=$?
	output=$(cat "$BATS_TEST_TMPDIR/out")
	stderr=$(cat "$BATS_TEST_TMPDIR/err")
	assert_status 1
	assert_stderr_has "ponywrite: stdin: "
	assert_untouched t
	assert_no_litter
}

@test "-v says replaced or created, with the path as typed" {
	mkdir d
	run --separate-stderr "$PONYWRITE" -v d/t < <(echo 1)
	assert_status 0
	[ -z "$output" ] || fail "stdout not empty: $output"
	assert_stderr "ponywrite: d/t: created"
	run --separate-stderr "$PONYWRITE" -v ./d//t < <(echo 2)
	assert_status 0
	[ -z "$output" ] || fail "stdout not empty: $output"
	assert_stderr "ponywrite: ./d//t: replaced"
	run --separate-stderr "$PONYWRITE" --verbose d/t < <(echo 3)
	assert_status 0
	assert_stderr "ponywrite: d/t: replaced"
	assert_content d/t $'3\n'
	assert_no_litter
}

@test "nothing is printed on success without -v" {
	run --separate-stderr "$PONYWRITE" t < <(echo 1)
	assert_status 0
	assert_quiet
	run --separate-stderr "$PONYWRITE" t < <(echo 2)
	assert_status 0
	assert_quiet
}

@test "temporary file: hidden, named after the target, 0600, in the target's directory, not in TMPDIR" {
	mkdir d tmpdir
	echo old > d/target.conf
	chmod 0644 d/target.conf
	TMPDIR="$WORK/tmpdir" start_slow d/target.conf
	printf 'part' >&9
	tmp=$(temp_of "$PW_PID" d)
	name=${tmp##*/}
	[[ $name =~ ^\.target\.conf\.[^/]{12}$ ]] || fail "temporary file name '$name'"
	[ "$(dirname "$tmp")" = "$(cd d && pwd -P)" ] || fail "temporary file in $(dirname "$tmp")"
	[ -f "$tmp" ] || fail "$tmp not visible in the directory"
	assert_mode "$tmp" 600
	[ -z "$(ls -A tmpdir)" ] || fail "something was created in TMPDIR"
	printf 'rest\n' >&9
	finish_slow
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	assert_content d/target.conf $'partrest\n'
	assert_mode d/target.conf 644
	[ ! -e "$tmp" ] || fail "$tmp left behind"
	assert_no_litter
}

@test "a 255-byte target name works and its temporary name is shortened" {
	name=$(printf 'n%.0s' $(seq 255))
	[ ${#name} -eq 255 ]
	run --separate-stderr "$PONYWRITE" "$name" < <(echo first)
	assert_status 0
	assert_quiet
	assert_content "$name" $'first\n'
	start_slow "$name"
	printf 'x' >&9
	tmp=$(temp_of "$PW_PID")
	tname=${tmp##*/}
	[ ${#tname} -le 255 ] || fail "temporary name too long"
	[[ $tname == .n* ]] || fail "temporary name '$tname' is not hidden or not named after the target"
	printf 'second\n' >&9
	finish_slow
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	assert_content "$name" $'xsecond\n'
	[ "$(ls -A | wc -l)" -eq 1 ] || fail "more than one entry left: $(ls -A)"
	assert_no_litter
}

@test "the target name may look like an option after --" {
	run --separate-stderr "$PONYWRITE" -- -v < <(echo dash)
	assert_status 0
	assert_quiet
	assert_content ./-v $'dash\n'
}

@test "a file name with spaces, newlines and a leading dot works" {
	name=$' a b\nc '
	run --separate-stderr "$PONYWRITE" "$name" < <(echo 1)
	assert_status 0
	assert_content "$name" $'1\n'
	run --separate-stderr "$PONYWRITE" .hidden < <(echo 2)
	assert_status 0
	assert_content .hidden $'2\n'
	assert_no_litter "$WORK" .hidden
}

@test "binary data with NUL bytes is copied exactly" {
	printf 'a\0b\0\377\n\0' > src
	run --separate-stderr "$PONYWRITE" t < src
	assert_status 0
	cmp src t
}

# Peak resident memory (VmHWM) of a process, in KiB.
peak_kib()
{
	sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/"$1"/status
}

@test "memory stays under 2 MiB for 32 MiB of input" {
	! grep -q AddressSanitizer "$PONYWRITE" || skip "sanitizer build"
	# From a pipe: measured while ponywrite waits for more input.
	start_slow t
	head -c 32M /dev/zero >&9
	kib=$(peak_kib "$PW_PID")
	finish_slow
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	[ "$(stat -c %s t)" -eq $((32 << 20)) ] || fail "t has $(stat -c %s t) bytes"
	[ -n "$kib" ] && [ "$kib" -lt 2048 ] || fail "peak RSS ${kib} KiB from a pipe"
	# From a file: measured while strace holds ponywrite at its rename.
	require_cmd strace
	head -c 32M /dev/zero > big
	trace="$BATS_TEST_TMPDIR/trace"
	strace -qq -o "$trace" -e trace=rename,renameat,renameat2 \
	    -e inject=rename,renameat,renameat2:delay_enter=1000000 \
	    "$PONYWRITE" -i big u </dev/null 3>&- &
	spid=$!
	for i in $(seq 200); do
		grep -q '^rename' "$trace" 2>/dev/null && break
		sleep 0.02
	done
	grep -q '^rename' "$trace" || fail "rename never reached"
	pid=$(cat /proc/"$spid"/task/*/children | tr -d ' ')
	[ -n "$pid" ] || fail "no ponywrite under strace"
	kib=$(peak_kib "$pid")
	wait "$spid"
	cmp big u
	[ -n "$kib" ] && [ "$kib" -lt 2048 ] || fail "peak RSS ${kib} KiB from a file"
}

#!/usr/bin/env bats
# A terminal on standard input is refused unless -i - asks for it.

load helpers

# on_tty INPUT ARG...: run ponywrite ARG... with a new pseudo-terminal as its
# standard input, INPUT typed on it; stdout and stderr as for run.
on_tty()
{
	require_cmd python3
	cat > "$BATS_TEST_TMPDIR/on_pty.py" <<'PY'
import os, pty, subprocess, sys
master, slave = pty.openpty()
os.write(master, sys.argv[1].encode())
try:
    p = subprocess.run(sys.argv[2:], stdin=slave, capture_output=True,
                       timeout=5)
except subprocess.TimeoutExpired:
    sys.stderr.write("timed out: ponywrite waited on the terminal\n")
    sys.exit(124)
sys.stdout.buffer.write(p.stdout)
sys.stderr.buffer.write(p.stderr)
sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)
PY
	local input=$1
	shift
	run --separate-stderr python3 "$BATS_TEST_TMPDIR/on_pty.py" "$input" \
	    "$PONYWRITE" "$@"
}

TTY_MSG="ponywrite: stdin: is a terminal; use -i - to read from it
Try 'ponywrite --help' for more information."

@test "a terminal on stdin with no data: exit 2 at once, nothing done" {
	echo old > t
	snapshot t
	on_tty "" t
	assert_status 2
	assert_stderr "$TTY_MSG"
	assert_untouched t
	assert_no_litter
	on_tty "" new
	assert_status 2
	[ ! -e new ] || fail "new was created"
	assert_no_litter
}

@test "a terminal with data typed on it is refused too, with -a, -l, -C" {
	echo old > t
	snapshot t
	for o in -v -a -l -C --no-sync; do
		on_tty $'typed\n\x04' "$o" t
		assert_status 2
		assert_stderr "$TTY_MSG"
		assert_untouched t
	done
	assert_no_litter
}

@test "-i - reads the terminal" {
	echo old > t
	on_tty $'typed\n\x04' -i - t
	assert_status 0
	assert_content t $'typed\n'
	on_tty $'more\n\x04' --input=- -a t
	assert_status 0
	assert_content t $'typed\nmore\n'
	assert_no_litter
}

@test "command mode with a terminal on stdin: the command's business" {
	echo old > t
	on_tty "" t echo hi
	assert_status 0
	assert_quiet
	assert_content t $'hi\n'
	on_tty $'line\n\x04' t head -n 1
	assert_status 0
	assert_content t $'line\n'
	assert_no_litter
}

@test "-i FILE with a terminal on stdin reads FILE" {
	echo src > src
	on_tty "" -i src t
	assert_status 0
	assert_content t $'src\n'
	assert_no_litter
}

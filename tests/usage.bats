#!/usr/bin/env bats
# Command line: usage errors, --help, --version, where options stop.

load helpers

USAGE1='usage: ponywrite [-abCElpPv] [-i source] [-m mode] [-o owner] [-g group] [-S suffix]'
USAGE2='                 [--no-sync] target [command [argument ...]]'
USAGE3='       ponywrite --help | --version'

@test "no arguments: exit 2, missing target and usage on stderr" {
	run --separate-stderr "$PONYWRITE" </dev/null
	assert_status 2
	[ -z "$output" ] || fail "stdout: $output"
	[ "$(head -1 <<<"$stderr")" = "ponywrite: missing target" ] ||
	    fail "first line: $(head -1 <<<"$stderr")"
	assert_stderr_has "$USAGE1
$USAGE2
$USAGE3"
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "only options, no target: exit 2" {
	run --separate-stderr "$PONYWRITE" -v -m 0644 </dev/null
	assert_status 2
	assert_stderr_has "ponywrite: missing target"
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "--help: usage on stdout, exit 0" {
	run --separate-stderr "$PONYWRITE" --help
	assert_status 0
	[ -z "$stderr" ] || fail "stderr: $stderr"
	[ "$(head -3 <<<"$output")" = "$USAGE1
$USAGE2
$USAGE3" ] || fail "usage lines: $output"
	# The short option list mentions every option.
	for o in -a -b -C -E -l -p -P -v -i -m -o -g -S --no-sync --append --backup \
	    --if-changed --no-empty --lock --parents --no-dereference --verbose \
	    --input --mode --owner --group --suffix --help --version; do
		[[ $output == *"$o"* ]] || fail "--help does not mention $o"
	done
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "--version prints ponywrite VERSION" {
	run --separate-stderr "$PONYWRITE" --version
	assert_status 0
	[ -z "$stderr" ] || fail "stderr: $stderr"
	[[ $output =~ ^ponywrite\ [0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || fail "version: $output"
}

@test "--help and --version to a full device: exit 1 with a message" {
	[ -w /dev/full ] || skip "no /dev/full"
	run --separate-stderr bash -c '"$1" --help > /dev/full' _ "$PONYWRITE"
	assert_status 1
	assert_stderr "ponywrite: stdout: No space left on device"
	run --separate-stderr bash -c '"$1" --version > /dev/full' _ "$PONYWRITE"
	assert_status 1
	assert_stderr "ponywrite: stdout: No space left on device"
}

@test "unknown option: exit 2, usage, nothing done" {
	for opt in -Z --bogus --verbose=yes; do
		run --separate-stderr "$PONYWRITE" "$opt" t < <(echo new)
		assert_status 2
		[ -z "$output" ] || fail "stdout: $output"
		assert_stderr_has "$USAGE1"
		[ ! -e t ] || fail "t created by $opt"
	done
	echo old > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -Z t < <(echo new)
	assert_status 2
	assert_untouched t
	assert_no_litter
}

@test "missing option argument: exit 2" {
	for opt in -i -m -o -g -S --input --mode --owner --group --suffix; do
		run --separate-stderr "$PONYWRITE" "$opt" </dev/null
		assert_status 2
		assert_stderr_has "$USAGE1"
	done
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "options stop at the first operand" {
	run --separate-stderr "$PONYWRITE" t printf '%s\n' -v -m 0777 --help </dev/null
	assert_status 0
	assert_quiet
	assert_content t $'-v\n-m\n0777\n--help\n'
	assert_mode t 644
	run --separate-stderr "$PONYWRITE" -v t printf x </dev/null
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t x
	assert_no_litter
}

@test "-- ends options" {
	run --separate-stderr "$PONYWRITE" -v -- -t < <(echo dash)
	assert_status 0
	assert_stderr "ponywrite: -t: created"
	assert_content ./-t $'dash\n'
	run --separate-stderr "$PONYWRITE" -- t printf '%s' --help </dev/null
	assert_status 0
	assert_quiet
	assert_content t --help
	assert_no_litter
}

@test "short options cluster and long options take separate arguments" {
	run --separate-stderr "$PONYWRITE" -vp a/b/t < <(echo x)
	assert_status 0
	assert_stderr "ponywrite: a/b/t: created"
	run --separate-stderr "$PONYWRITE" -vm600 a/b/t < <(echo y)
	assert_status 0
	assert_stderr "ponywrite: a/b/t: replaced"
	assert_mode a/b/t 600
	run --separate-stderr "$PONYWRITE" --mode 640 a/b/t < <(echo z)
	assert_status 0
	assert_mode a/b/t 640
	assert_content a/b/t $'z\n'
	assert_no_litter
}

@test "-i with a command: exit 2, the command is not run" {
	echo old > t
	echo src > src
	snapshot t
	for i in "-i src" "--input=src" "-i -"; do
		run --separate-stderr "$PONYWRITE" $i t touch ran < <(echo new)
		assert_status 2
		assert_stderr_has "ponywrite: -i cannot be combined with a command"
		[ ! -e ran ] || fail "the command ran"
	done
	assert_untouched t
	assert_no_litter
}

#!/usr/bin/env bats
# Command line: usage errors, --help, --version, where options stop.

load helpers

USAGE1='usage: ponywrite [-abCElpPv] [-i source] [-m mode] [-o owner[:group]]'
USAGE2='                 [-g group] [-S suffix] [-w seconds] [--no-sync] [--in-place]'
USAGE3='                 [--check | --print-changed] [-z]
                 target [command [argument ...]]'
USAGE4='       ponywrite -t directory [-bCEpPv] [-m mode] [-o owner[:group]]
                 [-g group] [-S suffix] [--no-sync]
                 [--check | --print-changed] [-z] source ...
       ponywrite --batch=list [-bCEpPv] [-m mode] [-o owner[:group]] [-g group]
                 [-S suffix] [--no-sync] [--check | --print-changed] [-z]
       ponywrite --help | --version'

@test "no arguments: exit 2, missing target and usage on stderr" {
	run --separate-stderr "$PONYWRITE" </dev/null
	assert_status 2
	[ -z "$output" ] || fail "stdout: $output"
	[ "$(head -1 <<<"$stderr")" = "ponywrite: missing target" ] ||
	    fail "first line: $(head -1 <<<"$stderr")"
	assert_stderr_has "$USAGE1
$USAGE2
$USAGE3
$USAGE4"
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
	[ "$(head -10 <<<"$output")" = "$USAGE1
$USAGE2
$USAGE3
$USAGE4" ] || fail "usage lines: $output"
	# The option list mentions every option, one per line.
	for o in -a -b -C -E -l -p -P -v -i -m -o -g -S -w --no-sync --append \
	    --backup --if-changed --no-empty --lock --parents --no-dereference \
	    --verbose --input --mode --owner --group --suffix --wait \
	    --print-changed --check --help --version -t --target-directory --batch --; do
		grep -qE -- "^  ( *|-., )$o([ =,]|$)" <<<"$output" ||
		    fail "--help does not list $o"
	done
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "--help fits 80 columns, says options come first, points to the manual" {
	run --separate-stderr "$PONYWRITE" --help
	assert_status 0
	long=$(awk 'length($0) >= 80' <<<"$output")
	[ -z "$long" ] || fail "lines of 80 columns or more: $long"
	[[ $(grep -v $'\t' <<<"$output") == "$output" ]] || fail "a tab in --help"
	[[ $output == *"Options come before TARGET"* ]] ||
	    fail "--help does not say options come before the target"
	[[ $output == *"ponywrite(1)"* ]] || fail "--help does not point to ponywrite(1)"
}

@test "the usage matches the man page's SYNOPSIS" {
	require_cmd mandoc
	synopsis=$(MANWIDTH=200 mandoc -Tascii "$BATS_TEST_DIRNAME/../ponywrite.1" |
	    sed 's/.\x08//g' | sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | sed '1d;$d' | tr -s ' \n' ' ')
	usage=$(printf '%s\n' "$USAGE1" "$USAGE2" "$USAGE3" "$USAGE4" |
	    sed 's/^usage: //' | tr -s ' \n' ' ')
	[ "$synopsis" = " $usage" ] || fail "SYNOPSIS: $synopsis
usage: $usage"
}

@test "the man page names each system call of the protocol where it is made" {
	require_cmd mandoc
	page=$(MANWIDTH=200 mandoc -Tascii "$BATS_TEST_DIRNAME/../ponywrite.1" |
	    sed 's/.\x08//g' | tr -s ' \n' ' ')
	[[ $page == *"rename(2) the temporary file over target."* ]] ||
	    fail "step 5 does not say: rename(2) the temporary file over target."
	# sync_file_range(2) renames nothing and is atomic for nothing.
	[[ $page != *"sync_file_range(2) the temporary"* ]] || fail "a rename said to be sync_file_range(2)"
	[[ $page != *"sync_file_range(2) is atomic"* ]] || fail "sync_file_range(2) said to be atomic"
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

HINT="Try 'ponywrite --help' for more information."

# bad_usage MESSAGE ARG...: ponywrite ARG... t exits 2 with MESSAGE and the
# hint, and leaves t (an existing file) untouched and no litter.
bad_usage()
{
	local msg=$1
	shift
	echo old > t
	snapshot t
	run --separate-stderr "$PONYWRITE" "$@" < <(echo new)
	assert_status 2
	[ -z "$output" ] || fail "stdout: $output"
	assert_stderr "ponywrite: $msg
$HINT"
	assert_untouched t
	assert_no_litter
}

@test "unknown options: one line as typed and a hint, exit 2, nothing done" {
	bad_usage "invalid option -- 'Z'" -Z t
	bad_usage "invalid option -- 'Z'" -vZ t
	bad_usage "invalid option -- 'h'" -h t
	bad_usage "invalid option -- 'N'" --lock -vN t
	bad_usage "unrecognized option '--bogus'" --bogus t
	bad_usage "unrecognized option '--bogus=3'" --bogus=3 t
	run --separate-stderr "$PONYWRITE" -Z new < <(echo new)
	assert_status 2
	[ ! -e new ] || fail "new created"
}

@test "a long option given an argument it does not take is named as typed" {
	for o in no-empty append lock no-sync verbose backup if-changed parents \
	    no-dereference help version; do
		bad_usage "option '--$o' doesn't allow an argument" "--$o=1" t
	done
	bad_usage "option '--lock' doesn't allow an argument" --lock=yes t
	# An abbreviation is named in full.
	bad_usage "option '--no-empty' doesn't allow an argument" --no-e=1 t
}

@test "ambiguous abbreviations list the possibilities" {
	bad_usage "option '--ver' is ambiguous; possibilities: '--verbose' '--version'" --ver t
	bad_usage "option '--no' is ambiguous; possibilities: '--no-empty' '--no-sync' '--no-dereference'" --no t
	bad_usage "option '--no' is ambiguous; possibilities: '--no-empty' '--no-sync' '--no-dereference'" --no=1 t
	# Unambiguous abbreviations work.
	run --separate-stderr "$PONYWRITE" --verb --no-s t < <(echo new)
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'new\n'
}

@test "missing option argument: one line naming the option as typed, exit 2" {
	for o in i m o g S; do
		run --separate-stderr "$PONYWRITE" "-$o" </dev/null
		assert_status 2
		assert_stderr "ponywrite: option requires an argument -- '$o'
$HINT"
		run --separate-stderr "$PONYWRITE" -v"$o" </dev/null
		assert_status 2
		assert_stderr "ponywrite: option requires an argument -- '$o'
$HINT"
	done
	for o in input mode owner group suffix; do
		run --separate-stderr "$PONYWRITE" "--$o" </dev/null
		assert_status 2
		assert_stderr "ponywrite: option '--$o' requires an argument
$HINT"
	done
	[ -z "$(ls -A)" ] || fail "created: $(ls -A)"
}

@test "bad values: one line and a hint, not the usage; exit 2, nothing done" {
	bad_usage "unknown user: 'no_such_user_pw'" -o no_such_user_pw t
	bad_usage "unknown group: 'no_such_group_pw'" --group=no_such_group_pw t
	bad_usage "invalid mode: 'u+q'" -m u+q t
	bad_usage "invalid mode: '8'" --mode=8 t
	bad_usage "invalid suffix: 'a/b'" -b -S a/b t
	bad_usage "-i cannot be combined with a command" -i - t echo x
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

@test "an option after the target: one line saying so, exit 127, nothing done" {
	# A directory of PATH that the caller cannot search would make it 126.
	export PATH=/usr/local/bin:/usr/bin:/bin
	run -127 --separate-stderr "$PONYWRITE" a -v < <(echo new)
	assert_status 127
	[ -z "$output" ] || fail "stdout: $output"
	assert_stderr "ponywrite: a: not replaced: command '-v' not found (options go before the target)"
	[ ! -e a ] || fail "a was created"
	assert_no_litter
	echo old > a
	snapshot a
	run -127 --separate-stderr "$PONYWRITE" -C a --mode=0600 < <(echo new)
	assert_status 127
	assert_stderr "ponywrite: a: not replaced: command '--mode=0600' not found (options go before the target)"
	assert_untouched a
	assert_no_litter
}

@test "a command named like an option that cannot be run: one line, exit 126" {
	mkdir bin
	printf '#!/bin/sh\necho hi\n' > bin/-x
	chmod 0644 bin/-x
	echo old > a
	snapshot a
	run --separate-stderr env PATH="$PWD/bin" "$PONYWRITE" a -x
	assert_status 126
	assert_stderr "ponywrite: a: not replaced: command '-x' cannot be run: Permission denied"
	assert_untouched a
	assert_no_litter
}

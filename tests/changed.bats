#!/usr/bin/env bats
# --print-changed: the name of each replaced or created target on stdout,
# so that a script can tell what -C changed without parsing messages.

load helpers

@test "a postinst under set -e restarts the service only when -C changed the file" {
	mkdir etc
	cat > postinst <<'SH'
set -e
changed=$("$PONYWRITE" -C --print-changed -m 0644 etc/app.conf < "$1")
if [ -n "$changed" ]; then
	echo "restart for $changed" >> restarts
fi
echo done >> ran
SH
	echo one > v1
	echo two > v2
	export PONYWRITE
	run --separate-stderr bash postinst v1
	assert_status 0
	assert_quiet
	assert_content restarts $'restart for etc/app.conf\n'
	assert_content etc/app.conf $'one\n'
	snapshot etc/app.conf
	run --separate-stderr bash postinst v1
	assert_status 0
	assert_quiet
	assert_untouched etc/app.conf
	assert_content restarts $'restart for etc/app.conf\n'
	run --separate-stderr bash postinst v2
	assert_status 0
	assert_content restarts $'restart for etc/app.conf\nrestart for etc/app.conf\n'
	assert_content etc/app.conf $'two\n'
	assert_content ran $'done\ndone\ndone\n'
	# A failure stops the script under set -e, and prints no name.
	mv etc/app.conf etc/keep
	mkdir etc/app.conf
	run --separate-stderr bash postinst v1
	assert_status 1
	assert_stderr "ponywrite: etc/app.conf: not a regular file"
	assert_content ran $'done\ndone\ndone\n'
	assert_content restarts $'restart for etc/app.conf\nrestart for etc/app.conf\n'
	assert_no_litter
}

@test "--print-changed: created and replaced print the target as given; unchanged nothing" {
	mkdir sub
	ln -s sub/real link
	run --separate-stderr "$PONYWRITE" --print-changed -v link < <(echo a)
	assert_status 0
	[ "$output" = link ] || fail "stdout: $output"
	assert_stderr "ponywrite: link: created"
	run --separate-stderr "$PONYWRITE" --print-changed ./sub/../link < <(echo b)
	assert_status 0
	[ "$output" = ./sub/../link ] || fail "stdout: $output"
	[ -z "$stderr" ] || fail "stderr: $stderr"
	run --separate-stderr "$PONYWRITE" --print-changed -C link < <(echo b)
	assert_status 0
	assert_quiet
	assert_content sub/real $'b\n'
	assert_no_litter
}

@test "--print-changed in command mode: the command's output goes to the file" {
	echo old > t
	run --separate-stderr "$PONYWRITE" --print-changed t echo new
	assert_status 0
	[ "$output" = t ] || fail "stdout: $output"
	assert_content t $'new\n'
	run --separate-stderr "$PONYWRITE" --print-changed -C t echo new
	assert_status 0
	assert_quiet
	run --separate-stderr "$PONYWRITE" --print-changed t sh -c 'echo x; exit 3'
	assert_status 3
	[ -z "$output" ] || fail "stdout: $output"
	assert_content t $'new\n'
	assert_no_litter
}

@test "--print-changed: a failed run prints nothing" {
	echo old > t
	snapshot t
	run --separate-stderr "$PONYWRITE" --print-changed -E t </dev/null
	assert_status 1
	[ -z "$output" ] || fail "stdout: $output"
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t
	assert_no_litter
}

@test "--print-changed to a full device: replaced, but exit 3 (125 in command mode)" {
	[ -w /dev/full ] || skip "no /dev/full"
	echo old > t
	run --separate-stderr bash -c 'echo new | "$1" --print-changed t > /dev/full' _ "$PONYWRITE"
	assert_status 3
	assert_stderr "ponywrite: t: replaced, but its name could not be written to stdout: No space left on device"
	assert_content t $'new\n'
	run --separate-stderr bash -c '"$1" --print-changed t echo cmd > /dev/full' _ "$PONYWRITE"
	assert_status 125
	assert_stderr "ponywrite: t: replaced, but its name could not be written to stdout: No space left on device"
	assert_content t $'cmd\n'
	assert_no_litter
}

@test "--print-changed -z: a name holding a newline, through --batch, read back with xargs -0" {
	mkdir d
	nl=$'d/two\nlines'
	echo old > "$nl"
	echo same > d/same
	echo old > d/plain
	printf 'new\n' > s1
	printf 'same\n' > s2
	printf 'new plain\n' > s3
	snapshot d/same
	printf '%s\0' "$nl" s1 d/same s2 d/plain s3 d/created s3 > list
	run --separate-stderr bash -c '"$1" -C --print-changed -z --batch=list > out' _ "$PONYWRITE"
	assert_status 0
	assert_quiet
	assert_untouched d/same
	assert_content "$nl" $'new\n'
	assert_content d/created $'new plain\n'
	# Exactly the changed ones, each ended by a NUL, in the list's order.
	[ "$(od -An -c out | tr -s ' \n' ' ')" = "$(printf '%s\0' "$nl" d/plain d/created | od -An -c | tr -s ' \n' ' ')" ] ||
	    fail "stdout: $(od -c out)"
	names=()
	while IFS= read -r -d '' name; do
		names+=("$name")
	done < out
	[ "${#names[@]}" -eq 3 ] && [ "${names[0]}" = "$nl" ] ||
	    fail "read back: ${names[*]}"
	xargs -0 cat < out > cat.out
	assert_content cat.out $'new\nnew plain\nnew plain\n'
	assert_no_litter
}

@test "--null: the single-target form and -t end the name with a NUL" {
	mkdir d
	nl=$'a\nb'
	run --separate-stderr bash -c 'echo x | "$1" --print-changed --null "$2" | od -An -c' _ "$PONYWRITE" "$nl"
	assert_status 0
	[ "$(tr -s ' ' <<<"$output")" = " a \\n b \\0" ] || fail "stdout: $output"
	assert_content "$nl" $'x\n'
	run --separate-stderr bash -c '"$1" -z --print-changed "$2" echo y | od -An -c' _ "$PONYWRITE" "$nl"
	assert_status 0
	[ "$(tr -s ' ' <<<"$output")" = " a \\n b \\0" ] || fail "command mode: $output"
	echo s > same
	echo s > d/same
	snapshot d/same
	run --separate-stderr bash -c '"$1" -C -z --print-changed -t d same "$2" | od -An -c' _ "$PONYWRITE" "$nl"
	assert_status 0
	[ "$(tr -s ' ' <<<"$output")" = " d / a \\n b \\0" ] || fail "-t: $output"
	assert_content "d/$nl" $'y\n'
	assert_untouched d/same
	# -C leaves it unchanged: nothing printed.
	run --separate-stderr "$PONYWRITE" -C -z --print-changed -t d same
	assert_status 0
	assert_quiet
	assert_untouched d/same
	assert_no_litter
}

@test "-z without --print-changed: a usage error in all three forms, nothing done" {
	echo old > t
	printf '%s\0' t s > list
	echo new > s
	snapshot t
	for args in "-z t" "--null t" "-z -t . s" "--null --batch=list" "-v -z -C t echo x"; do
		# shellcheck disable=SC2086 # the words of each form
		run --separate-stderr "$PONYWRITE" $args < <(echo new)
		assert_status 2
		[ -z "$output" ] || fail "$args: stdout: $output"
		assert_stderr "ponywrite: -z (--null) needs --print-changed or --check
Try 'ponywrite --help' for more information."
		assert_untouched t
	done
	assert_no_litter
}

@test "--print-changed -z to a full device: replaced, but exit 3, in a batch too" {
	[ -w /dev/full ] || skip "no /dev/full"
	echo old > t
	run --separate-stderr bash -c 'echo new | "$1" --print-changed -z t > /dev/full' _ "$PONYWRITE"
	assert_status 3
	assert_stderr "ponywrite: t: replaced, but its name could not be written to stdout: No space left on device"
	assert_content t $'new\n'
	echo newer > s
	printf '%s\0' t s > list
	run --separate-stderr bash -c '"$1" --print-changed -z --batch=list > /dev/full' _ "$PONYWRITE"
	assert_status 3
	assert_stderr "ponywrite: t: replaced, but its name could not be written to stdout: No space left on device"
	assert_content t $'newer\n'
	assert_no_litter
}

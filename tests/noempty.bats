#!/usr/bin/env bats
# -E, --no-empty: refuse to replace the target with empty input.

load helpers
load features_helpers

@test "-E, empty stdin: exit 1, message, target untouched, no litter" {
	printf 'old\n' > t
	chmod 0640 t
	snapshot t
	run --separate-stderr "$PONYWRITE" -E t </dev/null
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	[ -z "$output" ] || fail "stdout: $output"
	assert_untouched t
	assert_no_litter
	[ "$(listing)" = t ] || fail "directory holds: $(listing)"
}

@test "--no-empty, empty pipe (curl ... | ponywrite -E): refused" {
	printf 'old\n' > t
	snapshot t
	run --separate-stderr bash -c 'true | "$1" --no-empty t' _ "$PONYWRITE"
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t
	assert_no_litter
	# A failed download: nothing reaches ponywrite, whose status is the pipeline's.
	run --separate-stderr bash -c 'set -o pipefail; { exit 22; } | "$1" -E t' _ "$PONYWRITE"
	[ "$status" -ne 0 ] || fail "pipeline succeeded"
	assert_untouched t
	assert_no_litter
}

@test "-E, empty file as -i SOURCE: refused" {
	printf 'old\n' > t
	: > empty
	snapshot t empty
	run --separate-stderr "$PONYWRITE" -E -i empty t
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t empty
	assert_no_litter
}

@test "-E -i T T with T empty: refused, untouched" {
	: > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -E -i t t
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t
	assert_no_litter
}

@test "-E, missing target and empty input: nothing is created" {
	run --separate-stderr "$PONYWRITE" -E new </dev/null
	assert_status 1
	assert_stderr "ponywrite: new: input is empty, not replaced (-E)"
	[ ! -e new ] || fail "new was created"
	[ -z "$(listing)" ] || fail "directory holds: $(listing)"
}

@test "-E, non-empty input: replaced or created; -v says so" {
	printf 'old\n' > t
	old=$(inode t)
	run --separate-stderr "$PONYWRITE" -E -v t < <(printf 'new\n')
	assert_status 0
	assert_stderr "ponywrite: t: replaced"
	assert_content t $'new\n'
	[ "$(inode t)" != "$old" ] || fail "t kept its inode"
	assert_no_litter
	run --separate-stderr "$PONYWRITE" -E -v new < <(printf 'x')
	assert_status 0
	assert_stderr "ponywrite: new: created"
	assert_content new x
	assert_no_litter
}

@test "-E, a single newline or a single NUL byte is not empty" {
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -E t < <(printf '\n')
	assert_status 0
	assert_content t $'\n'
	printf '\0' > nul
	run --separate-stderr "$PONYWRITE" -E t < nul
	assert_status 0
	cmp t nul
	assert_no_litter
}

@test "-E, large input through a pipe and from a file: replaced" {
	head -c 3000000 /dev/urandom > in
	printf 'old\n' > t
	run --separate-stderr bash -c 'cat in | "$1" -E t' _ "$PONYWRITE"
	assert_status 0
	cmp t in
	printf 'old\n' > t
	run --separate-stderr "$PONYWRITE" -E t < in
	assert_status 0
	cmp t in
	assert_no_litter
}

@test "-E -C, same content: unchanged" {
	printf 'same\n' > t
	touch -d '2001-02-03 04:05:06' t
	snapshot t
	run --separate-stderr "$PONYWRITE" -E -C -v t < <(printf 'same\n')
	assert_status 0
	assert_stderr "ponywrite: t: unchanged"
	assert_untouched t
	assert_no_litter
}

@test "-E -C, empty input and empty target: still refused" {
	: > t
	snapshot t
	run --separate-stderr "$PONYWRITE" -E -C t </dev/null
	assert_status 1
	assert_stderr "ponywrite: t: input is empty, not replaced (-E)"
	assert_untouched t
	assert_no_litter
}

@test "-E through a symbolic link: link and file untouched" {
	printf 'old\n' > real
	ln -s real link
	snapshot real link
	run --separate-stderr "$PONYWRITE" -E link </dev/null
	assert_status 1
	assert_stderr "ponywrite: link: input is empty, not replaced (-E)"
	assert_untouched real link
	assert_no_litter
}

@test "-E -p: empty input creates no target" {
	run --separate-stderr "$PONYWRITE" -E -p a/b/t </dev/null
	assert_status 1
	assert_stderr "ponywrite: a/b/t: input is empty, not replaced (-E)"
	[ ! -e a/b/t ] || fail "a/b/t was created"
	# The directories stay, as the man page says (mkdir -p, then a failure).
	[ -d a/b ] || fail "a/b was not created"
	assert_no_litter
}

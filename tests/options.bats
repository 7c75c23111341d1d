#!/usr/bin/env bats
# Option values: -o OWNER:GROUP as chown(1).

load helpers

@test "-o OWNER:GROUP sets both, names or numbers (root)" {
	require_root
	getent passwd daemon >/dev/null && getent group daemon >/dev/null ||
	    skip "needs user and group daemon"
	uid=$(id -u daemon) gid=$(getent group daemon | cut -d: -f3)
	run --separate-stderr "$PONYWRITE" -o daemon:daemon t < <(echo new)
	assert_status 0
	assert_quiet
	assert_owner t "$uid" "$gid"
	assert_content t $'new\n'
	run --separate-stderr "$PONYWRITE" --owner=1234:5678 t < <(echo x)
	assert_status 0
	assert_owner t 1234 5678
	run --separate-stderr "$PONYWRITE" -o 0:daemon t < <(echo y)
	assert_status 0
	assert_owner t 0 "$gid"
	assert_no_litter
}

@test "-o OWNER: takes the owner's login group; -o :GROUP only the group (root)" {
	require_root
	require_nobody
	nobody_gid=$(id -g nobody)
	echo old > t
	chown 1234:5678 t
	run --separate-stderr "$PONYWRITE" -o nobody: t < <(echo new)
	assert_status 0
	assert_owner t "$(id -u nobody)" "$nobody_gid"
	chown 1234:5678 t
	run --separate-stderr "$PONYWRITE" -o :nogroup t < <(echo new)
	assert_status 0
	assert_owner t 1234 "$(getent group nogroup | cut -d: -f3)"
	run --separate-stderr "$PONYWRITE" -o :77 t < <(echo new)
	assert_status 0
	assert_owner t 1234 77
	assert_no_litter
}

@test "-o OWNER:GROUP then -g: the last group given wins (root)" {
	require_root
	run --separate-stderr "$PONYWRITE" -o 1234:5678 -g 99 t < <(echo new)
	assert_status 0
	assert_owner t 1234 99
	run --separate-stderr "$PONYWRITE" -g 99 -o 1234:5678 t < <(echo new)
	assert_status 0
	assert_owner t 1234 5678
	assert_no_litter
}

@test "bad -o values: one line, a hint, exit 2, target untouched" {
	hint="Try 'ponywrite --help' for more information."
	no_uid=4242
	while getent passwd "$no_uid" >/dev/null; do no_uid=$((no_uid + 1)); done
	echo old > t
	snapshot t
	for spec in "no_such_user_pw:root|unknown user: 'no_such_user_pw'" \
	    "root:no_such_group_pw|unknown group: 'no_such_group_pw'" \
	    ":no_such_group_pw|unknown group: 'no_such_group_pw'" \
	    ":|invalid owner: ':'" \
	    "$no_uid:|user '$no_uid' has no login group" \
	    "no_such_user_pw:|unknown user: 'no_such_user_pw'"; do
		run --separate-stderr "$PONYWRITE" -o "${spec%%|*}" t < <(echo new)
		assert_status 2
		assert_stderr "ponywrite: ${spec#*|}
$hint"
		assert_untouched t
		assert_no_litter
	done
	run --separate-stderr "$PONYWRITE" -o root:no_such_group_pw t sh -c 'touch ran'
	assert_status 2
	[ ! -e ran ] || fail "the command ran"
}

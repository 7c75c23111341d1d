#!/usr/bin/env bats
# Mode, owner, group, ACL and extended attributes of the replacement.

load helpers

# replace FILE TEXT [OPTION...]: ponywrite OPTION... FILE with TEXT on stdin.
replace()
{
	local f=$1 text=$2
	shift 2
	run --separate-stderr "$PONYWRITE" "$@" "$f" < <(printf '%s' "$text")
}

@test "the mode of an existing target is kept" {
	for m in 640 604 751 400 777 1644; do
		echo old > "t$m"
		chmod "$m" "t$m"
		replace "t$m" new
		assert_status 0
		assert_quiet
		assert_mode "t$m" "$m"
		chmod u+r "t$m"
		[ "$(cat "t$m")" = new ] || fail "t$m not replaced"
	done
	assert_no_litter
}

@test "the owner can replace a file it cannot read (modes 0200, 0000)" {
	echo old > t200
	echo old > t000
	unpriv_setup
	chmod 0200 t200
	chmod 0000 t000
	for f in t200 t000; do
		run --separate-stderr unpriv "$PONYWRITE" "$f" < <(echo new)
		assert_status 0
		assert_quiet
		assert_mode "$f" "${f#t}"
		chmod u+r "$f"
		assert_content "$f" $'new\n'
	done
	assert_no_litter
}

@test "set-id and sticky bits, owner and group are kept (root)" {
	require_root
	echo old > t
	chown nobody:nogroup t
	chmod 7755 t
	echo old > r
	chgrp nogroup r
	chmod 4750 r
	echo old > n
	chown 12345:54321 n
	chmod 2710 n
	for f in t r n; do
		snapshot "$f"
		replace "$f" new
		assert_status 0
		assert_quiet
		[ "$(cat "$f")" = new ] || fail "$f not replaced"
	done
	assert_mode t 7755
	assert_owner t 65534 65534
	assert_mode r 4750
	assert_owner r 0 65534
	assert_mode n 2710
	assert_owner n 12345 54321
	assert_no_litter
}

@test "set-id bits of a file the caller owns are kept (any user)" {
	echo old > t
	unpriv_setup
	unpriv chmod 6755 t
	run --separate-stderr unpriv "$PONYWRITE" t < <(echo new)
	assert_status 0
	assert_quiet
	assert_mode t 6755
	assert_content t $'new\n'
	assert_no_litter
}

@test "-m octal, on a new and an existing target" {
	replace t x -m 0640
	assert_status 0
	assert_quiet
	assert_mode t 640
	replace t y -m 755
	assert_status 0
	assert_mode t 755
	replace t z --mode=0604
	assert_status 0
	assert_mode t 604
	replace t w -m 4711
	assert_status 0
	assert_mode t 4711
	replace t v -m 0
	assert_status 0
	assert_mode t 0
	assert_no_litter
}

@test "-m octal is not masked by the umask" {
	run --separate-stderr bash -c 'umask 077; exec "$1" -m 0755 t' _ "$PONYWRITE" < <(echo x)
	assert_status 0
	assert_mode t 755
	run --separate-stderr bash -c 'umask 077; exec "$1" -m 0666 t' _ "$PONYWRITE" < <(echo y)
	assert_status 0
	assert_mode t 666
	assert_no_litter
}

@test "-m symbolic applies to the mode the file would have had" {
	# existing-mode umask -m expected
	while read -r from um mode want; do
		rm -f t
		echo old > t
		chmod "$from" t
		run --separate-stderr bash -c 'umask "$2"; exec "$1" -m "$3" t' _ "$PONYWRITE" "$um" "$mode" < <(echo new)
		assert_status 0
		assert_quiet
		assert_content t $'new\n'
		[ "$(stat -c %a t)" = "$want" ] ||
		    fail "mode $from with umask $um and -m $mode gave $(stat -c %a t), expected $want"
	done <<-'EOF'
	644 022 u+x 744
	666 022 go-w 644
	755 022 a=r 444
	644 022 +x 755
	644 027 +x 754
	644 077 +x 744
	750 022 g=u 770
	640 022 g=u 660
	644 022 a+X 644
	744 022 a+X 755
	644 022 u=rwx,g=rx,o= 750
	600 022 go+r,u-w 444
	777 000 o-rwx 770
	EOF
	assert_no_litter
}

@test "-m symbolic on a new file starts from 0666 & ~umask" {
	run --separate-stderr bash -c 'umask 022; exec "$1" -m u+x t' _ "$PONYWRITE" < <(echo x)
	assert_status 0
	assert_mode t 744
	run --separate-stderr bash -c 'umask 077; exec "$1" -m g+r u' _ "$PONYWRITE" < <(echo x)
	assert_status 0
	assert_mode u 640
	assert_no_litter
}

@test "invalid -m: exit 2, nothing changed" {
	echo old > t
	chmod 640 t
	snapshot t new
	for m in 0999 8 u+q x=r '' 123456 rwx 'a=r w' 'u+x,,'; do
		run --separate-stderr "$PONYWRITE" -m "$m" t < <(echo new)
		assert_status 2
		assert_stderr_has "ponywrite: invalid mode: '$m'"
		[ -z "$output" ] || fail "stdout: $output"
		run --separate-stderr "$PONYWRITE" --mode="$m" new < <(echo new)
		assert_status 2
		assert_stderr_has "ponywrite: invalid mode: '$m'"
	done
	assert_untouched t new
	assert_no_litter
}

@test "a new file in a set-group-ID directory gets the directory's group (root)" {
	require_root
	mkdir d
	chgrp nogroup d
	chmod 2775 d
	run --separate-stderr "$PONYWRITE" d/new < <(echo x)
	assert_status 0
	assert_quiet
	assert_owner d/new 0 65534
	assert_mode d/new 644
	assert_no_litter
}

@test "-o and -g by name and by number (root)" {
	require_root
	replace a x -o nobody -g nogroup
	assert_status 0
	assert_quiet
	assert_owner a 65534 65534
	replace b x -o 1234 -g 4321
	assert_status 0
	assert_owner b 1234 4321
	replace b y --owner=root
	assert_status 0
	assert_owner b 0 4321
	replace b z --group=nogroup
	assert_status 0
	assert_owner b 0 65534
	assert_content b z
	replace b w -o 0 -g 0 -m 4755
	assert_status 0
	assert_owner b 0 0
	assert_mode b 4755
	assert_no_litter
}

@test "-o keeps set-id bits: owner is set before the mode (root)" {
	require_root
	echo old > t
	chmod 6755 t
	replace t new -o nobody -g nogroup
	assert_status 0
	assert_owner t 65534 65534
	assert_mode t 6755
	assert_no_litter
}

@test "unknown -o or -g: exit 2, nothing changed" {
	echo old > t
	snapshot t new
	run --separate-stderr "$PONYWRITE" -o no_such_user_pw t < <(echo new)
	assert_status 2
	assert_stderr_has "ponywrite: unknown user: 'no_such_user_pw'"
	run --separate-stderr "$PONYWRITE" -g no_such_group_pw t < <(echo new)
	assert_status 2
	assert_stderr_has "ponywrite: unknown group: 'no_such_group_pw'"
	run --separate-stderr "$PONYWRITE" --owner=12x new < <(echo new)
	assert_status 2
	assert_stderr_has "ponywrite: unknown user: '12x'"
	run --separate-stderr "$PONYWRITE" --group= new < <(echo new)
	assert_status 2
	assert_stderr_has "ponywrite: unknown group: ''"
	assert_untouched t new
	assert_no_litter
}

@test "non-root cannot keep the owner: exit 1 naming -o/-g, target untouched (root)" {
	require_nobody
	mkdir d
	chown nobody:nogroup d
	echo old > d/t
	chmod 0666 d/t
	snapshot d/t
	run --separate-stderr as_nobody "$PONYWRITE" d/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: d/t: cannot keep owner 0 and group 0: Operation not permitted (use -o and -g to choose them)"
	[ -z "$output" ] || fail "stdout: $output"
	assert_untouched d/t
	assert_no_litter d
	# Only the group cannot be kept.
	chown nobody:root d/t
	snapshot d/t
	run --separate-stderr as_nobody "$PONYWRITE" d/t < <(echo new)
	assert_status 1
	assert_stderr_has "Operation not permitted"
	assert_stderr_has "-g"
	assert_untouched d/t
	assert_no_litter d
	# -g chooses the group: the owner is kept, the group is the new one.
	run --separate-stderr as_nobody "$PONYWRITE" -g nogroup d/t < <(echo new)
	assert_status 0
	assert_quiet
	assert_owner d/t 65534 65534
	assert_mode d/t 666
	assert_content d/t $'new\n'
	# -o and -g choose both.
	chown root:root d/t
	run --separate-stderr as_nobody "$PONYWRITE" -o nobody -g nogroup d/t < <(echo newer)
	assert_status 0
	assert_owner d/t 65534 65534
	assert_content d/t $'newer\n'
	assert_no_litter d
}

@test "POSIX ACL is kept" {
	require_cmd setfacl getfacl
	echo old > t
	chmod 0640 t
	unpriv_setup
	unpriv setfacl -m u:65534:rw,g:65534:r,u:12345:r,m::rw t 2>/dev/null ||
	    skip "no ACL support here"
	before=$(getfacl -cn t)
	[[ $before == *user:12345:r--* ]] || fail "ACL not set: $before"
	run --separate-stderr unpriv "$PONYWRITE" t < <(echo new)
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	after=$(getfacl -cn t)
	[ "$after" = "$before" ] || fail "ACL changed:
before: $before
after:  $after"
	assert_no_litter
}

@test "user.* extended attributes are kept" {
	require_cmd setfattr getfattr
	echo old > t
	unpriv_setup
	unpriv setfattr -n user.pony -v rainbow t 2>/dev/null ||
	    skip "no user xattr support here"
	unpriv setfattr -n user.empty t
	unpriv setfattr -n user.bin -v 0x00ff0a00 t
	before=$(getfattr -d -m '^user\.' -e hex t)
	run --separate-stderr unpriv "$PONYWRITE" t < <(echo new)
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	after=$(getfattr -d -m '^user\.' -e hex t)
	[ "$after" = "$before" ] || fail "xattrs changed:
before: $before
after:  $after"
	[ "$(getfattr --only-values -n user.pony t)" = rainbow ] || fail "user.pony lost"
	assert_no_litter
}

# The trace of the syscalls that create the temporary file and set its
# metadata, one line each, pid prefix removed.
meta_trace()
{
	strace -f -qq -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=open,openat,openat2,creat,fchmod,fchmodat,chmod,fchown,fchownat,chown,lchown,rename,renameat,renameat2 \
	    "$@"
	sed 's/^[0-9]* *//' "$BATS_TEST_TMPDIR/trace"
}

@test "temporary file is created exclusively with mode 0600; metadata set on the descriptor" {
	require_cmd strace
	echo old > t
	chmod 0644 t
	run meta_trace "$PONYWRITE" t < <(echo new)
	assert_status 0
	create=$(grep -E 'O_TMPFILE|O_CREAT' <<<"$output") || fail "no create in: $output"
	[ "$(wc -l <<<"$create")" -eq 1 ] || fail "more than one file created: $create"
	[[ $create == *O_EXCL* || $create == *O_TMPFILE* ]] || fail "not exclusive: $create"
	[[ $create == *O_CLOEXEC* ]] || fail "not close-on-exec: $create"
	[[ $create =~ ,\ 0600\)\ +=\ [0-9] ]] || fail "not created 0600: $create"
	if grep -E '^(chmod|fchmodat|chown|lchown|fchownat)\(' <<<"$output" | grep -v AT_EMPTY_PATH; then
		fail "metadata set by path"
	fi
	assert_content t $'new\n'
	assert_mode t 644
}

@test "owner is set before set-id bits and the mode is set once, to the final mode (root)" {
	require_root
	require_cmd strace
	echo old > t
	chown nobody:nogroup t
	chmod 6750 t
	run meta_trace "$PONYWRITE" t < <(echo new)
	assert_status 0
	create=$(grep -nE 'O_TMPFILE|O_CREAT' <<<"$output" | cut -d: -f1)
	own=$(grep -nE '^fchown(at)?\(' <<<"$output" | head -1 | cut -d: -f1)
	mode=$(grep -nE '^fchmod(at)?\(' <<<"$output" | cut -d: -f1)
	ren=$(grep -nE '^rename(at2?)?\(' <<<"$output" | cut -d: -f1)
	[ -n "$create" ] && [ -n "$own" ] && [ -n "$mode" ] && [ -n "$ren" ] ||
	    fail "missing calls in trace: $output"
	[ "$(wc -l <<<"$mode")" -eq 1 ] || fail "mode set more than once: $output"
	grep -E '^fchmod(at)?\(.*06750\) +=  *0' <<<"$output" >/dev/null ||
	    fail "mode not set to 06750: $output"
	grep -E '^fchown(at)?\(.*65534, 65534.*= 0' <<<"$output" >/dev/null ||
	    fail "owner not set to 65534:65534: $output"
	[ "$create" -lt "$own" ] && [ "$own" -lt "$mode" ] && [ "$mode" -lt "$ren" ] ||
	    fail "order is not create, fchown, fchmod, rename: $output"
	assert_mode t 6750
	assert_owner t 65534 65534
}

@test "the temporary file is never readable by others while being written" {
	echo old > t
	chmod 0600 t
	start_slow -m 0644 t
	printf 'secret' >&9
	tmp=$(temp_of "$PW_PID")
	assert_mode "$tmp" 600
	printf ' more\n' >&9
	finish_slow
	[ "$PW_STATUS" -eq 0 ] || fail "status $PW_STATUS: $PW_STDERR"
	assert_mode t 644
	assert_content t $'secret more\n'
}

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

@test "-o or -g that change the owner or group drop the set-id bits, as chown does (root)" {
	require_root
	for f in u g both same; do
		echo old > "$f"
		chown nobody:nogroup "$f"
		chmod 6755 "$f"
	done
	replace u new -o root
	assert_status 0
	assert_owner u 0 65534
	assert_mode u 755
	replace g new -g root
	assert_status 0
	assert_owner g 65534 0
	assert_mode g 755
	replace both new -o root -g root
	assert_status 0
	assert_mode both 755
	# The same owner and group as before: nothing changes hands.
	replace same new -o nobody -g nogroup
	assert_status 0
	assert_mode same 6755
	assert_no_litter
}

@test "-m asks for set-id bits explicitly with -o and -g (root)" {
	require_root
	echo old > t
	chown nobody:nogroup t
	chmod 6755 t
	replace t new -o root -g root -m 6755
	assert_status 0
	assert_owner t 0 0
	assert_mode t 6755
	echo old > s
	chown nobody:nogroup s
	chmod 4755 s
	replace s new -o root -m u+s
	assert_status 0
	assert_mode s 4755
	replace s newer -o nobody -m u+x
	assert_status 0
	assert_mode s 755
	assert_no_litter
}

@test "a user's setuid file given to root with -o does not become setuid root (root)" {
	require_root
	unpriv_setup
	echo old > t
	chown nobody:nogroup t
	unpriv chmod 4755 t
	replace t new -o root
	assert_status 0
	assert_owner t 0 65534
	assert_mode t 755
	assert_content t new
}

@test "a set-group-ID bit the kernel drops is a failure, not a silent change" {
	require_nobody
	mkdir d
	chown nobody:daemon d
	chmod 2775 d
	echo old > d/t
	chown nobody:daemon d/t
	chmod 2750 d/t
	snapshot d/t
	run --separate-stderr as_nobody "$PONYWRITE" d/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: d/t: cannot set mode 2750: the system made it 0750, as set-group-ID needs membership of the file's group (use -m to choose a mode)"
	assert_untouched d/t
	assert_no_litter d
	# The same with -m asking for it on a new file.
	run --separate-stderr as_nobody "$PONYWRITE" -m 2755 d/new < <(echo new)
	assert_status 1
	assert_stderr_has "cannot set mode 2755: the system made it 0755"
	[ ! -e d/new ] || fail "d/new created"
	assert_no_litter d
	# -m without the bit works.
	run --separate-stderr as_nobody "$PONYWRITE" -m 0750 d/t < <(echo new)
	assert_status 0
	assert_mode d/t 750
	assert_content d/t $'new\n'
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

# Issue 56: a refused -o or -g was answered "cannot keep owner ... (use -o
# and -g to choose them)", advising the option that was refused.
@test "an owner or group asked for that cannot be given is named as asked, with the cause; --check says the same" {
	require_nobody
	mkdir d
	chown nobody:nogroup d
	echo old > d/t
	chown nobody:nogroup d/t
	snapshot d/t
	local c
	for c in "" --check; do
		run --separate-stderr as_nobody "$PONYWRITE" $c -o root d/t < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: d/t: cannot give it to root (0), as -o asks: Operation not permitted; only a process with CAP_CHOWN gives a file to another user"
		run --separate-stderr as_nobody "$PONYWRITE" $c -g daemon d/t < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: d/t: cannot give it group daemon (1), as -g asks: Operation not permitted; without CAP_CHOWN a process gives only a group it is in"
	done
	# root without CAP_CHOWN (a container's root may lack it)
	local drop=(setpriv --inh-caps=-chown --bounding-set=-chown --)
	"${drop[@]}" bash -c 'c=$(awk "/^CapEff/ { print \$2 }" /proc/self/status)
	    (( (16#$c & 1) == 0 ))' || skip "setpriv cannot drop CAP_CHOWN"
	for c in "" --check; do
		run --separate-stderr "${drop[@]}" "$PONYWRITE" $c -g daemon d/t < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: d/t: cannot give it group daemon (1), as -g asks: Operation not permitted; without CAP_CHOWN a process gives only a group it is in"
		run --separate-stderr "${drop[@]}" "$PONYWRITE" $c d/t < <(echo new)
		assert_status 1
		assert_stderr "ponywrite: d/t: cannot keep owner 65534 and group 65534: Operation not permitted (this root process has no CAP_CHOWN; use -o and -g to choose them)"
	done
	assert_untouched d/t
	assert_no_litter d
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
	# the group, then the owner (given away last, issue 56): one call or two
	grep -E '^fchown(at)?\(.*(65534|-1), 65534\).*= 0' <<<"$output" >/dev/null &&
	    grep -E '^fchown(at)?\(.*65534, (65534|-1)\).*= 0' <<<"$output" >/dev/null ||
	    fail "owner not set to 65534:65534: $output"
	lastown=$(grep -nE '^fchown(at)?\(' <<<"$output" | tail -1 | cut -d: -f1)
	[ "$create" -lt "$own" ] && [ "$lastown" -lt "$mode" ] && [ "$mode" -lt "$ren" ] ||
	    fail "order is not create, fchown, fchmod, rename: $output"
	assert_mode t 6750
	assert_owner t 65534 65534
}

# Issue 56: root without CAP_FOWNER (a container's root, setpriv) failed
# "cannot remove the inherited ACL" on another user's file that had none:
# the new file was given away before its ACL and mode were set.
@test "root without CAP_FOWNER replaces another user's file: owner, group, mode, ACL and attributes kept, as sed -i and cp do" {
	require_nobody
	require_cmd setfacl getfacl setfattr getfattr
	mkdir d
	setfacl -d -m u:daemon:rwx d 2>/dev/null || skip "no ACLs here"
	echo old > d/t
	setfacl -b d/t
	chown nobody:nogroup d/t
	chmod 0640 d/t
	echo old > d/a
	chown nobody:nogroup d/a
	chmod 0640 d/a
	setfacl -m u:daemon:r,m::r d/a
	setfattr -n user.k -v kept d/a
	local drop=(setpriv --inh-caps=-fowner --bounding-set=-fowner --)
	"${drop[@]}" bash -c 'c=$(awk "/^CapEff/ { print \$2 }" /proc/self/status)
	    (( (16#$c & 8) == 0 ))' || skip "setpriv cannot drop CAP_FOWNER"
	run --separate-stderr "${drop[@]}" "$PONYWRITE" d/t <<<new
	assert_status 0
	assert_quiet
	assert_content d/t $'new\n'
	assert_mode d/t 640
	assert_owner d/t 65534 65534
	[ "$(getfacl -cp d/t | grep -c daemon)" = 0 ] || fail "inherited ACL kept: $(getfacl -c d/t)"
	run --separate-stderr "${drop[@]}" "$PONYWRITE" d/a <<<new
	assert_status 0
	assert_content d/a $'new\n'
	assert_owner d/a 65534 65534
	getfacl -cp d/a | grep -q '^user:daemon:r--' || fail "ACL lost: $(getfacl -c d/a)"
	[ "$(getfattr --only-values -n user.k d/a)" = kept ] || fail "attribute lost"
	assert_no_litter d
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

# default_acl_dir DIR: a directory whose default ACL gives nobody rw.
default_acl_dir()
{
	require_cmd setfacl getfacl
	mkdir "$1"
	setfacl -d -m u:65534:rw "$1" 2>/dev/null || skip "no ACL support here"
}

@test "a directory's default ACL does not leak onto a replaced file" {
	default_acl_dir d
	for m in 0640 0660 0600; do
		echo old > "d/t$m"
		setfacl -b "d/t$m"
		chmod "$m" "d/t$m"
		replace "d/t$m" new
		assert_status 0
		assert_quiet
		acl=$(getfacl -cn "d/t$m")
		[[ $acl != *user:65534* ]] || fail "d/t$m got the default ACL: $acl"
		assert_mode "d/t$m" "$m"
		assert_content "d/t$m" new
	done
	# A file with an ACL of its own keeps exactly that one.
	echo old > d/acl
	setfacl -b -m u:12345:r d/acl
	chmod 0640 d/acl
	before=$(getfacl -cn d/acl)
	replace d/acl new
	assert_status 0
	[ "$(getfacl -cn d/acl)" = "$before" ] || fail "ACL changed: $(getfacl -cn d/acl)"
	assert_no_litter d
}

@test "a directory's default ACL: nobody cannot read a replaced 0640 file (root)" {
	require_nobody
	default_acl_dir d
	chmod 0755 d
	echo secret > d/t
	setfacl -b d/t
	chmod 0640 d/t
	replace d/t newsecret
	assert_status 0
	run as_nobody cat d/t
	[ "$status" -ne 0 ] || fail "nobody could read d/t: $output"
}

@test "a new file gets the directory's default ACL, as open(2) gives it" {
	default_acl_dir d
	setfacl -d -m o::-,g::r d
	replace d/new x
	assert_status 0
	touch d/ref
	[ "$(getfacl -cn d/new)" = "$(getfacl -cn d/ref)" ] ||
	    fail "differs from open(2):
$(getfacl -cn d/new)
open(2):
$(getfacl -cn d/ref)"
	[ "$(stat -c %a d/new)" = "$(stat -c %a d/ref)" ] || fail "mode differs"
	assert_no_litter d
}

@test "the owner can replace a read-only file with user.* attributes" {
	require_cmd setfattr getfattr
	echo old > t
	unpriv_setup
	unpriv setfattr -n user.note -v kept t 2>/dev/null ||
	    skip "no user xattr support here"
	unpriv chmod 0444 t
	run --separate-stderr unpriv "$PONYWRITE" t < <(echo new)
	assert_status 0
	assert_quiet
	assert_mode t 444
	assert_content t $'new\n'
	[ "$(getfattr --only-values -n user.note t)" = kept ] || fail "user.note lost"
	assert_no_litter
}

@test "a write-only file's user.* attributes cannot be read: exit 1, says why, untouched" {
	require_cmd setfattr
	echo old > t
	unpriv_setup
	unpriv setfattr -n user.note -v kept t 2>/dev/null ||
	    skip "no user xattr support here"
	unpriv chmod 0200 t
	snapshot t
	run --separate-stderr unpriv "$PONYWRITE" t < <(echo new)
	if [ "$(id -u)" -eq 0 ] && [ "$status" -eq 0 ]; then
		fail "replaced without its attribute"
	fi
	assert_status 1
	assert_stderr "ponywrite: t: cannot keep attribute user.note: Permission denied (the file is not readable)"
	assert_untouched t
	assert_no_litter
}

@test "file capabilities and the SELinux context are kept, as set-id bits are (root)" {
	require_root
	require_cmd setcap getcap setfattr getfattr
	echo old > t
	chmod 4755 t
	setcap cap_net_raw+ep t 2>/dev/null || skip "no file capabilities here"
	setfattr -n security.selinux -v 'system_u:object_r:etc_t:s0' t 2>/dev/null ||
	    skip "security.selinux cannot be set here"
	run --separate-stderr "$PONYWRITE" t < <(echo new)
	assert_status 0
	assert_quiet
	assert_content t $'new\n'
	assert_mode t 4755
	[ "$(getcap t)" = "t cap_net_raw=ep" ] || fail "capabilities: '$(getcap t)'"
	[ "$(getfattr --only-values -n security.selinux t)" = 'system_u:object_r:etc_t:s0' ] ||
	    fail "context: $(getfattr -d -m - t)"
	# A new owner drops them with the set-id bits, as chown(2) does: said.
	require_nobody
	run --separate-stderr "$PONYWRITE" -o nobody t < <(echo newer)
	assert_status 0
	assert_stderr "ponywrite: t: its file capabilities are dropped, as the owner or group changes (as chown(2) drops them)"
	assert_mode t 755
	[ -z "$(getcap t)" ] || fail "capabilities kept for a new owner: $(getcap t)"
	[ "$(getfattr --only-values -n security.selinux t)" = 'system_u:object_r:etc_t:s0' ] ||
	    fail "context lost with -o"
	assert_no_litter
}

@test "file capabilities a user cannot set again: refused, untouched (never dropped silently)" {
	require_cmd setcap getcap
	echo old > t
	unpriv_setup
	[ "$(id -u)" -eq 0 ] || skip "setcap needs root"
	setcap cap_net_raw+ep t 2>/dev/null || skip "no file capabilities here"
	snapshot t
	run --separate-stderr unpriv "$PONYWRITE" t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: t: cannot keep its file capabilities: Operation not permitted (setting them needs CAP_SETFCAP; setcap -r drops them first)"
	assert_untouched t
	[ "$(getcap t)" = "t cap_net_raw=ep" ] || fail "capabilities: '$(getcap t)'"
	assert_no_litter
}

# Issue 52: root gives a new file a privilege (set-ID bits, file
# capabilities) and another owner.  Its owner, who may chmod(2) it, must not
# be able to write into it before it has them.
#
# owner_race CALL OPTION...: as root, ponywrite OPTION... with its first
# CALL (fremovexattr, the first of the attributes, after the owner is given;
# fchmod, the mode, set last) held back 1.5 s, while nobody writes "evil"
# once into each temporary file that appears in home/ meanwhile, as the
# owner of home/ could.  Once the new file is complete it may be named before its rename,
# and nobody may write into it then: it is nobody's own file, and write(2)
# by nobody takes its set-ID bits and capabilities away.
owner_race()
{
	require_nobody
	require_cmd strace
	as_nobody sh -c 'i=0 seen=; while [ $i -lt 400 ]; do
	    for f in home/.*.*; do
		[ -f "$f" ] || continue
		case $seen in *"<$f>"*) continue ;; esac
		seen="$seen<$f>"
		printf evil | dd of="$f" conv=notrunc,nocreat 2>/dev/null
	    done
	    i=$((i + 1)); sleep 0.01; done' &
	local spy=$! call=$1
	shift
	run --separate-stderr strace -f -qq -o /dev/null \
	    -e inject="$call":delay_enter=1500000:when=1 "$PONYWRITE" "$@"
	kill "$spy" 2>/dev/null
	wait "$spy" 2>/dev/null || :
}

# assert_no_plant FILE MODE TEXT: FILE holds TEXT with MODE, or, if nobody
# wrote into it once it was complete, neither set-ID bits nor capabilities.
assert_no_plant()
{
	if grep -q evil "$1"; then
		[ $((0$(stat -c %a "$1") & 06000)) -eq 0 ] ||
		    fail "$1: set-ID, mode $(stat -c %a "$1"), holding nobody's bytes"
		[ -z "$(getcap "$1" 2>/dev/null)" ] ||
		    fail "$1: capabilities, holding nobody's bytes"
		return 0
	fi
	assert_content "$1" "$3"
	assert_mode "$1" "$2"
}

# nobody's directory home/, and in it nobody's set-group-ID file prog of
# group daemon.
owners_home()
{
	require_nobody
	mkdir home
	echo old > home/prog
	chown nobody:nogroup home
	chown nobody:daemon home/prog
	chmod 2755 home/prog
	echo NEWCONTENT > new
}

@test "root replacing another user's set-group-ID file: the owner cannot write into the new file before it is complete (root)" {
	owners_home
	owner_race fremovexattr -i new home/prog
	assert_status 0
	assert_no_plant home/prog 2755 $'NEWCONTENT\n'
	assert_owner home/prog 65534 "$(getent group daemon | cut -d: -f3)"
	# A batch makes its new files the same way.
	chown nobody:daemon home/prog
	chmod 2755 home/prog
	printf 'home/prog\0new\0' >list
	echo NEWER > new
	owner_race fremovexattr --batch=list
	assert_status 0
	assert_no_plant home/prog 2755 $'NEWER\n'
	assert_no_litter
}

@test "root giving a new file to another user with -o and set-user-ID with -m: the owner cannot write into it first (root)" {
	owners_home
	owner_race fchmod -o nobody -m 4755 -i new home/tool
	assert_status 0
	assert_no_plant home/tool 4755 $'NEWCONTENT\n'
	assert_no_litter
}

@test "root replacing another user's file with file capabilities: the owner cannot write into the new file first (root)" {
	require_cmd setcap getcap
	owners_home
	chmod 0755 home/prog
	setcap cap_net_raw+ep home/prog 2>/dev/null || skip "no file capabilities here"
	owner_race fremovexattr -i new home/prog
	assert_status 0
	assert_no_plant home/prog 755 $'NEWCONTENT\n'
	grep -q evil home/prog ||
	    [ "$(getcap home/prog)" = "home/prog cap_net_raw=ep" ] ||
	    fail "capabilities: '$(getcap home/prog)'"
	assert_no_litter
}

@test "without unnamed files (FUSE): another user's set-group-ID file is refused, by --check too, untouched (root)" {
	require_nobody
	mkdir lower
	mount_bindfs lower m
	mkdir m/home
	echo old > m/home/prog
	chown nobody:nogroup m/home
	chown nobody:daemon m/home/prog
	chmod 2755 m/home/prog
	python3 -c 'import os, sys; os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)' m/home 2>/dev/null &&
	    skip "this FUSE mount has unnamed files"
	snapshot m/home/prog
	why="ponywrite: m/home/prog: cannot be given its set-ID bits or file capabilities safely here: its owner, or those its mode lets write, could write into the new file before it has them, and this file system has no unnamed files (O_TMPFILE) to prevent it"
	run --separate-stderr "$PONYWRITE" --check m/home/prog </dev/null
	assert_status 1
	assert_stderr_has "$why"
	run --separate-stderr "$PONYWRITE" m/home/prog < <(echo new)
	assert_status 1
	assert_stderr "$why"
	assert_untouched m/home/prog
	assert_no_litter m/home
	# Root's own set-group-ID file, which only root can write, still can.
	chown root m/home/prog
	chmod 2755 m/home/prog
	run --separate-stderr "$PONYWRITE" m/home/prog < <(echo new)
	assert_status 0
	assert_content m/home/prog $'new\n'
	assert_mode m/home/prog 2755
}

# Review of issue 56: with the owner given last, a mode whose owner has
# less than its group (0460) let the owner-to-be write the temporary file
# through the group while root owned it.
@test "a file given to another user never gives the owner-to-be more than the final file, before or after the chown (root)" {
	require_root
	require_cmd strace
	local m calls
	for m in 0460 0406 0046 4555 2511; do
		echo old > t
		chown daemon:daemon t
		chmod "$m" t
		run --separate-stderr strace -o trace -e trace=fchown,fchmod "$PONYWRITE" t < <(echo new)
		assert_status 0
		assert_mode t "${m#0}"
		assert_owner t 1 1
		calls=$(grep -E '^fch(own|mod)\(' trace)
		# the file from its creation (0600): while root's, daemon (in
		# group daemon) gets no more than the final owner's bits, nor
		# the group or others more than theirs, nor set-ID bits on it;
		# once daemon's, its owner bits no more than the final ones
		python3 - "$calls" "$m" <<'PY' || fail "$m: $calls"
import re, sys
final = int(sys.argv[2], 8)
fu, fg, fo = (final >> 6) & 7, (final >> 3) & 7, final & 7
cur, owned = 0o600, False
for line in sys.argv[1].splitlines():
    if re.match(r"fchown\(\d+, 1, ", line):
        owned = True
    mm = re.match(r"fchmod\(\d+, 0?([0-7]+)\)", line)
    if mm:
        cur = int(mm.group(1), 8)
    u, g, o = (cur >> 6) & 7, (cur >> 3) & 7, cur & 7
    if not owned and (cur & 0o6000 or g & ~fu or g & ~fg or o & ~fu or o & ~fo):
        sys.exit(1)
    if owned and cur != final and (u & ~fu or g & ~fg or o & ~fo):
        sys.exit(1)
PY
	done
	assert_no_litter
}

@test "root without CAP_FOWNER: another user's set-ID file is refused by --check and the run alike, naming the capability" {
	require_root
	mkdir m
	mount -t tmpfs tmpfs m 2>/dev/null || skip "cannot mount tmpfs"
	PW_MOUNTS+=("$(cd m && pwd -P)")
	chmod 0755 m
	echo old > m/s
	chown nobody:nogroup m/s
	chmod 4755 m/s
	snapshot m/s
	local drop=(setpriv --inh-caps=-fowner --bounding-set=-fowner --) c
	for c in --check ""; do
		run --separate-stderr "${drop[@]}" "$PONYWRITE" $c m/s < <(echo new)
		assert_status 1
		assert_stderr_has "ponywrite: m/s: cannot set mode 4755 once the new file is nobody (65534)'s: Operation not permitted (this root process has no CAP_FOWNER"
	done
	assert_untouched m/s
	assert_no_litter m
}

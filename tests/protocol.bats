#!/usr/bin/env bats
# The protocol, call by call on a trace: how the temporary file is opened,
# the order owner -> attributes -> mode -> fsync (sync_file_range on XFS and
# journaled ext4) -> close -> rename -> directory fsync, and what a failure of each late step leaves behind.

load helpers
load features_helpers

# ptrace ARG...: ponywrite ARG... under strace -f -y; PTRACE holds the calls
# as "name(args) = result", paths shown, in order.  Status in $status.
ptrace()
{
	require_cmd strace
	local log="$BATS_TEST_TMPDIR/p.trace"
	status=0
	strace -f -qq -y -o "$log" "${PTRACE_OPTS[@]}" "$PONYWRITE" "$@" \
	    2>"$BATS_TEST_TMPDIR/p.err" || status=$?
	stderr=$(cat "$BATS_TEST_TMPDIR/p.err")
	PTRACE=$(sed -E 's/^[0-9]+ +//' "$log")
}

# step RE: the line number in PTRACE of the first call matching RE (ERE).
step()
{
	local n
	n=$(grep -n -m1 -E "$1" <<<"$PTRACE" | cut -d: -f1)
	[ -n "$n" ] || { fail "no call matching $1 in:
$PTRACE"; return 1; }
	echo "$n"
}

setup()
{
	pw_setup
	PTRACE_OPTS=(-e trace=openat,open,fchown,fsetxattr,fremovexattr,fchmod,fsync,fdatasync,sync_file_range,close,rename,renameat,renameat2,linkat)
}

@test "the temporary file is opened O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600" {
	echo old > t
	ptrace t < <(echo new)
	assert_status 0
	create=$(grep -E 'O_CREAT' <<<"$PTRACE")
	[ "$(wc -l <<<"$create")" -eq 1 ] || fail "not one create: $create"
	for f in O_RDWR O_CREAT O_EXCL O_NOFOLLOW O_CLOEXEC; do
		[[ $create == *"$f"* ]] || fail "no $f: $create"
	done
	[[ $create =~ \"\.t\.[A-Za-z0-9_-]{12}\",\ .*,\ 0600\)\ +=\ [0-9] ]] ||
	    fail "not .t.RANDOM with 0600: $create"
}

@test "group, attributes, mode, then the owner given away last, then fsync (not fdatasync), close, rename, directory fsync" {
	require_root
	require_cmd setfattr
	echo old > t
	chown nobody:nogroup t
	chmod 0640 t
	setfattr -n user.k -v v t 2>/dev/null || skip "no user xattrs here"
	ptrace t < <(echo new)
	assert_status 0
	tmp='\.t\.[A-Za-z0-9_-]{12}>'
	# root gives another user's file away last (issue 56): what only the
	# owner or CAP_FOWNER may set is set while it is root's
	group=$(step "^fchown\([0-9]+<[^>]*$tmp, -1, 65534\) = 0")
	attr=$(step "^fsetxattr\([0-9]+<[^>]*$tmp, \"user\.k\"")
	mode=$(step "^fchmod\([0-9]+<[^>]*$tmp, 0640\) = 0")
	own=$(step "^fchown\([0-9]+<[^>]*$tmp, 65534, -1\) = 0")
	[ "$group" -lt "$attr" ] && [ "$mode" -lt "$own" ] ||
	    fail "order group=$group attr=$attr mode=$mode own=$own: $PTRACE"
	own=$group
	flush=$(step "^(fsync|sync_file_range)\([0-9]+<[^>]*$tmp(\)|, 0, 0, .*WAIT_AFTER\)) = 0")
	ren=$(step '^renameat2?\(.*"\.t\.[A-Za-z0-9_-]{12}".*"t"')
	if [ "$(plan_of)" = filelog ]; then
		# btrfs: the renamed file is flushed through its descriptor
		# instead of the directory, then closed.
		dir=$(step "^fsync\([0-9]+<$(pwd -P)/t>\) = 0")
		fd=$(sed -n "${dir}s/^fsync(\([0-9]*\)<.*/\1/p" <<<"$PTRACE")
		close=$(step "^close\($fd<$(pwd -P)/t>\) = 0")
		[ "$own" -lt "$attr" ] && [ "$attr" -lt "$mode" ] && [ "$mode" -lt "$flush" ] &&
		    [ "$flush" -lt "$ren" ] && [ "$ren" -lt "$dir" ] && [ "$dir" -lt "$close" ] ||
		    fail "order own=$own attr=$attr mode=$mode wait=$flush rename=$ren fsync=$dir close=$close:
$PTRACE"
	else
		close=$(step "^close\([0-9]+<[^>]*$tmp\) = 0")
		dir=$(step "^fsync\([0-9]+<$(pwd -P)>\) = 0")
		[ "$own" -lt "$attr" ] && [ "$attr" -lt "$mode" ] && [ "$mode" -lt "$flush" ] &&
		    [ "$flush" -lt "$close" ] && [ "$close" -lt "$ren" ] && [ "$ren" -lt "$dir" ] ||
		    fail "order own=$own attr=$attr mode=$mode fsync=$flush close=$close rename=$ren dir=$dir:
$PTRACE"
	fi
	if grep -E '^fdatasync\(' <<<"$PTRACE"; then
		fail "fdatasync instead of fsync: the mode and owner must be durable too"
	fi
	assert_content t $'new\n'
}

# inject_on CALL RE ARG...: fail the first CALL whose traced line matches RE
# with EIO, by counting CALLs in a dry run; the target is "t".
inject_on()
{
	local call=$1 re=$2 n line
	shift 2
	echo old > t
	# As in the real run: -b opens an existing t~ to read its flags.
	echo bak > t~
	PTRACE_OPTS=(-e trace="$call")
	ptrace "$@" t < <(echo dry)
	line=$(grep -m1 -E "$re" <<<"$PTRACE")
	[ -n "$line" ] || { fail "no $call matching $re in: $PTRACE"; return 1; }
	# The C library picks renameat or renameat2: count that one.
	call=${line%%(*}
	n=0
	while IFS= read -r l; do
		[[ $l == "$call("* ]] && n=$((n + 1))
		[[ $l =~ $re ]] && break
	done <<<"$PTRACE"
	echo old > t
	echo bak > t~
	snapshot t t~
	PTRACE_OPTS=(-e trace="$call" -e inject="$call":error=EIO:when="$n")
	ptrace "$@" t < <(echo new)
	grep -E "$re.*INJECTED" <<<"$PTRACE" >/dev/null ||
	    fail "the injection missed: $PTRACE"
}

# Where the plan is filelog (btrfs) the new file is closed after its rename
# and its flush: -b there, which closes it before the rename.
@test "a close() error on the temporary file: exit 1, target untouched, no litter" {
	local b=()
	[ "$(plan_of)" != filelog ] || b=(-b)
	inject_on close '^close\([0-9]+<[^>]*/\.t\.' "${b[@]}"
	assert_status 1
	assert_stderr "ponywrite: t: $E_EIO"
	assert_untouched t t~
	assert_no_litter
}

@test "-b, the target's rename fails: target and backup untouched, no hidden link" {
	inject_on rename,renameat,renameat2 '^renameat2?\(.*, "t"\)' -b
	assert_status 1
	assert_stderr "ponywrite: t: $E_EIO"
	assert_untouched t t~
	assert_no_litter
}

@test "-b, a close() error: target and backup untouched, no hidden link" {
	inject_on close '^close\([0-9]+<[^>]*/\.t\.' -b
	assert_status 1
	assert_untouched t t~
	assert_no_litter
}

@test "-b, the backup's rename fails after the target's: exit 3, the old version kept and named" {
	inject_on rename,renameat,renameat2 '^renameat2?\(.*, "t~"\)' -b
	assert_status 3
	assert_content t $'new\n'
	assert_untouched t~
	hidden=$(find . -name '.t~.*' -printf '%f\n')
	[ -n "$hidden" ] || fail "no hidden backup left"
	assert_content "$hidden" $'old\n'
	assert_stderr "ponywrite: t: replaced, but the previous version could not be renamed to t~: $E_EIO; it is kept as ./$hidden"
}

@test "-b: the backup is linked before the target's rename and renamed to TARGET~ after it" {
	echo old > t
	PTRACE_OPTS=(-e trace=linkat,rename,renameat,renameat2)
	ptrace -b t < <(echo new)
	assert_status 0
	# The last link of t: the first one proves that the file system has
	# hard links, and is removed at once.
	link=$(grep -n -E '^linkat\(.*"t", .*"\.t~\.' <<<"$PTRACE" | tail -1 | cut -d: -f1)
	[ -n "$link" ] || fail "no backup link: $PTRACE"
	ren=$(step '^renameat2?\(.*"\.t\.[A-Za-z0-9_-]{12}", .*"t"')
	bak=$(step '^renameat2?\(.*"\.t~\.[A-Za-z0-9_-]{12}", .*"t~"')
	[ "$link" -lt "$ren" ] && [ "$ren" -lt "$bak" ] ||
	    fail "order link=$link rename=$ren backup=$bak: $PTRACE"
	assert_content t~ $'old\n'
	assert_no_litter
}

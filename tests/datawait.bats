#!/usr/bin/env bats
# The data wait and write-behind with sync_file_range(2), and the kernel
# release that decides the plan of a batch:
#   - an error other than EIO (ENOSPC, EDQUOT) from the data wait before the
#     rename (the ordered plan: ext4 with a journal, default options) or from
#     a write-behind window (input past 64 MiB) fails the run: exit 1, the
#     error named, target untouched, no temporary file; never a silent
#     fallback to fsync, never writing on without the windows;
#   - the data wait is WAIT_BEFORE|WRITE|WAIT_AFTER on the whole temporary
#     file (a page under write-back and dirtied again is written again), the
#     last sync_file_range on it before its rename;
#   - a batch trusts one syncfs(2) only on a kernel that reports write-back
#     errors through it (Linux 5.8 on), read from uname's release: faked here
#     by an LD_PRELOAD shim, the plan read on btrfs;
#   - a regular-file input past 64 MiB (-i FILE, < FILE, a batch's source:
#     copy_file_range) is written behind in the same 8 MiB windows as a pipe,
#     its dirty data bounded.

load helpers
load features_helpers

MIB=1048576
WIN=$((8 * MIB))

# The large files go at once: tests/fscheck's file systems hold 1 GiB.
teardown()
{
	pw_teardown
	rm -rf "$WORK" "$BATS_TEST_TMPDIR"/*.img 2>/dev/null || :
}

# trace_dw TRACE-SET [STRACE-OPTION...] -- ARG...: ponywrite ARG... under
# strace -y tracing the calls of TRACE-SET; DW holds them, one a line, each
# descriptor followed by its <path>.  Exit status in $status, stderr in
# $stderr.  Give the input to this function, not inside it.
trace_dw()
{
	require_cmd strace
	local set=$1 log="$BATS_TEST_TMPDIR/dw.log" opts=()
	shift
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	status=0
	strace -f -qq -y -o "$log" "${opts[@]}" -e trace="$set" \
	    "$PONYWRITE" "$@" 2>"$BATS_TEST_TMPDIR/dw.err" || status=$?
	grep -q 'PTRACE\|ptrace' "$BATS_TEST_TMPDIR/dw.err" &&
	    skip "strace cannot trace here: $(head -1 "$BATS_TEST_TMPDIR/dw.err")"
	# shellcheck disable=SC2034 # read by assert_stderr
	stderr=$(cat "$BATS_TEST_TMPDIR/dw.err")
	DW=$(sed -E 's/^[0-9]+ +//' "$log")
}

# The strerror text of an errno name, as the binary under test prints it.
errtext()
{
	case $1 in
	ENOSPC) echo 'No space left on device' ;;
	EDQUOT) echo "$E_DQUOT" ;;
	esac
}

# The calls of DW that strace failed on purpose.
injected()
{
	printf '%s\n' "$DW" | grep -F '(INJECTED)' || :
}

# No rename, and no fsync or fdatasync of a hidden (temporary) file, in DW.
assert_no_rename_no_fallback()
{
	! printf '%s\n' "$DW" | grep -qE '^rename' ||
	    fail "renamed after the failure:
$DW"
	! printf '%s\n' "$DW" | grep -qE '^f(data)?sync\([0-9]+<[^>]*/\.[^/>]*>\)' ||
	    fail "the temporary file was flushed after sync_file_range failed:
$DW"
}

# ordered_fs TYPE DIR: a fresh TYPE (ext4 with a journal, or XFS) with
# default options on DIR, which gets the ordered plan (the allow-list, read
# independently by plan_of).
ordered_fs()
{
	if [ "$1" = ext4 ]; then
		require_ext4_sysfs
		mount_fs ext4 "$2" -F
	else
		mount_fs "$1" "$2" -f
	fi
	[ "$(plan_of "$2")" = ordered ] ||
	    skip "a fresh $1 here gets the $(plan_of "$2") plan, not the ordered one"
}

@test "ENOSPC and EDQUOT from the data wait before the rename (ext4, ordered): exit 1, named, untouched, no temporary file" {
	ordered_fs ext4 m
	mkdir m/d s
	printf 'old t\n' > m/d/t
	printf 'old b\n' > m/d/b
	printf 'new t\n' > s/t
	printf 'new b\n' > s/b
	local err why inj mode args
	for err in ENOSPC EDQUOT; do
		why=$(errtext "$err")
		snapshot m/d/t m/d/b
		# One file, durable and --no-sync: the wait is the only
		# sync_file_range of a small file.
		for mode in durable --no-sync; do
			args=(m/d/t)
			[ "$mode" = durable ] || args=("$mode" m/d/t)
			trace_dw sync_file_range,fsync,fdatasync,rename,renameat,renameat2 \
			    -e inject=sync_file_range:error="$err":when=1 -- "${args[@]}" < <(printf 'new\n')
			assert_status 1
			assert_stderr "ponywrite: m/d/t: cannot flush to disk: $why"
			inj=$(injected)
			[[ $inj =~ ^sync_file_range\([0-9]+\<.*/m/d/\.t\.[^/]*\>,\ 0,\ 0,\ .*WAIT_AFTER\) ]] ||
			    fail "$mode, $err: not the whole-file data wait failed: $inj"
			assert_no_rename_no_fallback
			assert_untouched m/d/t m/d/b
			assert_no_litter m/d
		done
		# A batch: the second file's wait fails, nothing is replaced.
		trace_dw sync_file_range,fsync,fdatasync,rename,renameat,renameat2 \
		    -e inject=sync_file_range:error="$err":when=2 -- -t m/d s/t s/b
		assert_status 1
		assert_stderr "ponywrite: m/d/b: cannot flush to disk: $why
ponywrite: nothing replaced: 1 of 2 targets failed"
		inj=$(injected)
		[[ $inj =~ ^sync_file_range\([0-9]+\<.*/m/d/\.b\.[^/]*\>,\ 0,\ 0, ]] ||
		    fail "-t $err: not b's data wait failed: $inj"
		assert_no_rename_no_fallback
		assert_untouched m/d/t m/d/b
		assert_no_litter m/d
	done
}

@test "ENOSPC and EDQUOT from a write-behind window (80 MiB): exit 1, named, untouched, no temporary file" {
	ordered_fs ext4 m
	mkdir m/d
	printf 'old\n' > m/d/t
	snapshot m/d/t
	# Past 64 MiB the calls go: start 0, start 8M, wait 0, start 16M, ...
	local err when why inj
	for err in ENOSPC EDQUOT; do
		why=$(errtext "$err")
		for when in 1 2 3; do
			trace_dw sync_file_range,fadvise64,fsync,fdatasync,rename,renameat,renameat2 \
			    -e inject=sync_file_range:error="$err":when=$when -- m/d/t \
			    < <(head -c $((80 * MIB)) /dev/zero)
			assert_status 1
			assert_stderr "ponywrite: m/d/t: cannot write the new content: $why"
			inj=$(injected)
			[[ $inj =~ ^sync_file_range\([0-9]+\<[^\>]*\>,\ [0-9]+,\ $WIN, ]] ||
			    fail "$err when=$when: not a window failed: $inj"
			# Nothing after the failed window: no other window, no
			# wait for the whole file, no advice, no rename.
			[ "$(printf '%s\n' "$DW" | tail -n 1)" = "$inj" ] ||
			    fail "$err when=$when: went on after the failed window:
$DW"
			assert_no_rename_no_fallback
			assert_untouched m/d/t
			assert_no_litter m/d
		done
	done
	# A batch's source, a regular file: the same.
	mkdir m/s
	head -c $((80 * MIB)) /dev/zero > m/s/t
	for err in ENOSPC EDQUOT; do
		trace_dw sync_file_range,fadvise64,fsync,fdatasync,rename,renameat,renameat2 \
		    -e inject=sync_file_range:error="$err":when=3 -- -t m/d m/s/t
		assert_status 1
		assert_stderr "ponywrite: m/d/t: cannot write the new content: $(errtext "$err")
ponywrite: nothing replaced: 1 of 1 targets failed"
		[ "$(printf '%s\n' "$DW" | tail -n 1)" = "$(injected)" ] ||
		    fail "-t $err: went on after the failed window:
$DW"
		assert_no_rename_no_fallback
		assert_untouched m/d/t
		assert_no_litter m/d
	done
}

# last_waits: for each rename of DW (in order), "NAME OFFSET NBYTES FLAGS
# RESULT" of the last sync_file_range on its temporary file before that
# rename, FLAGS sorted and joined by '|'; "NAME none" if there is none.
last_waits()
{
	local line name path last flags
	local -A seen=()
	local -a lines
	mapfile -t lines <<<"$DW"
	local i j
	for ((i = 0; i < ${#lines[@]}; i++)); do
		line=${lines[i]}
		[[ $line =~ ^rename(at2?)?\(.*\"([^\"]+)\",\ [0-9]+\<[^\>]*\>,\ \"([^\"]+)\"(,\ [A-Z_|]+)?\)\ =\ 0$ ]] ||
		    continue
		name=${BASH_REMATCH[2]}
		[ -z "${seen[$name]+set}" ] || continue
		seen[$name]=1
		last=
		for ((j = i - 1; j >= 0; j--)); do
			if [[ ${lines[j]} =~ ^sync_file_range\([0-9]+\<([^\>]*)\>,\ ([0-9]+),\ ([0-9]+),\ ([A-Z_|0-9]+)\)\ =\ (.*)$ ]]; then
				path=${BASH_REMATCH[1]}
				[ "${path##*/}" = "$name" ] || continue
				flags=$(tr '|' '\n' <<<"${BASH_REMATCH[4]}" | sort | paste -sd '|')
				last="$name ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} $flags ${BASH_REMATCH[5]}"
				break
			fi
		done
		echo "${last:-$name none}"
	done
}

# assert_waits N: DW has N renames, each of a temporary file whose last
# sync_file_range before it waited for the whole file, written again first.
assert_waits()
{
	local want='0 0 SYNC_FILE_RANGE_WAIT_AFTER|SYNC_FILE_RANGE_WAIT_BEFORE|SYNC_FILE_RANGE_WRITE 0'
	local got n=0 w
	got=$(last_waits)
	while IFS= read -r w; do
		[ -n "$w" ] || continue
		n=$((n + 1))
		[ "${w#* }" = "$want" ] || fail "the last sync_file_range before renaming ${w%% *}: ${w#* }
want: $want
$DW"
	done <<<"$got"
	[ "$n" -eq "$1" ] || fail "$n renames of a temporary file, expected $1:
$DW"
}

@test "the data wait: WAIT_BEFORE|WRITE|WAIT_AFTER on the whole temporary file, last before its rename (ext4, XFS)" {
	local fs set=sync_file_range,rename,renameat,renameat2
	printf 'a\n' > a
	printf 'b\n' > b
	for fs in ext4 xfs; do
		ordered_fs "$fs" "$fs"
		mkdir "$fs/d"
		printf 'old\n' > "$fs/d/t"
		trace_dw "$set" -- "$fs/d/t" < <(printf 'new\n')
		assert_status 0
		assert_waits 1
		trace_dw "$set" -- --no-sync "$fs/d/t" < <(printf 'newer\n')
		assert_status 0
		assert_waits 1
		assert_content "$fs/d/t" $'newer\n'
		# After the windows of a large input, still the whole file.
		trace_dw "$set" -- "$fs/d/t" < <(head -c $((80 * MIB)) /dev/zero)
		assert_status 0
		assert_waits 1
		[ "$(stat -c %s "$fs/d/t")" -eq $((80 * MIB)) ] ||
		    fail "$fs/d/t: size $(stat -c %s "$fs/d/t")"
		# Every file of a batch.
		trace_dw "$set" -- -t "$fs/d" a b
		assert_status 0
		assert_waits 2
		assert_content "$fs/d/b" $'b\n'
		assert_no_litter "$fs/d"
	done
}

# A shim that makes uname(2) say the release in PONYWRITE_FAKE_RELEASE.
build_uname_shim()
{
	require_cmd cc file
	local desc
	desc=$(file -L "$PONYWRITE")
	case $desc in
	*"statically linked"* | *static-pie*)
		skip "$PONYWRITE is static: LD_PRELOAD has no effect" ;;
	esac
	ldd "$PONYWRITE" >/dev/null 2>&1 ||
	    skip "$PONYWRITE is not a dynamic executable (ldd)"
	SHIM="$BATS_TEST_TMPDIR/fakeuname.so"
	cat > "$BATS_TEST_TMPDIR/fakeuname.c" <<-'EOF'
	#define _GNU_SOURCE
	#include <stdlib.h>
	#include <string.h>
	#include <sys/syscall.h>
	#include <sys/utsname.h>
	#include <unistd.h>

	int
	uname(struct utsname *u)
	{
		const char *r = getenv("PONYWRITE_FAKE_RELEASE");

		if (syscall(SYS_uname, u) != 0)
			return -1;
		if (r != NULL) {
			strncpy(u->release, r, sizeof u->release - 1);
			u->release[sizeof u->release - 1] = '\0';
		}
		return 0;
	}
	EOF
	cc -shared -fPIC -o "$SHIM" "$BATS_TEST_TMPDIR/fakeuname.c" ||
	    skip "cannot build an LD_PRELOAD shim with cc"
	[ "$(env LD_PRELOAD="$SHIM" PONYWRITE_FAKE_RELEASE=1.2.3-shim uname -r)" = 1.2.3-shim ] ||
	    skip "the LD_PRELOAD shim has no effect here"
}

# plan_faked RELEASE ARG...: plan ARG... with uname's release faked.
plan_faked()
{
	local rel=$1 real=$PONYWRITE
	shift
	PONYWRITE="env" plan LD_PRELOAD="$SHIM" PONYWRITE_FAKE_RELEASE="$rel" \
	    "$real" "$@"
}

@test "syncfs in a batch only where the kernel reports write-back errors through it (5.8 on; uname faked)" {
	build_uname_shim
	mount_fs btrfs m -f
	[ "$(plan_of m)" = filelog ] || skip "a fresh btrfs here gets the $(plan_of m) plan"
	mkdir -p m/d s
	printf 'old a\n' > m/d/a
	printf 'new a\n' > s/a
	printf 'new b\n' > s/b
	local rel want bad=
	local reports="5.8.0 5.8.0-rc1 5.10.0 5.19.17 6.1.0 6.7.0 6.8.0 6.1.0-28-amd64 10.0.0"
	local silent="2.6.32 3.10.0-1160.el7.x86_64 4.19.0 4.19.0-26-amd64 5.7.0 5.7.19 unknown"
	for rel in $reports $silent; do
		case " $reports " in
		*" $rel "*) want="start*2 syncfs rename*2 fsync:m/d" ;;
		*) want="start*2 fsync-temp*2 rename*2 fsync:m/d" ;;
		esac
		rm -f m/d/b
		plan_faked "$rel" -t m/d s/a s/b
		assert_status 0
		assert_content m/d/a $'new a\n'
		assert_content m/d/b $'new b\n'
		[ "$PLAN" = "$want" ] || bad+="
  $rel: '$PLAN', expected '$want'"
	done
	assert_no_litter m/d
	[ -z "$bad" ] || fail "the plan of a batch of two on btrfs, by kernel release:$bad"
}

# trace_copy ARG...: ponywrite ARG... under strace; WINDOWS is its window
# calls on the temporary file as words (W OFFSET LENGTH: write-back started,
# A OFFSET LENGTH: waited for, D OFFSET LENGTH: dropped from the cache) for
# the first temporary file, MAXDIRTY the most bytes it had written and not
# yet waited for, COPIED the calls that wrote it (copy_file_range, splice,
# write, pwrite64) with their count.
trace_copy()
{
	trace_dw sync_file_range,fadvise64,copy_file_range,splice,write,pwrite64,rename,renameat,renameat2 \
	    -- "$@"
	local here line tmp='' written=0 waited=0 n
	local -A calls=()
	here=$(pwd -P)
	WINDOWS='' MAXDIRTY=0 COPIED=''
	while IFS= read -r line; do
		if [[ $line =~ ^(copy_file_range)\([0-9]+\<[^\>]*\>,\ [^,]*,\ [0-9]+\<([^\>]*)\>,.*\ =\ ([0-9]+)$ ]] ||
		    [[ $line =~ ^(splice)\([0-9]+\<[^\>]*\>,\ NULL,\ [0-9]+\<([^\>]*)\>,.*\ =\ ([0-9]+)$ ]] ||
		    [[ $line =~ ^(write|pwrite64)\([0-9]+\<([^\>]*)\>,.*\ =\ ([0-9]+)$ ]]; then
			n=${BASH_REMATCH[3]}
			[[ ${BASH_REMATCH[2]} == "$here"/.* ]] || continue
			[ -n "$tmp" ] || tmp=${BASH_REMATCH[2]}
			[ "${BASH_REMATCH[2]}" = "$tmp" ] || continue
			((n > 0)) || continue
			calls[${BASH_REMATCH[1]}]=$((${calls[${BASH_REMATCH[1]}]:-0} + 1))
			written=$((written + n))
			((written - waited <= MAXDIRTY)) || MAXDIRTY=$((written - waited))
		elif [[ $line =~ ^sync_file_range\([0-9]+\<([^\>]*)\>,\ ([0-9]+),\ ([1-9][0-9]*),\ ([A-Z_|]+)\)\ =\ 0$ ]]; then
			[ "${BASH_REMATCH[1]}" = "$tmp" ] || continue
			case ${BASH_REMATCH[4]} in
			SYNC_FILE_RANGE_WRITE)
				WINDOWS+="W ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} " ;;
			SYNC_FILE_RANGE_WAIT_BEFORE\|SYNC_FILE_RANGE_WRITE\|SYNC_FILE_RANGE_WAIT_AFTER)
				WINDOWS+="A ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} "
				n=$((BASH_REMATCH[2] + BASH_REMATCH[3]))
				((n <= waited)) || waited=$n ;;
			*) WINDOWS+="? ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} " ;;
			esac
		elif [[ $line =~ ^fadvise64\([0-9]+\<([^\>]*)\>,\ ([0-9]+),\ ([0-9]+),\ POSIX_FADV_DONTNEED\)\ =\ 0$ ]]; then
			[ "${BASH_REMATCH[1]}" = "$tmp" ] || continue
			WINDOWS+="D ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} "
		fi
	done <<<"$DW"
	for n in "${!calls[@]}"; do
		COPIED+="$n*${calls[$n]} "
	done
}

# The windows expected for MIB mebibytes of new content.
expected_windows()
{
	local k out=
	[ "$1" -ge 64 ] || return 0
	for ((k = 0; k < $1 / 8; k++)); do
		out+="W $((k * WIN)) $WIN "
		((k == 0)) || out+="A $(((k - 1) * WIN)) $WIN D $(((k - 1) * WIN)) $WIN "
	done
	printf '%s' "$out"
}

# assert_behind WHAT: WINDOWS are those of 80 MiB, and no more than 64 MiB
# and a window were ever written and not waited for.
assert_behind()
{
	local want
	want=$(expected_windows 80)
	[ "$WINDOWS" = "$want" ] || fail "$1: windows
want: $want
got:  $WINDOWS"
	((MAXDIRTY <= 64 * MIB + WIN)) ||
	    fail "$1: $((MAXDIRTY / MIB)) MiB written and not waited for at once (copied by $COPIED)"
}

@test "80 MiB from a regular file (-i FILE, < FILE; copy_file_range): written behind as from a pipe" {
	head -c $((80 * MIB)) /dev/urandom > in
	trace_copy t < <(cat in)
	assert_status 0
	cmp in t
	[[ $COPIED == *splice* ]] || fail "the pipe was not spliced: $COPIED"
	assert_behind "a pipe"
	local pipe=$WINDOWS
	trace_copy -i in t
	assert_status 0
	cmp in t
	[[ $COPIED == *copy_file_range* ]] || fail "-i in: not copied with copy_file_range: $COPIED"
	assert_behind "-i in"
	[ "$WINDOWS" = "$pipe" ] || fail "-i in: not the windows of a pipe"
	trace_copy t < in
	assert_status 0
	cmp in t
	[[ $COPIED == *copy_file_range* ]] || fail "< in: not copied with copy_file_range: $COPIED"
	assert_behind "< in"
	[ "$WINDOWS" = "$pipe" ] || fail "< in: not the windows of a pipe"
	assert_no_litter
}

# windows_in NAME: the window calls of DW on the temporary file NAME, as
# words (see trace_copy).
windows_in()
{
	printf '%s\n' "$DW" | grep -F "/$1>" | sed -nE \
	    -e 's/^sync_file_range\([0-9]+<[^>]*>, ([0-9]+), ([1-9][0-9]*), SYNC_FILE_RANGE_WRITE\) = 0$/W \1 \2/p' \
	    -e 's/^sync_file_range\([0-9]+<[^>]*>, ([0-9]+), ([1-9][0-9]*), SYNC_FILE_RANGE_WAIT_BEFORE\|SYNC_FILE_RANGE_WRITE\|SYNC_FILE_RANGE_WAIT_AFTER\) = 0$/A \1 \2/p' \
	    -e 's/^fadvise64\([0-9]+<[^>]*>, ([0-9]+), ([0-9]+), POSIX_FADV_DONTNEED\) = 0$/D \1 \2/p' |
	    tr '\n' ' '
}

@test "a batch of regular files past 64 MiB: each new file written behind as in a run of its own" {
	mkdir d s
	head -c $((80 * MIB)) /dev/urandom > s/a
	head -c $((80 * MIB)) /dev/urandom > s/b
	trace_dw sync_file_range,fadvise64,rename,renameat,renameat2 -- -t d s/a s/b
	assert_status 0
	cmp s/a d/a
	cmp s/b d/b
	local name tmp got want
	want=$(expected_windows 80)
	for name in a b; do
		tmp=$(printf '%s\n' "$DW" |
		    sed -nE "s/^rename.*\"(\\.$name\\.[^\"]*)\", [0-9]+<[^>]*>, \"$name\".*/\\1/p")
		[ -n "$tmp" ] || fail "no rename onto d/$name: $DW"
		got=$(windows_in "$tmp")
		[ "$got" = "$want" ] || fail "d/$name, file $name of a batch of two: windows
want: $want
got:  $got"
	done
	assert_no_litter
}

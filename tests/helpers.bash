# Shared helpers for the ponywrite bats suites.  In a .bats file:
#
#	load helpers
#
# What it gives a test:
#
#   PONYWRITE            the binary under test ($PONYWRITE, default ../ponywrite)
#   WORK                 a fresh empty directory for this test; the test runs in
#                        it with umask 022
#   setup, teardown      default ones; a file defining its own calls pw_setup and
#                        pw_teardown from them
#   describe FILE        PW_DESC: what snapshot records of FILE
#   snapshot FILE...     record type, inode, links, mode, uid, gid, mtime (ns) and
#                        content hash (link text for a symlink; "absent" if missing)
#   assert_untouched FILE...   fail unless FILE matches its snapshot
#   assert_no_litter [DIR] [NAME...]   fail if DIR (default WORK) holds, at any
#                        depth, a hidden entry (a ponywrite temporary file is
#                        ".NAME.XXXXXXXXXXXX") other than the NAMEs listed
#   assert_status N, assert_stderr TEXT, assert_stderr_has TEXT, assert_quiet,
#   assert_content FILE TEXT, assert_mode FILE OCTAL, assert_owner FILE UID GID,
#   assert_regular FILE, assert_symlink FILE, inode FILE, fail MESSAGE
#   require_root, require_cmd CMD..., require_nobody (root, and WORK reachable),
#   require_mknod, require_mount_ns (skip in a container without the caps)
#   NOBODY               array: setpriv prefix that drops to nobody:nogroup
#   as_nobody CMD...     run CMD as nobody:nogroup (root only; see require_nobody)
#   unpriv_setup         when root: require_nobody and give WORK (as it is now,
#                        recursively) to nobody:nogroup; otherwise nothing
#   unpriv CMD...        as nobody when root, as is otherwise
#   mount_ext4 DIR MIB [OPTS]  loop-mount a fresh ext4 of MIB MiB on DIR (root;
#                        skips when loop devices are missing); unmounted by teardown
#   mount_fs TYPE DIR [MKFS-OPTION...]  the same for a 320 MiB file system of TYPE
#   require_ext4_sysfs   skip unless /sys/fs/ext4 shows whether an ext4 has a
#                        journal (without it ponywrite keeps fsync there)
#   start_slow ARG...    run "${PW_PREFIX[@]}" $PONYWRITE ARG... in the background
#                        reading a FIFO that this shell writes through fd 9; PW_PID
#   temp_of PID [DIR]    wait (5 s) until PID has a temporary file in DIR open; print
#                        its path (as /proc/PID/fd shows it)
#   wait_temp_size PID PATH BYTES   wait (5 s) until that open file holds BYTES
#   finish_slow          close fd 9, wait for PW_PID; PW_STATUS, PW_STDERR
#
# Output assertions expect `run --separate-stderr`: $output is stdout, $stderr
# is stderr.

bats_require_minimum_version 1.5.0

PONYWRITE="${PONYWRITE:-$BATS_TEST_DIRNAME/../ponywrite}"
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)

# strerror texts differ between C libraries; musl's binary holds its own.
# Found once a run (helpers load for every test; a process costs 10 ms).
pw_libc()
{
	local f="${BATS_RUN_TMPDIR:-/nonexistent}/libc.${PONYWRITE//\//_}"
	PW_LIBC=
	[ -r "$f" ] && read -r PW_LIBC <"$f"
	[ -n "$PW_LIBC" ] && return
	PW_LIBC=glibc
	if grep -q 'Symbolic link loop' "$PONYWRITE" 2>/dev/null; then
		PW_LIBC=musl
	fi
	echo "$PW_LIBC" >"$f" 2>/dev/null || :
}
pw_libc
# shellcheck disable=SC2034 # used by the .bats files
if [ "$PW_LIBC" = musl ]; then
	E_EIO='I/O error' E_DQUOT='Quota exceeded'
	E_NAMETOOLONG='Filename too long' E_LOOP='Symbolic link loop'
else
	E_EIO='Input/output error' E_DQUOT='Disk quota exceeded'
	E_NAMETOOLONG='File name too long'
	E_LOOP='Too many levels of symbolic links'
fi

pw_setup()
{
	case $PONYWRITE in
	/*) ;;
	*) PONYWRITE="$PWD/$PONYWRITE" ;;
	esac
	[ -x "$PONYWRITE" ] || fail "no ponywrite binary at $PONYWRITE (run make)"
	WORK="$BATS_TEST_TMPDIR/w"
	declare -gA PW_SNAP=()
	PW_MOUNTS=()
	PW_PID=
	PW_PREFIX=()
	mkdir "$WORK"
	if [ "$EUID" -eq 0 ]; then
		# Let tests drop to nobody: make the way down to WORK searchable
		# (one chmod: a test's setup runs 444 times a suite).
		local d="$WORK"
		local -a way=()
		while [ "$d" != "$BATS_RUN_TMPDIR" ] && [ "$d" != / ]; do
			way+=("$d")
			d=${d%/*}
		done
		[ "$d" = / ] || way+=("$d")
		chmod o+x "${way[@]}"
	fi
	cd "$WORK" || return 1
	umask 022
}

pw_teardown()
{
	exec 9>&-
	if [ -n "${PW_PID:-}" ]; then
		kill -KILL "$PW_PID" 2>/dev/null || :
		wait "$PW_PID" 2>/dev/null || :
	fi
	cd /
	pw_kill_strays
	local i m
	for ((i = ${#PW_MOUNTS[@]} - 1; i >= 0; i--)); do	# the last first
		m=${PW_MOUNTS[i]}
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || :
	done
	if [ -n "${PW_LOOP:-}" ]; then
		losetup -d "$PW_LOOP" 2>/dev/null || :
		PW_LOOP=
	fi
	# so that bats can remove what a test made unreadable (root can anyway)
	[ "$EUID" -eq 0 ] || chmod -R u+rwX "$BATS_TEST_TMPDIR" 2>/dev/null || :
}

# Every process still working in this test's directory (a background run,
# a lock holder, a command it started), pass or fail: none outlives its test.
pw_kill_strays()
{
	local cwd pids=()
	while read -r cwd; do
		cwd=${cwd#/proc/}
		pids+=("${cwd%/cwd}")
	done < <(find /proc/[0-9]*/cwd -maxdepth 0 -lname "$BATS_TEST_TMPDIR/*" 2>/dev/null)
	[ ${#pids[@]} -gt 0 ] || return 0
	kill -KILL "${pids[@]}" 2>/dev/null || :
}

setup() { pw_setup; }
teardown() { pw_teardown; }

fail()
{
	printf '%s\n' "$*" >&2
	return 1
}

require_root()
{
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

require_cmd()
{
	local c
	for c; do
		command -v "$c" >/dev/null 2>&1 || skip "needs $c"
	done
}

# A container or chroot without CAP_MKNOD or CAP_SYS_ADMIN: skip what needs
# a device node made here, or a mount namespace of its own.
require_mknod()
{
	require_root
	mknod -m 0600 "$BATS_TEST_TMPDIR/.mknod-probe" c 1 3 2>/dev/null ||
	    skip "cannot make device nodes here (no CAP_MKNOD)"
	rm -f "$BATS_TEST_TMPDIR/.mknod-probe"
}

require_mount_ns()
{
	require_root
	require_cmd unshare
	unshare --mount --propagation private true 2>/dev/null ||
	    skip "no mount namespace here (no CAP_SYS_ADMIN)"
}

require_nobody()
{
	require_root
	require_cmd setpriv
	if ! getent passwd nobody >/dev/null ||
	    ! getent group nogroup >/dev/null; then
		skip "needs user nobody and group nogroup"
	fi
	"${NOBODY[@]}" test -x "$WORK" -a -x "$PONYWRITE" ||
	    skip "nobody cannot reach $WORK or $PONYWRITE"
}

as_nobody()
{
	"${NOBODY[@]}" "$@"
}

# Run as an ordinary user: nobody when we are root (WORK is then given to
# nobody), ourselves otherwise.  Call unpriv_setup first.
unpriv_setup()
{
	if [ "$(id -u)" -eq 0 ]; then
		require_nobody
		chown -R nobody:nogroup "$WORK"
	fi
}

unpriv()
{
	if [ "$(id -u)" -eq 0 ]; then
		"${NOBODY[@]}" "$@"
	else
		"$@"
	fi
}

# Inode number, following nothing.
inode() { stat -c %i -- "$1"; }

# describe FILE: set PW_DESC to FILE's description (no subshell: a
# snapshot costs its stat and its hash, not more processes).
describe()
{
	local f=$1 h
	if [ ! -e "$f" ] && [ ! -L "$f" ]; then
		PW_DESC=absent
		return
	fi
	PW_DESC=$(stat -c '%F ino=%i links=%h mode=%a uid=%u gid=%g mtime=%.9Y' -- "$f")
	if [ -L "$f" ]; then
		PW_DESC="$PW_DESC -> $(readlink -- "$f")"
	elif [ -f "$f" ]; then
		h=$(sha256sum 2>/dev/null <"$f") || h=unreadable
		PW_DESC="$PW_DESC sha256=${h%% *}"
	elif [ -b "$f" ] || [ -c "$f" ]; then
		PW_DESC="$PW_DESC rdev=$(stat -c %t:%T -- "$f")"
	fi
}

snapshot()
{
	local f
	for f; do
		describe "$f"
		PW_SNAP[$f]=$PW_DESC
	done
}

assert_untouched()
{
	local f now
	for f; do
		[ -n "${PW_SNAP[$f]+set}" ] || { fail "assert_untouched: no snapshot of $f"; return 1; }
		describe "$f"
		now=$PW_DESC
		if [ "$now" != "${PW_SNAP[$f]}" ]; then
			fail "$f changed:" "
  before: ${PW_SNAP[$f]}
  after:  $now"
			return 1
		fi
	done
}

assert_no_litter()
{
	local dir=${1:-$WORK}
	[ $# -gt 0 ] && shift
	[ -d "$dir" ] || { fail "assert_no_litter: $dir is not a directory"; return 1; }
	local e ok name litter=
	while IFS= read -r -d '' e; do
		name=${e##*/}
		ok=
		for allowed; do
			[ "$name" = "$allowed" ] && ok=1
		done
		[ -n "$ok" ] || litter="$litter $e"
	done < <(find "$dir" -mindepth 1 -name '.*' -print0)
	[ -z "$litter" ] || fail "litter left behind:$litter"
}

assert_status()
{
	[ "$status" -eq "$1" ] ||
	    fail "exit status $status, expected $1
stdout: $output
stderr: ${stderr:-}"
}

assert_stderr()
{
	[ "$stderr" = "$1" ] ||
	    fail "stderr was:
$stderr
expected:
$1"
}

assert_stderr_has()
{
	case $stderr in
	*"$1"*) ;;
	*) fail "stderr lacks '$1'; it was:
$stderr" ;;
	esac
}

# Nothing on stdout nor stderr.
assert_quiet()
{
	[ -z "$output" ] || { fail "unexpected stdout: $output"; return 1; }
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
}

assert_content()
{
	[ -f "$1" ] || { fail "$1 is not a regular file"; return 1; }
	printf '%s' "$2" | cmp -s -- - "$1" ||
	    fail "$1 holds '$(head -c 200 "$1")', expected '$2'"
}

assert_mode()
{
	local m
	m=$(stat -c %a -- "$1")
	[ "$m" = "$(printf %o $((8#$2)))" ] || fail "$1 has mode $m, expected $2"
}

assert_owner()
{
	local o
	o=$(stat -c %u:%g -- "$1")
	[ "$o" = "$2:$3" ] || fail "$1 is owned by $o, expected $2:$3"
}

assert_regular()
{
	if [ ! -f "$1" ] || [ -L "$1" ]; then
		fail "$1 is not a regular file"
	fi
}

assert_symlink()
{
	[ -L "$1" ] || fail "$1 is not a symbolic link"
}

require_ext4_sysfs()
{
	if [ -z "$(ls /sys/fs/ext4 2>/dev/null)" ]; then
		skip "no /sys/fs/ext4 (sysfs not mounted): ext4 keeps fsync"
	fi
}

# mount_fs TYPE DIR [MKFS-OPTION...]: a fresh TYPE file system loop-mounted on
# DIR, with the mount options $MOUNT_OPTS if set (root only; skips when the
# tools or loop devices are missing).
mount_fs()
{
	require_root
	local type=$1 dir=$2 img
	shift 2
	require_cmd "mkfs.$type" losetup mount umount
	img="$BATS_TEST_TMPDIR/$type.${#PW_MOUNTS[@]}.img"
	truncate -s 320M "$img"
	"mkfs.$type" -q "$@" "$img" >/dev/null 2>&1 || skip "mkfs.$type failed"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	mount -o "loop${MOUNT_OPTS:+,$MOUNT_OPTS}" "$img" "$dir" 2>/dev/null ||
	    skip "cannot loop-mount $type${MOUNT_OPTS:+ -o $MOUNT_OPTS}"
	PW_MOUNTS+=("$dir")
}

# mount_bindfs LOWER DIR [OPTION...]: LOWER seen through bindfs (FUSE) on
# DIR, with bindfs's OPTIONs (-o allow_other: for other users).  Root only.
mount_bindfs()
{
	require_root
	require_cmd bindfs fusermount3
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	mkdir -p "$2"
	bindfs "${@:3}" "$1" "$2" 2>/dev/null || skip "bindfs cannot mount"
	PW_MOUNTS+=("$(cd "$2" && pwd -P)")
}

# mount_fuse_overlayfs DIR [LAYERS]: fuse-overlayfs on DIR, its lower, upper
# and work directories in LAYERS (default: here).  Root only.
mount_fuse_overlayfs()
{
	require_root
	require_cmd fuse-overlayfs
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	local l=${2:-.}
	mkdir -p "$l/lower" "$l/upper" "$l/work" "$1"
	fuse-overlayfs -o "lowerdir=$l/lower,upperdir=$l/upper,workdir=$l/work" "$1" \
	    2>/dev/null || skip "fuse-overlayfs cannot mount"
	PW_MOUNTS+=("$(cd "$1" && pwd -P)")
}

# mount_exfat DIR: a fresh exFAT image on DIR through exfat-fuse (which needs
# a block device: a loop device, detached by pw_teardown).  Root only.
mount_exfat()
{
	require_root
	require_cmd mkfs.exfat mount.exfat-fuse losetup
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	local img="$BATS_TEST_TMPDIR/exfat.img"
	truncate -s 64M "$img"
	mkfs.exfat "$img" >/dev/null 2>&1 || skip "mkfs.exfat failed"
	PW_LOOP=$(losetup -f --show "$img") || skip "no loop device"
	mkdir -p "$1"
	mount.exfat-fuse "$PW_LOOP" "$1" >/dev/null 2>&1 || skip "exfat-fuse cannot mount"
	PW_MOUNTS+=("$(cd "$1" && pwd -P)")
}

# mount_fusefat DIR: a fresh FAT image on DIR through fusefat, which has no
# chmod and no chown (ENOSYS).  Root only.
mount_fusefat()
{
	require_root
	require_cmd mkfs.vfat fusefat
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	local img="$BATS_TEST_TMPDIR/fat.img"
	truncate -s 64M "$img"
	mkfs.vfat "$img" >/dev/null 2>&1 || skip "mkfs.vfat failed"
	mkdir -p "$1"
	# fusefat exits 0 where its mount then fails (a container's root)
	if ! fusefat -o rw+ "$img" "$1" >/dev/null 2>&1 ||
	    ! mountpoint -q "$1"; then
		skip "fusefat cannot mount"
	fi
	PW_MOUNTS+=("$(cd "$1" && pwd -P)")
}

# mount_ext4 DIR MIB [OPTS]: a fresh ext4 file system of MIB MiB, no blocks
# reserved for root, loop-mounted on DIR (created).  Root only.
mount_ext4()
{
	require_root
	require_cmd mkfs.ext4 losetup mount umount
	local dir=$1 size=$2 opts=${3:-}
	local img="$BATS_TEST_TMPDIR/ext4.${#PW_MOUNTS[@]}.img"
	truncate -s "${size}M" "$img"
	mkfs.ext4 -q -F -m 0 -E nodiscard "$img" >/dev/null 2>&1 ||
	    skip "mkfs.ext4 failed"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	mount -o "loop${opts:+,$opts}" "$img" "$dir" 2>/dev/null ||
	    skip "cannot loop-mount ext4"
	PW_MOUNTS+=("$dir")
}

# start_slow ARG...: ponywrite reading a FIFO we hold open on fd 9.
start_slow()
{
	local fifo="$BATS_TEST_TMPDIR/slow.fifo"
	rm -f "$fifo"
	mkfifo -m 0666 "$fifo"
	PW_STDERR_FILE="$BATS_TEST_TMPDIR/slow.err"
	# env resets signal dispositions that the shell set for background jobs.
	"${PW_PREFIX[@]}" env --default-signal "$PONYWRITE" "$@" \
	    <"$fifo" >/dev/null 2>"$PW_STDERR_FILE" 3>&- &
	PW_PID=$!
	exec 9>"$fifo"
}

# temp_of PID [DIR]: path of the temporary file PID has open in DIR.
temp_of()
{
	local pid=$1 dir=${2:-$WORK} i fd l
	dir=$(cd "$dir" && pwd -P)
	for i in $(seq 100); do
		for fd in /proc/"$pid"/fd/*; do
			l=$(readlink "$fd" 2>/dev/null) || continue
			case $l in
			"$dir"/.*|"$dir"/\#*) echo "$l"; return 0 ;;
			esac
		done
		sleep 0.05
	done
	fail "process $pid has no temporary file open in $dir"
}

# wait_temp_size PID PATH BYTES: wait until the open temporary file holds BYTES.
wait_temp_size()
{
	local pid=$1 path=$2 bytes=$3 i fd
	for i in $(seq 100); do
		for fd in /proc/"$pid"/fd/*; do
			[ "$(readlink "$fd" 2>/dev/null)" = "$path" ] || continue
			[ "$(stat -L -c %s "$fd" 2>/dev/null)" -ge "$bytes" ] && return 0
		done
		sleep 0.05
	done
	fail "temporary file $path never reached $bytes bytes"
}

finish_slow()
{
	exec 9>&-
	PW_STATUS=0
	wait "$PW_PID" || PW_STATUS=$?
	PW_PID=
	PW_STDERR=$(cat "$PW_STDERR_FILE")
}

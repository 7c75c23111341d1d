# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # root is the sourcing script's; recpid, slowroot... go back to it
# bench/recorder.bash - the slow disk of bench/many and bench/scale: the
# block-level recorder of tests/blockcrash (a FUSE file whose flushes cost
# a set latency, and which counts them), sourced by both.  Needs $root (the
# project's top directory).

# build_recorder OUT LOG: compile the recorder into OUT (compiler messages
# in LOG); on failure print why and return 1.
build_recorder() {
	local fuseflags
	if [[ ! -e /dev/fuse ]] || ! command -v fusermount3 >/dev/null 2>&1; then
		echo "needs /dev/fuse and fusermount3"
		return 1
	fi
	fuseflags=$(pkg-config --cflags --libs fuse3 2>/dev/null) || fuseflags=
	# shellcheck disable=SC2086 # compiler flags, split on purpose
	if ! cc -O2 -o "$1" "$root/tests/blockcrash/recorder.c" $fuseflags 2>"$2"; then
		echo "cannot build the recorder (libfuse3-dev, pkg-config)"
		return 1
	fi
}

# start_recorder REC IMAGE DIR LATENCY: serve IMAGE as DIR/disk, each
# flush costing LATENCY; the server's pid in recpid.  0 once DIR/ctl is
# there, 1 if it did not start within 5 s.
start_recorder() {
	"$1" --flush-latency="$4" --log=/dev/null "$2" "$3" &
	recpid=$!
	for _ in $(seq 500); do [[ -e $3/ctl ]] && return 0; sleep 0.01; done
	return 1
}

# slow_up WORK FS LATENCY: an FS (ext4, xfs or btrfs) in an image in
# /dev/shm, on a loop device on the recorder with each flush costing
# LATENCY, mounted on WORK/slow; sets slowimg, fuse, loopdev, slowroot and
# recpid for slow_down.  Needs root; on failure prints why and returns 1.
slow_up() {
	local rec=$1/recorder
	[[ $(id -u) == 0 ]] || { echo "needs root"; return 1; }
	build_recorder "$rec" "$1/cc.log" || return 1
	slowimg=$(mktemp /dev/shm/ponywrite-slow.XXXXXX)
	truncate -s 2G "$slowimg"
	case $2 in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$slowimg" ;;
	xfs) mkfs.xfs -q -f -K "$slowimg" ;;
	btrfs) mkfs.btrfs -q -f -K "$slowimg" >/dev/null ;;
	*) echo "no such file system here: $2 (ext4, xfs or btrfs)"; return 1 ;;
	esac
	fuse=$1/fuse slowroot=$1/slow
	mkdir -p "$fuse" "$slowroot"
	start_recorder "$rec" "$slowimg" "$fuse" "$3" || { echo "the recorder did not start"; return 1; }
	loopdev=$(losetup -f --show --direct-io=off "$fuse/disk") &&
	    mount -t "$2" "$loopdev" "$slowroot"
}

# slow_down: undo what slow_up did, whatever part of it was done.
slow_down() {
	if [[ -n ${slowroot:-} ]] && mountpoint -q "$slowroot" 2>/dev/null; then
		umount "$slowroot" 2>/dev/null || umount -l "$slowroot" || true
	fi
	[[ -n ${loopdev:-} ]] && { losetup -d "$loopdev" 2>/dev/null || true; }
	if [[ -n ${fuse:-} ]] && mountpoint -q "$fuse" 2>/dev/null; then
		fusermount3 -u "$fuse" 2>/dev/null || umount -l "$fuse" || true
	fi
	if [[ -n ${recpid:-} ]]; then
		kill "$recpid" 2>/dev/null || true
		wait "$recpid" 2>/dev/null || true
	fi
	[[ -n ${slowimg:-} ]] && rm -f -- "$slowimg"
	slowroot='' loopdev='' fuse='' recpid='' slowimg=''
}

# slow_flushes: the device flushes the recorder has counted so far.
slow_flushes() {
	local f
	read -r _ _ _ _ _ f _ <"$fuse/ctl"
	echo "$f"
}

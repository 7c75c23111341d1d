# shellcheck shell=bash
# Part 2: real faults, no strace (sourced by run).  Each is one case:
#
#   ulimit-f     RLIMIT_FSIZE (EFBIG), input from a pipe and from -i FILE;
#                ponywrite must fail cleanly, not die of SIGXFSZ
#   full-ext4    a loop-mounted ext4 that is full (ENOSPC), pipe and -i
#   inodes-ext4  an ext4 with no free inode: the temporary file cannot be
#                created (ENOSPC)
#   ro-mount     a read-only mount (EROFS)
#   abort-ro     ext4 turned read-only mid-way (`mount -o remount,abort`,
#                as errors=remount-ro does) while ponywrite copies from a
#                FIFO we control (EROFS); the temporary file cannot be
#                removed from a read-only file system: ponywrite must name
#                it in a message
#   shutdown     ext4 shut down mid-way (the XFS_IOC_GOINGDOWN ioctl, via
#                xfs_io): every later call fails with EIO; checked again
#                after unmount and journal recovery
#   disk-eio     an ext4 (no journal, errors=continue) on a loop device
#                whose backing file sits on a file system that was shut
#                down: the "disk" returns EIO, the data flush fails
#   wb-enospc    an ext4 on a sparse loop file on a full tmpfs: writes
#                land in the page cache, the write-back (fdatasync) fails
#   read-eio     -i SOURCE on a shut-down file system (EIO reading input)
#
# Each checks: the expected exit status (1), a message "ponywrite: PATH:
# reason" with the expected reason, the target untouched, no hidden file
# left in its directory.  All but ulimit-f need root and loop devices.

RF_MOUNTS=()
RF_LOOPS=()

realfs_cleanup() {
	local i
	for ((i = ${#RF_MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${RF_MOUNTS[$i]}" 2>/dev/null || umount -l "${RF_MOUNTS[$i]}" 2>/dev/null
	done
	RF_MOUNTS=()
	for i in "${RF_LOOPS[@]}"; do
		losetup -d "$i" 2>/dev/null
	done
	RF_LOOPS=()
}

# rf_ext4 NAME SIZE [MOUNT-OPTIONS [MKFS-OPTIONS...]]: a fresh ext4 on a
# loop device, mounted on $RF/NAME (RF_MNT), with a directory d in it.
rf_ext4() {
	local name=$1 size=$2 mopts=${3:-} img loop
	shift 3 2>/dev/null || shift $#
	img=${RF_IMGDIR:-$RF}/$name.img
	RF_MNT=$RF/$name
	mkdir -p "$RF_MNT"
	rm -f "$img"
	truncate -s "$size" "$img" &&
	    mkfs.ext4 -q -F "$@" "$img" >/dev/null 2>&1 &&
	    loop=$(losetup -f --show "$img") || return 1
	RF_LOOPS+=("$loop")
	mount ${mopts:+-o "$mopts"} "$loop" "$RF_MNT" || return 1
	RF_MOUNTS+=("$RF_MNT")
	mkdir "$RF_MNT/d"
}

# rf_umount MNT: unmounts MNT (and forgets it).
rf_umount() {
	local i
	umount "$1" || return 1
	for i in "${!RF_MOUNTS[@]}"; do
		[ "${RF_MOUNTS[$i]}" = "$1" ] && unset 'RF_MOUNTS[i]'
	done
	RF_MOUNTS=("${RF_MOUNTS[@]}")
}

# rf_target DIR: an old target DIR/t, made durable; sets RF_PRE.
rf_target() {
	head -c 3000 "$WORK/data/old" >"$1/t"
	chmod 640 "$1/t"
	sync -f "$1/t" 2>/dev/null || sync
	RF_PRE=$(state "$1/t")
}

# rf_verdict NAME ERRNO RC ERRFILE DIR PATHS [litter-ok]: records the case.
rf_verdict() {
	local name=$1 err=$2 rc=$3 errfile=$4 dir=$5 paths=$6 litterok=${7:-}
	local why='' litter now
	litter=$(find "$dir" -maxdepth 1 -name '.?*' -printf '%f ' 2>/dev/null)
	now=$(state "$dir/t" 2>/dev/null)
	[ "$rc" = 1 ] || why="$why exit $rc (wanted 1);"
	[ "$now" = "$RF_PRE" ] || why="$why target changed;"
	if [ -n "$litter" ]; then
		if [ -n "$litterok" ]; then
			# It cannot be removed there, but it must be named.
			for f in $litter; do
				grep -qF "cannot remove the temporary file $f:" "$errfile" ||
				    why="$why $f left and not named;"
			done
			RF_INFO="$RF_INFO (left $litter: cannot be removed there, named)"
		else
			why="$why litter: $litter;"
		fi
	fi
	has_message "$errfile" "$paths" "$(errtext "$err")" ||
	    why="$why message: $(firstline "$errfile");"
	why=${why# }
	if [ -z "$why" ]; then
		result PASS "real:$name" "$err" "real" "ok${RF_INFO:-}"
	else
		result FAIL "real:$name" "$err" "real" "${why% ;}${RF_INFO:-}; stderr: $(firstline "$errfile")"
	fi
	RF_INFO=
}

# rf_fill FILE: writes zeros to FILE until its file system is full.
rf_fill() {
	dd if=/dev/zero of="$1" bs=64k >/dev/null 2>&1
	dd if=/dev/zero of="$1.small" bs=1k >/dev/null 2>&1
	sync -f "$1" 2>/dev/null || sync
}

# rf_pipe DIR TARGET: cat data/mega | ponywrite TARGET, in DIR; stderr in
# DIR.err; returns ponywrite's status.
rf_pipe() {
	(cd "$1" && cat -- "$WORK/data/mega" | "$PONYWRITE" "$2"; exit "${PIPESTATUS[1]}") 2>"$1.err"
}

rf_ulimit() {
	local how=$1 dir=$RF/ulimit.$1 rc
	mkdir -p "$dir"
	rf_target "$dir"
	if [ "$how" = pipe ]; then
		(ulimit -f 16; cd "$dir" && head -c 100000 "$WORK/data/big" |
		    "$PONYWRITE" t) 2>"$dir.err"
	else
		(ulimit -f 16; cd "$dir" && "$PONYWRITE" -i "$WORK/data/big" t) 2>"$dir.err"
	fi
	rc=$?
	[ "$rc" = 153 ] && RF_INFO=" (killed by SIGXFSZ)"
	rf_verdict "ulimit-f-$how" EFBIG "$rc" "$dir.err" "$dir" "t $WORK/data/big"
}

rf_full() {
	local how=$1 rc
	rf_ext4 "full-$how" 8M "" -b 1024 || { rf_setup_failed "full-ext4-$how" ENOSPC; return; }
	rf_target "$RF_MNT/d"
	rf_fill "$RF_MNT/fill"
	if [ "$how" = pipe ]; then
		rf_pipe "$RF_MNT" d/t
	else
		(cd "$RF_MNT" && "$PONYWRITE" -i "$WORK/data/mega" d/t) 2>"$RF_MNT.err"
	fi
	rc=$?
	rf_verdict "full-ext4-$how" ENOSPC "$rc" "$RF_MNT.err" "$RF_MNT/d" "d/t d"
}

rf_inodes() {
	local rc i=0
	rf_ext4 inodes 8M "" -N 16 || { rf_setup_failed inodes-ext4 ENOSPC; return; }
	rf_target "$RF_MNT/d"
	while [ $i -lt 100 ] && : 2>/dev/null >"$RF_MNT/f$i"; do
		i=$((i + 1))
	done
	(cd "$RF_MNT" && printf 'new\n' | "$PONYWRITE" d/t) 2>"$RF_MNT.err"
	rc=$?
	rf_verdict inodes-ext4 ENOSPC "$rc" "$RF_MNT.err" "$RF_MNT/d" "d/t d"
}

rf_ro() {
	local rc
	rf_ext4 ro 8M || { rf_setup_failed ro-mount EROFS; return; }
	rf_target "$RF_MNT/d"
	mount -o remount,ro "$RF_MNT" || { rf_setup_failed ro-mount EROFS; return; }
	(cd "$RF_MNT" && printf 'new\n' | "$PONYWRITE" d/t) 2>"$RF_MNT.err"
	rc=$?
	rf_verdict ro-mount EROFS "$rc" "$RF_MNT.err" "$RF_MNT/d" "d/t d"
}

# rf_midway DIR ERRFILE FAULT...: runs ponywrite on DIR/t reading a FIFO;
# once it has copied part of the input, runs FAULT, then feeds the rest.
# Sets RF_RC.
rf_midway() {
	local dir=$1 errfile=$2 fifo=$RF/fifo pid w n=0
	shift 2
	rm -f "$fifo"
	mkfifo "$fifo"
	"$PONYWRITE" "$dir/t" <"$fifo" 2>"$errfile" &
	pid=$!
	exec {w}>"$fifo"
	# More than a pipe holds: when this returns, ponywrite has the rest.
	head -c 200000 "$WORK/data/big" >&"$w"
	until find "$dir" -maxdepth 1 -name '.t.*' -size +100k | grep -q . || [ $n -ge 100 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	"$@"
	(trap '' PIPE; cat "$WORK/data/big" >&"$w") 2>/dev/null
	exec {w}>&-
	wait "$pid"
	RF_RC=$?
}

rf_abort() {
	rf_ext4 abort 16M "errors=remount-ro" || { rf_setup_failed abort-ro EROFS; return; }
	rf_target "$RF_MNT/d"
	rf_midway "$RF_MNT/d" "$RF/abort.err" mount -o remount,abort "$RF_MNT"
	rf_verdict abort-ro EROFS "$RF_RC" "$RF/abort.err" "$RF_MNT/d" "$RF_MNT/d/t $RF_MNT/d" litter-ok
}

rf_shutdown() {
	local now
	command -v xfs_io >/dev/null 2>&1 || { note "shutdown: no xfs_io"; return; }
	rf_ext4 shutdown 16M || { rf_setup_failed shutdown EIO; return; }
	rf_target "$RF_MNT/d"
	rf_midway "$RF_MNT/d" "$RF/shutdown.err" xfs_io -x -c shutdown "$RF_MNT"
	# The file system answers EIO to everything now: look again after
	# unmounting and recovering the journal.
	if rf_umount "$RF_MNT" && mount "${RF_LOOPS[-1]}" "$RF_MNT"; then
		RF_MOUNTS+=("$RF_MNT")
		now=$(find "$RF_MNT/d" -maxdepth 1 -name '.?*' -printf '%f ')
		[ -z "$now" ] || RF_INFO=" (after recovery: $now, whose removal never reached the disk)"
		rm -f "$RF_MNT"/d/.?*
		# Only the content survives a remount (mtime and inode do).
		rf_verdict shutdown EIO "$RF_RC" "$RF/shutdown.err" "$RF_MNT/d" "$RF_MNT/d/t $RF_MNT/d"
	else
		result FAIL real:shutdown EIO real "cannot remount after shutdown"
	fi
}

rf_disk_eio() {
	local outer rc inner
	command -v xfs_io >/dev/null 2>&1 || { note "disk-eio: no xfs_io"; return; }
	rf_ext4 outer 64M || { rf_setup_failed disk-eio EIO; return; }
	outer=$RF_MNT
	truncate -s 24M "$outer/inner.img"
	if ! mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=0 "$outer/inner.img" >/dev/null 2>&1 ||
	    ! inner=$(losetup -f --show "$outer/inner.img"); then
		rf_setup_failed disk-eio EIO
		return
	fi
	RF_LOOPS+=("$inner")
	RF_MNT=$RF/inner
	mkdir -p "$RF_MNT"
	mount -o errors=continue "$inner" "$RF_MNT" || { rf_setup_failed disk-eio EIO; return; }
	RF_MOUNTS+=("$RF_MNT")
	mkdir "$RF_MNT/d"
	rf_target "$RF_MNT/d"
	# Warm the caches the creation of a file needs, then break the disk.
	: >"$RF_MNT/d/warm"
	rm "$RF_MNT/d/warm"
	sync
	xfs_io -x -c shutdown "$outer"
	rf_pipe "$RF_MNT" d/t
	rc=$?
	rf_verdict disk-eio EIO "$rc" "$RF_MNT.err" "$RF_MNT/d" "d/t d"
}

rf_wb_enospc() {
	local tm=$RF/tm rc bs
	mkdir -p "$tm"
	mount -t tmpfs -o size=80M tmpfs "$tm" || { rf_setup_failed wb-enospc ENOSPC; return; }
	RF_MOUNTS+=("$tm")
	RF_IMGDIR=$tm rf_ext4 wb 64M || { rf_setup_failed wb-enospc ENOSPC; return; }
	rf_target "$RF_MNT/d"
	# Every block of the image is backed by tmpfs memory except the free
	# ones (mkfs leaves holes: fill them all, then punch the free blocks);
	# then the tmpfs is filled.  Metadata and journal writes still work,
	# data written to new blocks fails on its way to the "disk".
	fallocate -l 64M "$tm/wb.img"
	bs=$(dumpe2fs -h "${RF_LOOPS[-1]}" 2>/dev/null | awk -F: '/^Block size/ { print $2 + 0 }')
	dumpe2fs "${RF_LOOPS[-1]}" 2>/dev/null | sed -n 's/^  Free blocks: //p' | tr ',' '\n' |
	    while read -r r; do
		[ -n "$r" ] || continue
		fallocate -p -o $((${r%-*} * bs)) -l $(((${r#*-} - ${r%-*} + 1) * bs)) "$tm/wb.img"
	    done
	rf_fill "$tm/fill"
	rf_pipe "$RF_MNT" d/t
	rc=$?
	rf_verdict wb-enospc ENOSPC "$rc" "$RF_MNT.err" "$RF_MNT/d" "d/t d"
}

rf_read_eio() {
	local dir=$RF/readeio rc
	command -v xfs_io >/dev/null 2>&1 || { note "read-eio: no xfs_io"; return; }
	rf_ext4 src 16M || { rf_setup_failed read-eio EIO; return; }
	cp "$WORK/data/big" "$RF_MNT/d/src"
	sync
	xfs_io -x -c shutdown "$RF_MNT"
	mkdir -p "$dir"
	rf_target "$dir"
	(cd "$dir" && "$PONYWRITE" -i "$RF_MNT/d/src" t) 2>"$dir.err"
	rc=$?
	rf_verdict read-eio EIO "$rc" "$dir.err" "$dir" "$RF_MNT/d/src"
}

rf_setup_failed() {
	result FAIL "real:$1" "$2" real "could not set up the file system (see above)"
}

realfs_all() {
	RF=$WORK/rf
	RF_INFO=
	mkdir -p "$RF"
	[ -d "$WORK/data" ] || make_data
	[ -f "$WORK/data/mega" ] || cat "$WORK/data/big" "$WORK/data/big" "$WORK/data/big" \
	    "$WORK/data/big" >"$WORK/data/mega"
	rf_ulimit pipe
	rf_ulimit file
	if [ "$(id -u)" != 0 ]; then
		note "real faults on loop-mounted file systems: not root"
		return 0
	fi
	if ! command -v mkfs.ext4 >/dev/null 2>&1 || ! command -v losetup >/dev/null 2>&1; then
		note "real faults on loop-mounted file systems: no mkfs.ext4 or losetup"
		return 0
	fi
	if ! rf_ext4 probe 8M; then
		note "real faults on loop-mounted file systems: cannot mount a loop device here"
		realfs_cleanup
		return 0
	fi
	rf_full pipe
	rf_full file
	rf_inodes
	rf_ro
	rf_abort
	rf_shutdown
	rf_disk_eio
	rf_wb_enospc
	rf_read_eio
	realfs_cleanup
	note "EDQUOT: no real quota test (strace injection only)"
}

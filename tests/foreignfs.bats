#!/usr/bin/env bats
# File systems a user meets beyond ext4, XFS and btrfs, served here by their
# FUSE servers: NTFS (ntfs-3g) keeps no Unix modes and takes only valid
# UTF-8 names; fuse-overlayfs (rootless podman) allows 251-byte names.

load helpers

# mount_ntfs DIR [SERVER [OPTIONS]]: a fresh NTFS image on DIR through
# ntfs-3g (or SERVER: lowntfs-3g, which ignores case with -o ignore_case,
# as Windows does).  Root only.
mount_ntfs()
{
	require_root
	require_cmd mkntfs "${2:-ntfs-3g}"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	local img="$BATS_TEST_TMPDIR/ntfs.img"
	truncate -s 64M "$img"
	mkntfs -q -F -f "$img" >/dev/null 2>&1 || skip "mkntfs failed"
	mkdir -p "$1"
	"${2:-ntfs-3g}" ${3:+-o "$3"} "$img" "$1" 2>/dev/null ||
	    skip "${2:-ntfs-3g} cannot mount"
	PW_MOUNTS+=("$(cd "$1" && pwd -P)")
}

# 82 three-byte characters and "ab": 248 bytes.
LONG=$(printf '日%.0s' {1..82})ab

# new_files_on DIR: every form that creates a file makes one on DIR, with
# the mode the file system gives (as >), and an existing file is replaced.
new_files_on()
{
	local m=$1 want
	echo shell > "$m/by-shell"
	want=$(stat -c %a "$m/by-shell")
	run --separate-stderr "$PONYWRITE" "$m/new" < <(echo new)
	assert_status 0
	assert_content "$m/new" $'new\n'
	[ "$(stat -c %a "$m/new")" = "$want" ] || fail "mode $(stat -c %a "$m/new"), > gives $want"
	# And through the forms that create files: -p, -t, --batch, -l, -a, -b.
	echo src > src
	run --separate-stderr "$PONYWRITE" -p "$m/a/b/c" < <(echo c)
	assert_status 0
	run --separate-stderr "$PONYWRITE" -t "$m/a" src
	assert_status 0
	printf '%s\0' "$m/batched" src > list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 0
	run --separate-stderr "$PONYWRITE" -l "$m/locked" < <(echo l)
	assert_status 0
	run --separate-stderr "$PONYWRITE" -a "$m/appended" < <(echo a)
	assert_status 0
	run --separate-stderr "$PONYWRITE" -b "$m/backed" < <(echo b)
	assert_status 0
	assert_content "$m/a/b/c" $'c\n'
	assert_content "$m/a/src" $'src\n'
	assert_content "$m/batched" $'src\n'
	assert_content "$m/locked" $'l\n'
	assert_content "$m/appended" $'a\n'
	assert_content "$m/backed" $'b\n'
	[ ! -e "$m/backed~" ] || fail "a backup of nothing was made"
	# An existing file keeps what it has.
	run --separate-stderr "$PONYWRITE" "$m/new" < <(echo newer)
	assert_status 0
	assert_content "$m/new" $'newer\n'
	assert_no_litter "$m"
}

@test "NTFS: a new file gets the mode the file system gives, as with >, by every form" {
	mount_ntfs m
	new_files_on m
}

@test "exFAT: a new file gets the mode the file system gives, as with >, by every form" {
	mount_exfat m
	new_files_on m
}

# Issue 56: fusefat has no chmod or chown (ENOSYS): every replace failed
# "cannot set owner and group: Function not implemented", though the file
# had the only mode and owner that mount gives.
@test "FAT through fusefat (no chmod, no chown): replaced and created by every form, as cp does; a mode, owner or group it cannot give fails, naming it" {
	mount_fusefat m
	new_files_on m
	echo old > m/t
	snapshot m/t
	run --separate-stderr "$PONYWRITE" -m 0644 m/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: m/t: cannot set mode 0644: this file system (fuse.fusefat) made it 0700; it does not keep Unix modes"
	run --separate-stderr "$PONYWRITE" -o 1 m/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: m/t: cannot set owner 1: this file system (fuse.fusefat) gives every file 0:0; it does not keep Unix owners"
	run --separate-stderr "$PONYWRITE" -g 1 m/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: m/t: cannot set group 1: this file system (fuse.fusefat) gives every file 0:0; it does not keep Unix owners"
	assert_untouched m/t
	# what it gives, asked for, is no failure
	run --separate-stderr "$PONYWRITE" -m 0700 -o 0 -g 0 m/t < <(echo new)
	assert_status 0
	assert_content m/t $'new\n'
	assert_no_litter m
}

@test "NTFS: -m that the file system cannot keep fails, naming the file system" {
	mount_ntfs m
	run --separate-stderr "$PONYWRITE" -m 0644 m/new < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: m/new: cannot set mode 0644: this file system (fuse) made it 0777; it does not keep Unix modes"
	[ ! -e m/new ] || fail "m/new was created"
	assert_no_litter m
}

@test "NTFS: a long UTF-8 name: the temporary name is cut between characters" {
	mount_ntfs m
	run --separate-stderr "$PONYWRITE" "m/$LONG" < <(echo one)
	assert_status 0
	assert_content "m/$LONG" $'one\n'
	run --separate-stderr "$PONYWRITE" -b "m/$LONG" < <(echo two)
	assert_status 0
	assert_content "m/$LONG" $'two\n'
	assert_content "m/$LONG~" $'one\n'
	assert_no_litter m
}

@test "fuse-overlayfs (NAME_MAX 251): a 248-byte name fits, with its temporary name" {
	mount_fuse_overlayfs m
	[ "$(getconf NAME_MAX m)" -lt 255 ] || skip "NAME_MAX here is $(getconf NAME_MAX m)"
	run --separate-stderr "$PONYWRITE" "m/$LONG" < <(echo one)
	assert_status 0
	assert_content "m/$LONG" $'one\n'
	local ascii
	ascii=$(printf 'x%.0s' {1..250})
	run --separate-stderr "$PONYWRITE" "m/$ascii" < <(echo two)
	assert_status 0
	assert_content "m/$ascii" $'two\n'
	assert_no_litter m
}

@test "fuse-overlayfs (NAME_MAX 251): a longer new name is refused before anything is written, by --check too" {
	# Issue 54, item 4: on 3a292d9 --check said create and a batch
	# stopped with exit 4 after replacing the other target.
	mount_fuse_overlayfs m
	[ "$(getconf NAME_MAX m)" -lt 255 ] || skip "NAME_MAX here is $(getconf NAME_MAX m)"
	local long
	long=$(printf 'x%.0s' {1..253})
	echo old > m/b
	snapshot m/b
	run --separate-stderr "$PONYWRITE" --check "m/$long" < /dev/null
	assert_status 1
	assert_stderr "ponywrite: m/$long: File name too long"
	printf '%s\0' m/b /etc/hostname "m/$long" /etc/hostname > list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 1
	assert_stderr "ponywrite: m/$long: File name too long
ponywrite: nothing replaced: 1 of 2 targets failed"
	assert_untouched m/b
	assert_no_litter m
	# A directory -p would make, so named: --check says what the run
	# says (it said create, the run 1).
	local t
	for t in "q/$long/a" "q/r/$long/s/a"; do
		run --separate-stderr "$PONYWRITE" --check -p "m/$t" < /dev/null
		assert_status 1
		local said=$stderr
		run --separate-stderr "$PONYWRITE" -p "m/$t" < <(echo new)
		assert_status 1
		[ "$said" = "$stderr" ] || fail "--check: $said; the run: $stderr"
		assert_stderr_has "$long in m/q"
		rm -rf m/q
	done
	# ".." out of the mount: the name is made where it may be that long
	# (review: --check said 1, the run 0)
	echo s > s
	run --separate-stderr "$PONYWRITE" --check -p -i s "m/n/../../$long/a"
	assert_status 0
	run --separate-stderr "$PONYWRITE" -p -i s "m/n/../../$long/a"
	assert_status 0
	assert_content "$long/a" $'s\n'
}

@test "the lock file's name fits the directory's NAME_MAX (fuse-overlayfs) and UTF-8 (exFAT)" {
	# Issue 54, item 5: "File name too long" and EILSEQ on 3a292d9.
	mount_fuse_overlayfs m
	[ "$(getconf NAME_MAX m)" -lt 255 ] || skip "NAME_MAX here is $(getconf NAME_MAX m)"
	local y e
	y=$(printf 'y%.0s' {1..239})
	run --separate-stderr "$PONYWRITE" -l "m/$y" < <(echo l)
	assert_status 0
	assert_content "m/$y" $'l\n'
	run --separate-stderr "$PONYWRITE" -a "m/$y.a" < <(echo a)
	assert_status 0
	assert_content "m/$y.a" $'a\n'
	assert_no_litter m
	mount_exfat x
	e=$(printf '\303\251%.0s' {1..120})
	run --separate-stderr "$PONYWRITE" -l "x/$e" < <(echo l)
	assert_status 0
	assert_content "x/$e" $'l\n'
	run --separate-stderr "$PONYWRITE" -a "x/$e" < <(echo a)
	assert_status 0
	assert_content "x/$e" $'l\na\n'
	assert_no_litter x
}

@test "exFAT: two names that differ only in case are one target (exit 2, nothing written)" {
	mount_exfat m
	mkdir m/d
	echo one > README
	echo two > lower
	printf '%s\0' m/d/README README m/d/readme lower > list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 2
	assert_stderr "ponywrite: m/d/readme: the same file as m/d/README on this file system, which ignores case; each target can be given once"
	[ -z "$(ls -A m/d)" ] || fail "m/d holds: $(ls -A m/d)"
	# An existing one too, with -t.
	echo old > m/d/README
	mkdir s && echo A > s/README && echo B > s/readme
	snapshot m/d/README
	run --separate-stderr "$PONYWRITE" -t m/d s/README s/readme
	assert_status 2
	assert_untouched m/d/README
	assert_no_litter m
}

@test "exFAT: --check finds two names that differ only in case, as the run does (exit 2)" {
	mount_exfat m
	mkdir m/d m/e
	echo one > README
	echo two > lower
	# Names that exist tell; so does, in an empty directory, its own name.
	echo old > m/d/README
	for d in d e; do
		printf '%s\0' m/$d/README README m/$d/readme lower > list
		run --separate-stderr "$PONYWRITE" --check --batch=list
		assert_status 2
		assert_stderr "ponywrite: m/$d/readme: the same file as m/$d/README on this file system, which ignores case; each target can be given once"
	done
}

@test "exFAT: D/a and d/a are one file (exfat-fuse gives D and d two inode numbers): exit 2, by --check too" {
	# Found by review: on c9d7ff2 both were "replaced", one content lost.
	mount_exfat m
	mkdir m/D
	echo old > m/D/a
	echo one > s1
	echo two > s2
	snapshot m/D/a
	printf '%s\0' m/D/a s1 m/d/a s2 > list
	local msg="ponywrite: m/d/a: the same file as m/D/a on this file system, which ignores case; each target can be given once"
	run --separate-stderr "$PONYWRITE" --check --batch=list
	assert_status 2
	assert_stderr "$msg"
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 2
	assert_stderr "$msg"
	assert_untouched m/D/a
	assert_no_litter m
	# However the directory is spelled (review: ./d/a, d//a and a link to
	# d were not found on the commit before).
	ln -s "$PWD/m/d" link
	local other
	for other in ./m/d/a m/d//a "$PWD/m/d/A" link/a; do
		printf '%s\0' m/D/a s1 "$other" s2 > list
		run --separate-stderr "$PONYWRITE" --check --batch=list
		assert_status 2
		run --separate-stderr "$PONYWRITE" --batch=list
		assert_status 2
		assert_untouched m/D/a
	done
	assert_no_litter m
	# Other names there, and a in another directory, are two files.
	mkdir m/E
	printf '%s\0' m/D/a s1 m/d/b s2 m/E/a s2 > list
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 0
	assert_content m/D/a $'one\n'
	assert_content m/D/b $'two\n'
	assert_content m/E/a $'two\n'
}

@test "ext4: D/a and d/a are two files" {
	mount_fs ext4 m -F
	mkdir m/D m/d
	echo one > s1
	echo two > s2
	printf '%s\0' m/D/a s1 m/d/a s2 > list
	run --separate-stderr "$PONYWRITE" --check --batch=list
	assert_status 0
	run --separate-stderr "$PONYWRITE" --batch=list
	assert_status 0
	assert_content m/D/a $'one\n'
	assert_content m/d/a $'two\n'
}

@test "NTFS ignoring case: -b refuses a target that is another's backup name in other letters (exit 2, nothing written)" {
	# Issue 54, item 1: exit 0 on 3a292d9, and A~'s new content lost.
	mount_ntfs m lowntfs-3g ignore_case
	mkdir m/M
	echo olda > m/M/a
	echo oldA > m/M/A~
	echo srcAb > srcAb
	echo srca > srca
	snapshot m/M/a m/M/A~
	printf '%s\0' m/M/A~ srcAb m/M/a srca > list
	local msg="ponywrite: m/M/A~: is also the backup name of m/M/a (-b) on this file system, which ignores case; a target cannot be another target's backup"
	run --separate-stderr "$PONYWRITE" --check -b --batch=list
	assert_status 2
	assert_stderr "$msg"
	run --separate-stderr "$PONYWRITE" -b --batch=list
	assert_status 2
	assert_stderr "$msg"
	assert_untouched m/M/a m/M/A~
	assert_no_litter m
	# A~ new: a's backup would still be the same file.
	rm m/M/A~
	run --separate-stderr "$PONYWRITE" -b --batch=list
	assert_status 2
	assert_stderr "$msg"
	[ "$(ls -A m/M)" = a ] || fail "m/M holds: $(ls -A m/M)"
	assert_untouched m/M/a
	# Without -b they are two files' names... of one file: given twice.
	run --separate-stderr "$PONYWRITE" --batch=- < <(printf '%s\0' m/M/A srcAb m/M/a srca)
	assert_status 2
	assert_untouched m/M/a
	assert_no_litter m
}

@test "NTFS keeping case: -b with a target named as another's backup in other letters replaces both" {
	mount_ntfs m
	echo olda > m/a
	echo oldA > m/A~
	echo srcAb > srcAb
	echo srca > srca
	printf '%s\0' m/A~ srcAb m/a srca > list
	run --separate-stderr "$PONYWRITE" --check -b --batch=list
	assert_status 0
	run --separate-stderr "$PONYWRITE" -b --batch=list
	assert_status 0
	assert_content m/A~ $'srcAb\n'
	assert_content m/a $'srca\n'
	assert_content m/a~ $'olda\n'
	assert_content m/A~~ $'oldA\n'
}

@test "ext4: names that differ only in case are two targets" {
	mount_fs ext4 m -F
	mkdir s && echo A > s/README && echo B > s/readme
	run --separate-stderr "$PONYWRITE" -t m s/README s/readme
	assert_status 0
	assert_content m/README $'A\n'
	assert_content m/readme $'B\n'
}

@test "exFAT: -b says that it needs a hard link the file system does not have" {
	mount_exfat m
	echo old > m/t
	snapshot m/t
	run --separate-stderr "$PONYWRITE" -b m/t < <(echo new)
	assert_status 1
	assert_stderr "ponywrite: m/t: cannot make backup: -b needs a hard link to the old file, which this file system (fuseblk) refused: Operation not permitted"
	assert_untouched m/t
	assert_no_litter m
	# Found before anything is written: a command does not run.
	run --separate-stderr "$PONYWRITE" -b m/t sh -c 'echo ran > ran; echo new'
	assert_status 125
	assert_stderr "ponywrite: m/t: cannot make backup: -b needs a hard link to the old file, which this file system (fuseblk) refused: Operation not permitted; target not replaced"
	[ ! -e ran ] || fail "the command ran"
	assert_untouched m/t
	assert_no_litter m
	# Without -b the replace works there.
	run --separate-stderr "$PONYWRITE" m/t < <(echo new)
	assert_status 0
	assert_content m/t $'new\n'
}

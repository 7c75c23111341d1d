#!/usr/bin/env bats
# Edges of the many-files forms (-t DIRECTORY SOURCE... and --batch=LIST):
# directories told apart by device as well as inode, -C with targets outside
# the current directory, a close(2) error on a temporary file, --print-changed
# with a standard output that cannot be written, a -b backup that cannot be
# renamed into place, a list that cannot be read (a directory, EIO part-way),
# --batch=- on a terminal, -t with an empty directory name, -C after a
# target the user cannot read, and -C whose unchanged target cannot be
# flushed.  Errors are injected with strace; the calls to inject are found by
# a first traced run.

# Single quotes keep the words of bash -c and sh -c literal on purpose;
# $stderr is set by bats' run --separate-stderr.
# shellcheck disable=SC2016,SC2154

load helpers
load features_helpers

# old content in d/a d/b d/c, new content in s/a s/b s/c
three()
{
	mkdir -p d s
	local f
	for f in a b c; do
		printf 'old %s\n' "$f" > "d/$f"
		printf 'new %s\n' "$f" > "s/$f"
	done
}

# A NUL-separated list of TARGET SOURCE pairs, from the arguments.
pairs()
{
	printf '%s\0' "$@"
}

@test "--batch: directories on two file systems with the same inode number each get their own targets" {
	mount_ext4 m1 8
	mount_ext4 m2 8
	# Two fresh ext4 roots: inode 2 both, told apart only by the device.
	[ "$(inode m1)" = "$(inode m2)" ] ||
	    fail "the roots have inodes $(inode m1) and $(inode m2): this proves nothing"
	[ "$(stat -c %d m1)" != "$(stat -c %d m2)" ] || fail "m1 and m2 are one file system"
	echo old1 > m1/x
	echo old2 > m2/x
	printf 'one\n' > s1
	printf 'two\n' > s2
	run --separate-stderr "$PONYWRITE" -v --batch=<(pairs m1/x s1 m2/x s2 m2/y s1 m1/y s2)
	assert_status 0
	assert_stderr "ponywrite: m1/x: replaced
ponywrite: m2/x: replaced
ponywrite: m2/y: created
ponywrite: m1/y: created"
	assert_content m1/x $'one\n'
	assert_content m2/x $'two\n'
	assert_content m2/y $'one\n'
	assert_content m1/y $'two\n'
	[ "$(listing m1)" = "$(printf 'lost+found\nx\ny')" ] || fail "m1 holds: $(listing m1)"
	[ "$(listing m2)" = "$(printf 'lost+found\nx\ny')" ] || fail "m2 holds: $(listing m2)"
	assert_no_litter
}

# Whether the old file could be read is the target's own: a user's -C batch
# after a target it cannot read (0200, written through an O_PATH descriptor)
# still compares the next ones.
@test "-C in a batch after a target the user cannot read (0200): the unchanged ones after it keep their inode and mtime" {
	mkdir d s
	printf 'old a\n' > d/a
	chmod 0200 d/a
	printf 'same b\n' > d/b
	printf 'same c\n' > d/c
	printf 'new a\n' > s/a
	printf 'same b\n' > s/b
	printf 'same c\n' > s/c
	touch -d '2020-01-01 00:00' d/b d/c
	unpriv_setup
	snapshot d/b d/c
	local ib ic
	ib=$(inode d/b) ic=$(inode d/c)
	run --separate-stderr unpriv "$PONYWRITE" -C --print-changed -t d s/a s/b s/c
	assert_status 0
	[ "$output" = d/a ] || fail "stdout: $output"
	[ -z "$stderr" ] || fail "stderr: $stderr"
	[ "$(inode d/b)" = "$ib" ] && [ "$(inode d/c)" = "$ic" ] ||
	    fail "an unchanged target after the unreadable one was replaced"
	assert_untouched d/b d/c
	[ "$(stat -c %Y d/b)" = "$(date -d '2020-01-01 00:00' +%s)" ] || fail "d/b's mtime changed"
	assert_mode d/a 0200
	assert_no_litter d
}

@test "-C in a batch with targets outside the current directory: unchanged ones keep their inode, no temporary file anywhere" {
	mkdir -p top/sub/dir top/src other
	cd top
	echo same > sub/dir/same
	echo same > ../other/same
	echo old > sub/dir/changed
	echo old > ../other/changed
	echo same > src/same
	echo new > src/changed
	snapshot sub/dir/same ../other/same
	local i1 i2
	i1=$(inode sub/dir/changed)
	i2=$(inode ../other/changed)
	run --separate-stderr "$PONYWRITE" -C --print-changed -v --batch=<(pairs \
	    sub/dir/same src/same ../other/same src/same \
	    sub/dir/changed src/changed ../other/changed src/changed)
	assert_status 0
	[ "$output" = $'sub/dir/changed\n../other/changed' ] || fail "stdout: $output"
	assert_stderr "ponywrite: sub/dir/same: unchanged
ponywrite: ../other/same: unchanged
ponywrite: sub/dir/changed: replaced
ponywrite: ../other/changed: replaced"
	assert_untouched sub/dir/same ../other/same
	assert_content sub/dir/changed $'new\n'
	assert_content ../other/changed $'new\n'
	[ "$(inode sub/dir/changed)" != "$i1" ] || fail "sub/dir/changed rewritten in place"
	[ "$(inode ../other/changed)" != "$i2" ] || fail "../other/changed rewritten in place"
	[ "$(listing sub/dir)" = "$(printf 'changed\nsame')" ] || fail "sub/dir holds: $(listing sub/dir)"
	[ "$(listing ../other)" = "$(printf 'changed\nsame')" ] || fail "../other holds: $(listing ../other)"
	assert_no_litter "$WORK"
	# -t with the directory outside too: all unchanged now, nothing printed.
	snapshot ../other/changed
	run --separate-stderr "$PONYWRITE" -C --print-changed -t ../other src/same src/changed
	assert_status 0
	assert_quiet
	assert_untouched ../other/same ../other/changed
	assert_no_litter "$WORK"
}

# Per file (a kernel before 5.8, faked by setarch), -C flushes an unchanged
# file and its directory; the directory's is made after the renames, with
# theirs.  Its failure is the unchanged target's, not a replaced one's.
@test "-C in a batch: an unchanged target's directory flush fails: said so; exit 1 if nothing was replaced, 3 if something was" {
	require_cmd strace
	require_uname26
	mkdir -p one two s
	echo same > one/a
	echo same > two/b
	cp -p one/a s/a
	cp -p two/b s/b
	snapshot one/a two/b
	local -a inject=(strace -f -qq -o /dev/null -P "$(realpath one)" -e trace=fsync
	    -e inject=fsync:error=EIO setarch --uname-2.6 "$PONYWRITE" -C)
	# -v: after a failure, no line says "unchanged".
	run --separate-stderr "${inject[@]}" -v --batch=<(pairs one/a s/a two/b s/b)
	assert_status 1
	assert_stderr "ponywrite: one: targets unchanged, but cannot flush the directory to disk: $E_EIO"
	assert_untouched one/a two/b
	assert_no_litter
	echo new > s/b
	run --separate-stderr "${inject[@]}" --batch=<(pairs one/a s/a two/b s/b)
	assert_status 3
	assert_stderr_has "ponywrite: one: targets unchanged, but cannot flush the directory to disk: $E_EIO"
	[[ $stderr != *"targets replaced"* ]] || fail "named the replaced targets: $stderr"
	assert_untouched one/a
	assert_content two/b $'new\n'
}

@test "a close() error on a batch's temporary file: exit 1, nothing replaced, no temporary file" {
	require_cmd strace
	local log=$BATS_TEST_TMPDIR/close.log here n
	here=$(pwd -P)
	three
	# A first run finds which close(2) is d/b's temporary file's.
	strace -qq -y -o "$log" -e trace=close "$PONYWRITE" -t d s/a s/b s/c ||
	    fail "the first run failed"
	n=$(grep -nF "<$here/d/.b." "$log" | cut -d: -f1)
	[ -n "$n" ] || fail "no close of a temporary file of d/b: $(cat "$log")"
	[ "$(grep -vc '^close(' "$log")" -eq 0 ] || fail "not only close calls: $(cat "$log")"
	rm -rf d s
	three
	snapshot d/a d/b d/c
	run --separate-stderr strace -qq -y -o "$log" -e trace=close \
	    -e inject=close:error=EIO:when="$n" "$PONYWRITE" -t d s/a s/b s/c
	grep -F "<$here/d/.b." "$log" | grep -q INJECTED ||
	    fail "the error went elsewhere: $(cat "$log")"
	assert_status 1
	assert_stderr "ponywrite: d/b: $E_EIO
ponywrite: nothing replaced: 1 of 3 targets failed"
	assert_untouched d/a d/b d/c
	assert_no_litter
}

@test "--print-changed in a batch to /dev/full, a pipe nobody reads, a closed stdout: replaced, but exit 3" {
	[ -w /dev/full ] || skip "no /dev/full"
	three
	cp d/c s/c
	snapshot d/c
	pairs d/a s/a d/b s/b d/c s/c > list
	local fifo=$BATS_TEST_TMPDIR/fifo how why
	mkfifo "$fifo"
	for how in full pipe closed; do
		printf '%s a\n' "$how" > s/a
		printf '%s b\n' "$how" > s/b
		case $how in
		full)
			why='No space left on device'
			run --separate-stderr bash -c '"$1" -C --print-changed --batch=list > /dev/full' \
			    _ "$PONYWRITE"
			;;
		pipe)
			# Its only reader closed: a write gets EPIPE (and SIGPIPE,
			# at its default action as in a shell pipeline).
			why='Broken pipe'
			run --separate-stderr bash -c 'exec 4<>"$2" 5>"$2" 4<&-
				exec env --default-signal=PIPE "$1" -C --print-changed --batch=list >&5' \
			    _ "$PONYWRITE" "$fifo"
			;;
		closed)
			why='Bad file descriptor'
			run --separate-stderr bash -c '"$1" -C --print-changed --batch=list >&-' \
			    _ "$PONYWRITE"
			;;
		esac
		assert_status 3
		assert_stderr "ponywrite: d/a: replaced, but its name could not be written to stdout: $why
ponywrite: d/b: replaced, but its name could not be written to stdout: $why"
		assert_content d/a "$how a"$'\n'
		assert_content d/b "$how b"$'\n'
		assert_untouched d/c
		assert_no_litter
	done
}

@test "-b in a batch: a backup that cannot be renamed to TARGET~ after the target was replaced gives exit 3, the old file kept under the name given" {
	require_cmd strace
	local log=$BATS_TEST_TMPDIR/rename.log ib hidden line call n
	three
	echo older > 'd/b~'
	# A first run finds the rename of d/b's hidden backup link to b~ (the
	# last target's: nothing comes after it to hide a cleanup that would
	# remove the old file), and how many calls of its kind come first.
	strace -qq -o "$log" -e trace=rename,renameat,renameat2 \
	    "$PONYWRITE" -b -t d s/a s/b || fail "the first run failed"
	line=$(grep -n -E '"\.b~\.[^"/]+", [^"]*"b~"' "$log" | cut -d: -f1)
	[ -n "$line" ] || fail "no rename to b~: $(cat "$log")"
	call=$(sed -n "${line}s/(.*//p" "$log")
	n=$(head -n "$line" "$log" | grep -c "^$call(")
	rm -rf d s
	three
	echo older > 'd/b~'
	snapshot 'd/b~' d/c
	ib=$(inode d/b)
	run --separate-stderr strace -qq -o "$log" -e trace=rename,renameat,renameat2 \
	    -e inject="$call":error=EACCES:when="$n" "$PONYWRITE" -b -t d s/a s/b
	grep -q -E '"\.b~\.[^"/]+", [^"]*"b~"\) = -1 EACCES .*INJECTED' "$log" ||
	    fail "the error went elsewhere: $(cat "$log")"
	assert_status 3
	[[ $stderr =~ ^"ponywrite: d/b: replaced, but the previous version could not be renamed to b~: Permission denied; it is kept as d/"(\.b~\.[^/]{12})$ ]] ||
	    fail "stderr: $stderr"
	hidden=${BASH_REMATCH[1]}
	assert_content d/b $'new b\n'
	assert_content "d/$hidden" $'old b\n'
	[ "$(inode "d/$hidden")" = "$ib" ] || fail "d/$hidden is not the old d/b"
	assert_untouched 'd/b~'
	# The target before it, as usual.
	assert_content d/a $'new a\n'
	assert_content 'd/a~' $'old a\n'
	assert_untouched d/c
	assert_no_litter "$WORK" "$hidden"
}

@test "--batch=LIST that cannot be read (a directory, EIO part-way): exit 1, nothing replaced, never taken for the end of the list" {
	require_cmd strace
	local log=$BATS_TEST_TMPDIR/read.log here first n i slashes
	here=$(pwd -P)
	mkdir listdir s
	run --separate-stderr "$PONYWRITE" --batch=listdir
	assert_status 1
	assert_stderr "ponywrite: listdir: Is a directory"
	# 200 pairs of 1024 bytes each (the source's name padded with
	# slashes), so that a read of a power-of-two size ends between two
	# pairs: a read error taken for the end of the list would be a good
	# list of the pairs read so far.
	echo new > s/src
	slashes=$(printf '%1012s' '' | tr ' ' /)
	for i in $(seq -w 1 200); do
		printf 'd/t%s\0s%ssrc\0' "$i" "$slashes"
	done > list
	[ "$(stat -c %s list)" -eq $((200 * 1024)) ] || fail "list: $(stat -c %s list) bytes"
	# A first run, d missing (every target fails, nothing is made),
	# finds the list's reads among all the read(2) calls.
	run --separate-stderr strace -qq -y -o "$log" -e trace=read "$PONYWRITE" --batch=list
	assert_status 1
	[ "$(grep -vc '^read(' "$log")" -eq 0 ] || fail "not only read calls: $(cat "$log")"
	first=$(grep -F "<$here/list>," "$log" | head -n 1 | sed -E 's/.* = ([0-9]+)$/\1/')
	n=$(grep -nF "<$here/list>," "$log" | sed -n 2p | cut -d: -f1)
	[ -n "$n" ] && [ "$first" -lt $((200 * 1024)) ] ||
	    fail "the list was read at once: $(grep list "$log")"
	[ $((first % 1024)) -eq 0 ] || fail "the first read of $first bytes ends inside a pair"
	mkdir d
	echo old > d/t001
	snapshot d/t001
	run --separate-stderr strace -qq -y -o "$log" -e trace=read \
	    -e inject=read:error=EIO:when="$n" "$PONYWRITE" --batch=list
	grep -F "<$here/list>," "$log" | grep -q INJECTED ||
	    fail "the error went elsewhere: $(grep INJECTED "$log")"
	assert_status 1
	assert_stderr "ponywrite: list: $E_EIO"
	assert_untouched d/t001
	[ "$(listing d)" = t001 ] || fail "d holds: $(listing d | head)"
	assert_no_litter
	# The list on stdin: named as stdin is everywhere else (DIAGNOSTICS).
	run --separate-stderr "$PONYWRITE" --batch=- < listdir
	assert_status 1
	assert_stderr "ponywrite: stdin: Is a directory"
}

@test "--batch=- with a terminal on stdin: refused (exit 2), nothing done" {
	require_cmd python3 timeout
	# pty-run types Ctrl-C once 'ready' exists: only after ponywrite has
	# exited, and the shell ignores it.  A ponywrite that waits on the
	# terminal meets the timeout instead.
	run timeout 30 python3 "$BATS_TEST_DIRNAME/pty-run" sh -c \
	    '"$0" --batch=- -v --print-changed; s=$?; trap "" INT; : > ready; exit $s' \
	    "$PONYWRITE"
	assert_status 2
	[ "$(printf '%s\n' "$output" | tr -d '\r' | head -n 2)" = "ponywrite: --batch=-: stdin is a terminal
Try 'ponywrite --help' for more information." ] || fail "the terminal showed: $output"
	[ "$(listing)" = ready ] || fail "the directory holds: $(listing)"
}

@test "-t '': a usage error, nothing created" {
	local name=ponywrite-batch-edges-t-empty form
	mkdir s
	echo new > "s/$name"
	# Unprivileged, so that a ponywrite that took '' for the root
	# directory cannot write /NAME.
	unpriv_setup
	for form in -t --target-directory; do
		if [ "$form" = -t ]; then
			run --separate-stderr unpriv "$PONYWRITE" -v --print-changed -t '' "s/$name"
		else
			run --separate-stderr unpriv "$PONYWRITE" -v --print-changed --target-directory= "s/$name"
		fi
		assert_status 2
		[ -z "$output" ] || fail "$form: stdout: $output"
		assert_stderr "ponywrite: -t needs a directory name
Try 'ponywrite --help' for more information."
		[ "$(listing)" = s ] || fail "$form: the directory holds: $(listing)"
		[ "$(listing s)" = "$name" ] || fail "$form: s holds: $(listing s)"
	done
	assert_no_litter
}

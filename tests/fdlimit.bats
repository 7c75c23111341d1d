#!/usr/bin/env bats
# A batch over more directories than the descriptor limit allows (issue 23):
# the soft limit is raised as far as the hard one; past it, directories are
# closed and opened again by path, each proven to be the same directory
# (device and inode) before anything is written, renamed or removed in it.

load helpers

# N directories d1..dN, each with an old file f and a source sI; LIST holds
# the pairs dI/f sI, the last one's source being SOURCE_N (default sN).
dirs()
{
	local n=$1 last=${2:-} i
	: > list
	for ((i = 1; i <= n; i++)); do
		mkdir "d$i"
		echo old > "d$i/f"
		echo "new $i" > "s$i"
		if ((i == n)) && [ -n "$last" ]; then
			printf 'd%s/f\0%s\0' "$i" "$last" >> list
		else
			printf 'd%s/f\0s%s\0' "$i" "$i" >> list
		fi
	done
}

assert_all()
{
	local n=$1 what=$2 i
	for ((i = 1; i <= n; i++)); do
		if [ "$what" = new ]; then
			assert_content "d$i/f" "new $i"$'\n'
		else
			assert_content "d$i/f" $'old\n'
		fi
	done
}

@test "80 directories under a hard limit of 64 descriptors: every target replaced" {
	dirs 80
	run --separate-stderr prlimit --nofile=64:64 "$PONYWRITE" --batch=list
	assert_status 0
	assert_quiet
	assert_all 80 new
	assert_no_litter
}

@test "-b -C -v with 80 directories under 64 descriptors: backups, unchanged ones kept" {
	dirs 80
	echo "new 7" > d7/f
	run --separate-stderr prlimit --nofile=64:64 "$PONYWRITE" -b -C -v \
	    --batch=list
	assert_status 0
	assert_all 80 new
	assert_content d1/f~ $'old\n'
	assert_content d80/f~ $'old\n'
	[ ! -e d7/f~ ] || fail "d7/f was unchanged, yet backed up"
	assert_stderr_has "ponywrite: d7/f: unchanged"
	assert_stderr_has "ponywrite: d80/f: replaced"
	assert_no_litter
}

@test "a soft limit of 64 is raised: each directory opened once" {
	require_cmd strace
	dirs 80
	# strace's own descriptors come from the same limit: its trace goes
	# to a file opened before the limit is lowered.
	run --separate-stderr prlimit --nofile=64:4096 strace -f -qq \
	    -o trace -e trace=openat "$PONYWRITE" --batch=list
	assert_status 0
	assert_all 80 new
	local opened
	opened=$(grep -Ec 'openat\([0-9A-Z_]+, "d[0-9]+", .*O_DIRECTORY' trace)
	[ "$opened" -eq 80 ] || fail "$opened opens of the 80 directories"
}

@test "10,000 targets in 200 directories under 64 descriptors" {
	local i k
	: > list
	for ((i = 1; i <= 200; i++)); do
		mkdir "d$i"
		for ((k = 1; k <= 50; k++)); do
			printf 'd%s/f%s\0src\0' "$i" "$k" >> list
		done
	done
	echo 10000 > src
	run --separate-stderr prlimit --nofile=64:64 "$PONYWRITE" --batch=list
	assert_status 0
	assert_quiet
	[ "$(cat d*/f* | wc -l)" -eq 10000 ] || fail "not 10,000 targets"
	[ "$(sort -u d*/f* | wc -l)" -eq 1 ] || fail "a target has other content"
	assert_content d200/f50 $'10000\n'
	assert_no_litter
}

# The last target reads stdin, a FIFO: the run waits there, every other new
# file written, the first directories closed for the limit.
start_waiting()
{
	dirs 80 -
	PW_PREFIX=(prlimit --nofile=64:64)
	start_slow --batch=list
	temp_of "$PW_PID" d80 > /dev/null
	[ -n "$(find d1 -name '.f.*')" ] || fail "no temporary file in d1"
}

@test "SIGTERM with directories closed for the limit: every temporary file removed" {
	start_waiting
	kill -TERM "$PW_PID"
	finish_slow
	[ "$PW_STATUS" -eq $((128 + 15)) ] || fail "status $PW_STATUS: $PW_STDERR"
	assert_all 80 old
	assert_no_litter
}

@test "a directory replaced while it was closed for the limit: nothing written in the new one" {
	start_waiting
	mv d1 d1.moved
	mkdir d1
	echo planted > d1/f
	echo "new 80" >&9
	finish_slow
	[ "$PW_STATUS" -eq 1 ] || fail "status $PW_STATUS: $PW_STDERR"
	grep -q "ponywrite: d1/f: its directory d1 was moved or replaced during the run" \
	    <<<"$PW_STDERR" || fail "stderr: $PW_STDERR"
	grep -q "ponywrite: nothing replaced" <<<"$PW_STDERR" ||
	    fail "stderr: $PW_STDERR"
	assert_content d1/f $'planted\n'
	[ "$(ls -A d1)" = f ] || fail "written in the new d1: $(ls -A d1)"
	# The old directory's temporary file cannot be reached: it is named.
	grep -q "ponywrite: d1: cannot remove the temporary file \.f\." \
	    <<<"$PW_STDERR" || fail "stderr: $PW_STDERR"
	rm d1.moved/.f.*
	for ((i = 2; i <= 80; i++)); do
		assert_content "d$i/f" $'old\n'
	done
	assert_content d1.moved/f $'old\n'
	assert_no_litter
}

# Helpers for the script-feature suites (command, append, backup, ifchanged,
# noempty, lock, nosync).  Load after helpers.bash:
#
#	load helpers
#	load features_helpers
#
#   wait_for FILE        wait (5 s) until FILE exists
#   listing [DIR]        every entry of DIR (default .), hidden ones too, sorted
#   spawn ARG...         start "$PONYWRITE" ARG... in the background under a
#                        reaper that records how it ended; stdin /dev/null,
#                        stderr in $BG_ERR; signal dispositions reset to default
#   spawned_pid          the pid of ponywrite itself (after spawn)
#   reap                 wait for it; BG_END is "exit N" or "signal N",
#                        BG_STDERR its stderr
#   only_std_fds CMD...  run CMD with every descriptor above 2 closed
#   trace_syncs ARG...   run ponywrite ARG... under strace; TRACE holds one
#                        line per fsync/fdatasync/sync/syncfs/sync_file_range/
#                        rename*, fds shown as <path>; status in $status
#   count_in_trace RE    how many TRACE lines match the extended regex RE
#   trace_events         TRACE as words: flush-temp wait-temp flush-dir rename:NAME ...
#   plan_of [DIR]        the flush plan for DIR's file system: ordered,
#                        filelog (btrfs: one file waited for, renamed, then
#                        flushed itself, not its directory, except with -b; a
#                        batch makes one syncfs), fuse, nojournal (ext2,
#                        ext3/ext4 without a journal, whatever the options) or
#                        safe (the allow-list, read independently)
#   dir_flushes [--no-sync] [DIR]   flushes after an old file in DIR is
#                        replaced (of DIR, or of the file where filelog)
#   replaced_events [--no-sync] NAME [WORD [DIR]]   trace_events from its rename on
#   kept_links DIR NAME...   the hidden links of old files kept and named
#   temp_step [-b] [DIR] the word for what makes the temporary file's data safe
#                        before the rename on DIR's file system: wait-temp
#                        (sync_file_range) where the plan is ordered or
#                        filelog (not with -b), flush-temp (fsync) elsewhere

BG_REAPER=
BG_ERR=

# Empty input is read from /dev/null: make sure it still is the device.
setup()
{
	[ -c /dev/null ] || fail "/dev/null is not a character device; fix the system first"
	pw_setup
}

teardown()
{
	if [ -n "${BG_REAPER:-}" ]; then
		[ -s "$BATS_TEST_TMPDIR/bg.pid" ] &&
		    kill -KILL "$(cat "$BATS_TEST_TMPDIR/bg.pid")" 2>/dev/null
		kill -KILL "$BG_REAPER" 2>/dev/null
		wait "$BG_REAPER" 2>/dev/null
		BG_REAPER=
	fi
	pw_teardown
}

wait_for()
{
	local i
	for i in $(seq 250); do
		[ -e "$1" ] && return 0
		sleep 0.02
	done
	fail "timed out waiting for $1"
}

listing()
{
	(cd "${1:-.}" && LC_ALL=C ls -A1)
}

# The reaper is perl: the shell cannot tell "killed by signal N" from
# "exited with 128+N", and ponywrite must die by the signal.
spawn()
{
	require_cmd perl
	BG_ERR="$BATS_TEST_TMPDIR/bg.err"
	rm -f "$BATS_TEST_TMPDIR/bg.pid" "$BATS_TEST_TMPDIR/bg.end"
	perl -e '
		my ($pidfile, $endfile) = splice(@ARGV, 0, 2);
		my $pid = fork;
		defined $pid or die "fork: $!";
		if ($pid == 0) { exec { $ARGV[0] } @ARGV; exit 127; }
		open(my $f, ">", "$pidfile.new") or die; print $f "$pid\n";
		close $f; rename("$pidfile.new", $pidfile) or die;
		waitpid($pid, 0);
		my $s = $?;
		open($f, ">", "$endfile.new") or die;
		print $f ($s & 127 ? "signal " . ($s & 127) : "exit " . ($s >> 8)), "\n";
		close $f; rename("$endfile.new", $endfile) or die;
	' "$BATS_TEST_TMPDIR/bg.pid" "$BATS_TEST_TMPDIR/bg.end" \
	    env --default-signal "$PONYWRITE" "$@" \
	    </dev/null >/dev/null 2>"$BG_ERR" 3>&- &
	BG_REAPER=$!
}

spawned_pid()
{
	wait_for "$BATS_TEST_TMPDIR/bg.pid" >&2 || return 1
	cat "$BATS_TEST_TMPDIR/bg.pid"
}

reap()
{
	local i
	for i in $(seq 500); do
		[ -e "$BATS_TEST_TMPDIR/bg.end" ] && break
		sleep 0.02
	done
	[ -e "$BATS_TEST_TMPDIR/bg.end" ] || fail "ponywrite did not finish"
	wait "$BG_REAPER" 2>/dev/null
	BG_REAPER=
	BG_END=$(cat "$BATS_TEST_TMPDIR/bg.end")
	BG_STDERR=$(cat "$BG_ERR")
}

only_std_fds()
{
	bash -c '
		for fd in /proc/$$/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && eval "exec $fd>&-"
		done
		exec "$@"
	' only_std_fds "$@"
}

trace_syncs()
{
	require_cmd strace
	local log="$BATS_TEST_TMPDIR/strace.log"
	status=0
	strace -f -qq -y -o "$log" \
	    -e trace=fsync,fdatasync,sync,syncfs,sync_file_range,rename,renameat,renameat2 \
	    "$PONYWRITE" "$@" 2>"$BATS_TEST_TMPDIR/strace.err" || status=$?
	grep -q 'PTRACE\|ptrace' "$BATS_TEST_TMPDIR/strace.err" &&
	    skip "strace cannot trace here: $(head -1 "$BATS_TEST_TMPDIR/strace.err")"
	stderr=$(cat "$BATS_TEST_TMPDIR/strace.err")
	# "PID call(args) = result" -> "call(args) = result"
	TRACE=$(sed -E 's/^[0-9]+ +//' "$log")
}

count_in_trace()
{
	printf '%s\n' "$TRACE" | grep -cE "$1" || :
}

# trace_events: TRACE (from trace_syncs, run in the current directory) as
# words: flush-temp (a hidden file here), flush-dir (this directory),
# flush:PATH (another file or directory, relative to here), rename:NAME (a
# rename onto NAME), wait-temp and wait:PATH (sync_file_range waiting for
# a whole file), sync, syncfs, sync_file_range (a range), other.
trace_events()
{
	local here line path out=
	here=$(pwd -P)
	while IFS= read -r line; do
		if [[ $line =~ ^(fsync|fdatasync)\([0-9]+\<(.*)\>\) ]]; then
			path=${BASH_REMATCH[2]}
			if [ "$path" = "$here" ]; then
				out+=" flush-dir"
			elif [[ $path == "$here"/.* ]] && [ "${path%/*}" = "$here" ]; then
				out+=" flush-temp"
			else
				path=${path#"$here"/}
				out+=" flush:$path"
			fi
		elif [[ $line =~ ^sync_file_range\([0-9]+\<(.*)\>,\ 0,\ 0,\ .*WAIT_AFTER\) ]]; then
			path=${BASH_REMATCH[1]}
			if [[ $path == "$here"/.* ]] && [ "${path%/*}" = "$here" ]; then
				out+=" wait-temp"
			else
				out+=" wait:${path#"$here"/}"
			fi
		elif [[ $line =~ ^rename(at2?)?\(.*\ \"([^\"]*)\"(,\ [A-Z0-9_|]+)?\)\ += ]]; then
			out+=" rename:${BASH_REMATCH[2]}"
		elif [[ $line =~ ^(sync|syncfs|sync_file_range)\( ]]; then
			out+=" ${BASH_REMATCH[1]}"
		elif [[ $line == ---* || $line == +++* || -z $line ]]; then
			:
		else
			out+=" other"
		fi
	done <<<"$TRACE"
	echo "${out# }"
}

# The allow-list of ponywrite.c (fsplans[]), read independently: a cheap
# plan only for a file-system type whose every super option is proven.
plan_of()
{
	local dir=${1:-.} type opts allowed o name plan
	type=$(findmnt -no FSTYPE -T "$dir")
	opts=$(findmnt -no FS-OPTIONS -T "$dir")
	case $type in
	fuse*) echo fuse; return ;;
	ext2) echo nojournal; return ;;
	overlay)
		# the plan of the file system of its upper layer: without a
		# journal, the old file linked; where it cannot be found, too
		case ",$opts," in *,volatile,*) echo safe; return ;; esac
		o=${opts#*upperdir=}
		o=${o%%,*}
		if [ "$o" != "$opts" ] && [ -d "$o" ] &&
		    [ "$(plan_of "$o")" != nojournal ]; then
			echo safe
		else
			echo nojournal
		fi
		return ;;
	esac
	if [ "$type" = ext3 ] || [ "$type" = ext4 ]; then
		name=$(readlink "/sys/dev/block/$(stat -c %Hd:%Ld "$dir")")
		case $(cat "/sys/fs/ext4/${name##*/}/journal_task" 2>/dev/null) in
		[0-9]*) ;;
		"<none>") echo nojournal; return ;;
		*) echo safe; return ;;
		esac
	fi
	case $type in
	ext4) plan=ordered allowed="rw ro errors= commit= data=ordered data=writeback data=journal noauto_da_alloc nodelalloc nodioread_nolock" ;;
	ext3) plan=ordered allowed="rw ro errors= commit= data=ordered" ;;
	xfs) plan=ordered allowed="rw ro attr2 inode64 logbufs= logbsize= noquota" ;;
	btrfs) plan=filelog allowed="rw ro ssd discard=async nodiscard space_cache=v2 subvolid= subvol=" ;;
	*) echo safe; return ;;
	esac
	for o in ${opts//,/ }; do
		case " $allowed " in
		*" $o "* | *" ${o%%=*}= "*) ;;
		*) echo safe; return ;;
		esac
	done
	echo "$plan"
}

temp_step()
{
	local b=
	[ "${1:-}" = -b ] && { b=1; shift; }
	case $(plan_of "${1:-.}")/$b in
	ordered/* | filelog/) echo wait-temp ;;
	*) echo flush-temp ;;
	esac
}

# dir_flushes [--no-sync] [DIR]: how many times DIR (default .) is flushed
# after an old file in it is replaced (where the plan is filelog, the file
# instead of DIR): once, none with --no-sync; without a journal (plan_of
# nojournal) twice either way, as the old file stays linked under a hidden
# name until the new name is on disk, and the link's removal is flushed too.
dir_flushes()
{
	local sync=1
	[ "${1:-}" = --no-sync ] && { sync=0; shift; }
	if [ "$(plan_of "${1:-.}")" = nojournal ]; then
		echo 2
	else
		echo "$sync"
	fi
}

# replaced_events [--no-sync] NAME [WORD [DIR]]: the trace_events words from
# the rename on, when the old NAME in DIR (default .) is replaced:
# rename:NAME and WORD (default flush-dir) dir_flushes times; where the plan
# is filelog, flush:DIR/NAME once instead.
replaced_events()
{
	local out n word path
	local -a ns=()
	[ "$1" = --no-sync ] && { ns=(--no-sync); shift; }
	out="rename:$1" path=$1 word=${2:-flush-dir}
	[ "${3:-.}" = . ] || path=$3/$1
	[ "$(plan_of "${3:-.}")" != filelog ] || word=flush:$path
	n=$(dir_flushes "${ns[@]}" "${3:-.}")
	while [ "$n" -gt 0 ]; do
		out+=" $word"
		n=$((n - 1))
	done
	echo "$out"
}

# kept_links DIR NAME...: after a failed directory flush without a journal,
# each old NAME is still linked as DIR/.NAME~.XXXX, once, and $stderr names
# that link; the links are removed (the test's litter check follows).
kept_links()
{
	local dir=$1 name f
	local -a kept
	shift
	for name; do
		kept=("$dir/.$name~."*)
		if [ ${#kept[@]} != 1 ] || [ ! -f "${kept[0]}" ]; then
			fail "not one hidden link of the old $dir/$name: $(ls -A "$dir")"
		fi
		f=${kept[0]}
		[[ $stderr == *"the old content stays linked as $f"* ]] ||
		    fail "the message does not name $f: $stderr"
		rm -- "$f"
	done
}

# plan ARG...: run ponywrite ARG... under strace; PLAN is its flushes and
# renames as words, repeats counted: start (write-back started), wait (data
# waited for), syncfs, fsync-temp, fsync:PATH (relative to here), rename.
plan()
{
	trace_syncs "$@"
	PLAN=$(printf '%s\n' "$TRACE" | awk -v here="$(pwd -P)" '
	function put(w) {
		if (w == last) { n++; return }
		if (last != "") out = out " " last (n > 1 ? "*" n : "")
		last = w; n = 1
	}
	/^sync_file_range\(.*WAIT_AFTER/ { put("wait"); next }
	/^sync_file_range\(/ { put("start"); next }
	/^syncfs\(/ { put("syncfs"); next }
	/^sync\(/ { put("sync"); next }
	/^f(data)?sync\(/ {
		match($0, /<[^>]*>/); p = substr($0, RSTART + 1, RLENGTH - 2)
		if (p == here) p = "."
		else if (index(p, here "/") == 1) p = substr(p, length(here) + 2)
		put(p ~ /(^|\/)\.[^\/]+\.[^\/]+$/ ? "fsync-temp" : "fsync:" p); next
	}
	/^rename/ { put("rename") }
	END { put(""); print substr(out, 2) }')
}

# setarch --uname-2.6: a kernel before 5.8 faked, whose syncfs does not report
# errors, so that a batch flushes each file.
require_uname26()
{
	require_cmd setarch
	setarch --uname-2.6 true 2>/dev/null || skip "setarch --uname-2.6 not supported"
}

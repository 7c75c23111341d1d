# shellcheck shell=bash
# Part 1: strace fault injection (sourced by run).
#
# For each scenario: a clean run under `strace -f -y` lists ponywrite's
# system calls; trace.awk numbers their occurrences the way strace's
# `when=N` counts them and says which outcomes are acceptable for each
# (call, errno, N); then every case runs in a fresh copy of the scenario
# under `strace -e inject=CALL:error=ERRNO:when=N` and is checked:
#   ok       exit 0, target has the new content and mode, old content
#            in TARGET~ (-b), nothing on stderr
#   fail     exit 1 (125 in command mode), target (and TARGET~) untouched:
#            same inode, mode, owner, links, size, mtime, content; message
#            "ponywrite: PATH: ..." naming the injected error
#   dirsync  exit 3 (125), new content, message says replaced but may not
#            survive a crash
#   after    exit 0 or 3 (125), new content: a failure after the rename
#   replaced (-C, nothing changed) exit 0, same content but a new inode
#   anyfail  any failure status, target untouched (forked child's set-up)
#   cmdfail  the command failed: its status, target untouched
# and never any hidden file (temporary file, backup link) left in the
# target's directory.

# The calls to inject and the errors that make sense for each.
INJECT_ERRNOS="\
openat=EIO,ENOSPC,EDQUOT,EPERM,EROFS,EACCES,EINTR;\
open=EIO,ENOSPC,EDQUOT,EPERM,EROFS,EACCES,EINTR;\
creat=EIO,ENOSPC,EDQUOT,EPERM,EROFS,EACCES,EINTR;\
read=EIO,EINTR;\
pread64=EIO,EINTR;\
readv=EIO,EINTR;\
splice=EIO,ENOSPC,EDQUOT,EFBIG,EINTR,EINVAL;\
sendfile=EIO,ENOSPC,EDQUOT,EFBIG,EINTR,EINVAL;\
copy_file_range=EIO,ENOSPC,EDQUOT,EFBIG,EINTR,EXDEV,EOPNOTSUPP,ENOSYS;\
write=EIO,ENOSPC,EDQUOT,EFBIG,EINTR;\
pwrite64=EIO,ENOSPC,EDQUOT,EFBIG,EINTR;\
writev=EIO,ENOSPC,EDQUOT,EFBIG,EINTR;\
ftruncate=EIO,EPERM,EFBIG,EINTR;\
fallocate=EIO,ENOSPC,EDQUOT,EFBIG,EOPNOTSUPP;\
fchmod=EIO,EPERM,EROFS;\
fchmodat=EIO,EPERM,EROFS;\
fchown=EIO,EPERM,EROFS,EDQUOT;\
fchownat=EIO,EPERM,EROFS,EDQUOT;\
fsetxattr=EIO,ENOSPC,EDQUOT,EPERM,EROFS,EOPNOTSUPP;\
flistxattr=EIO,EOPNOTSUPP;\
fgetxattr=EIO,ENODATA,EOPNOTSUPP;\
fremovexattr=EIO,EPERM,EROFS,ENODATA,EOPNOTSUPP;\
fdatasync=EIO,ENOSPC,EDQUOT,EROFS,EINTR;\
fsync=EIO,ENOSPC,EDQUOT,EROFS,EINTR;\
sync_file_range=EIO,ENOSPC,EDQUOT,EROFS,EINTR,ENOSYS;\
rename=EIO,ENOSPC,EDQUOT,EPERM,EROFS;\
renameat=EIO,ENOSPC,EDQUOT,EPERM,EROFS;\
renameat2=EIO,ENOSPC,EDQUOT,EPERM,EROFS;\
link=EIO,ENOSPC,EDQUOT,EPERM,EROFS;\
linkat=EIO,ENOSPC,EDQUOT,EPERM,EROFS;\
close=EIO,ENOSPC,EINTR;\
mkdir=EIO,ENOSPC,EDQUOT,EPERM,EROFS,EACCES;\
mkdirat=EIO,ENOSPC,EDQUOT,EPERM,EROFS,EACCES;\
getrandom=EINTR,EAGAIN,ENOSYS;\
flock=EINTR,ENOLCK;\
wait4=EINTR;\
waitid=EINTR;\
clone=EAGAIN;\
clone3=EAGAIN;\
fork=EAGAIN;\
vfork=EAGAIN"

ALL_SCENARIOS="pipe pipe-rw file file-rw create append backup parents command ifchanged unchanged lock nosync self"

# Content used by the scenarios, made once in $WORK/data.
make_data() {
	local d=$WORK/data
	mkdir -p "$d"
	yes 'old content of the target, to be kept on failure' | head -c 5000 >"$d/old"
	yes 'new content from a pipe' | head -c 20000 >"$d/new"
	yes 'a bigger input file, read with -i' | head -c 300000 >"$d/big"
	cat "$d/old" "$d/new" >"$d/appended"
	# Same size as the old content, one byte differs: -C must compare.
	{ head -c 4999 "$d/old"; printf 'X'; } >"$d/samesize"
	yes 'the previous backup' | head -c 300 >"$d/oldbackup"
	HELPER=
	if [ -n "${FAULT_CC:-}" ] || command -v musl-gcc >/dev/null 2>&1 ||
	    command -v cc >/dev/null 2>&1; then
		local c
		for c in ${FAULT_CC:-} "musl-gcc -static" "cc -static" cc; do
			# shellcheck disable=SC2086
			if $c -O2 -o "$d/helper" "$FAULTDIR/helper.c" 2>/dev/null; then
				HELPER=$d/helper
				break
			fi
		done
	fi
	if [ -n "$HELPER" ]; then
		"$HELPER" >"$d/cmdout"
	else
		cp "$d/new" "$d/cmdout"
	fi
}

# scenario NAME: sets the S_* variables describing a scenario:
#   S_ARGS     ponywrite's arguments (run in the case directory)
#   S_STDIN    file poured into a FIFO that is stdin (all written, writer
#              closed, so reads are deterministic), or "" for /dev/null
#   S_TARGET   the target; S_NEW its expected new content; S_MODE its
#              expected mode (octal); S_SAME=1 if -C must leave it alone
#   S_BACKUP   TARGET~ when -b, else ""
#   S_WATCH    files that must be untouched on failure
#   S_FAIL     exit status of ponywrite's own failures
#   S_PATHS    the paths a message may name
#   S_FORCE    "CALL ERRNO" injected at every occurrence in every run of
#              the scenario (to take the read/write path), or ""
scenario() {
	S_ARGS=(d/t)
	S_STDIN=data/new
	S_TARGET=d/t
	S_NEW=data/new
	S_MODE=640
	S_SAME=0
	S_BACKUP=
	S_WATCH=(d/t)
	S_FAIL=1
	S_PATHS="d/t d stdin"
	S_FORCE=
	case $1 in
	pipe) ;;
	pipe-rw)
		S_FORCE="splice EINVAL" ;;
	file)
		S_ARGS=(-i data/big d/t); S_STDIN=; S_NEW=data/big
		S_PATHS="d/t d data/big" ;;
	file-rw)
		S_ARGS=(-i data/big d/t); S_STDIN=; S_NEW=data/big
		S_PATHS="d/t d data/big"; S_FORCE="copy_file_range EXDEV" ;;
	create)
		S_ARGS=(d/n); S_TARGET=d/n; S_MODE=644; S_WATCH=(d/n)
		S_PATHS="d/n d stdin" ;;
	append)
		S_ARGS=(-a d/t); S_NEW=data/appended ;;
	backup)
		S_ARGS=(-b d/t); S_BACKUP=d/t~; S_WATCH=(d/t d/t~)
		S_PATHS="d/t d d/t~ stdin" ;;
	parents)
		S_ARGS=(-p d/p/q/t); S_TARGET=d/p/q/t; S_MODE=644
		S_WATCH=(d/p/q/t); S_PATHS="d/p/q/t d/p/q d/p d stdin" ;;
	command)
		if [ -n "$HELPER" ]; then
			S_ARGS=(d/t "$HELPER")
		else
			S_ARGS=(d/t cat data/new)
		fi
		S_STDIN=; S_NEW=data/cmdout; S_FAIL=125 ;;
	ifchanged)
		S_ARGS=(-C d/t); S_STDIN=data/samesize; S_NEW=data/samesize ;;
	unchanged)
		S_ARGS=(-C d/t); S_STDIN=data/old; S_NEW=data/old; S_SAME=1 ;;
	lock)
		S_ARGS=(-l d/t) ;;
	nosync)
		S_ARGS=(--no-sync d/t) ;;
	self)
		S_ARGS=(-i d/t d/t); S_STDIN=; S_NEW=data/old ;;
	*)
		echo "run: unknown scenario: $1" >&2
		return 1 ;;
	esac
}

# template SCENARIO: the files every case of the scenario starts from, made
# once in $WORK/tpl.SCENARIO and copied (cp -a keeps mode, mtime, xattrs).
template() {
	local dir=$WORK/tpl.$1
	[ -d "$dir" ] && return 0
	mkdir -p "$dir/d"
	ln -s "$WORK/data" "$dir/data"
	cp "$WORK/data/old" "$dir/d/t"
	chmod 640 "$dir/d/t"
	setfattr -n user.pony -v kept "$dir/d/t" 2>/dev/null
	setfacl -m u:nobody:r "$dir/d/t" 2>/dev/null
	touch -d '2001-02-03 04:05:06' "$dir/d/t"
	if [ -n "$S_BACKUP" ]; then
		cp "$WORK/data/oldbackup" "$dir/$S_BACKUP"
		touch -d '2000-01-01' "$dir/$S_BACKUP"
	fi
}

# setup SCENARIO DIR: a fresh copy of the scenario's files in DIR; sets
# PRE (the state of each watched file) and STDIN_DATA.
setup() {
	template "$1"
	rm -rf "$2"
	cp -a "$WORK/tpl.$1" "$2"
	states "$2" "${S_WATCH[@]}"
	PRE=("${STATES[@]}")
	STDIN_DATA=
	if [ -n "$S_STDIN" ]; then
		IFS= read -r -d '' STDIN_DATA <"$WORK/$S_STDIN"
	fi
}

# states DIR FILE...: STATES[i] is one line that changes whenever FILE i
# is touched in any way ponywrite could touch it (inode, type and mode,
# owner, link count, size, mtime, content), or "absent".
states() {
	local dir=$1 f i line
	local -a have=() st=() sum=()
	shift
	STATES=()
	for f; do
		[ -e "$dir/$f" ] && have+=("$f")
	done
	if [ ${#have[@]} -gt 0 ]; then
		mapfile -t st < <(cd "$dir" && stat -c '%i %f %u %g %h %s %.9Y' -- "${have[@]}")
		mapfile -t sum < <(cd "$dir" && sha256sum -- "${have[@]}" | cut -c1-16)
	fi
	i=0
	for f; do
		if [ -e "$dir/$f" ]; then
			line="${st[$i]} ${sum[$i]}"
			i=$((i + 1))
		else
			line=absent
		fi
		STATES+=("$line")
	done
}

# launch DIR FIFO STRACE-ARGS...: runs ponywrite (under strace with the
# given arguments) in DIR; stdin is FIFO holding STDIN_DATA, all written
# and no writer left (so reads are deterministic), or /dev/null; stderr
# goes to DIR.err.  Returns ponywrite's exit status.
launch() {
	local dir=$1 fifo=$2
	shift 2
	(
		cd "$dir" || exit 99
		if [ -n "$S_STDIN" ]; then
			exec 3<>"$fifo"
			printf '%s' "$STDIN_DATA" >&3
			exec 0<"$fifo" 3>&-
		else
			exec 0</dev/null
		fi
		exec timeout -k 5 30 strace -f -q -e signal=none "$@" \
		    "$PONYWRITE" "${S_ARGS[@]}"
	) 2>"$dir.err"
}

# traced_status TRACE: ponywrite's exit status as the trace records it (the
# process of the trace's first line, strace's execve of ponywrite), or
# nothing if it records none.
traced_status() {
	awk 'NR == 1 { main = $1 }
	    $1 == main && $2 == "+++" && $3 == "exited" { print $5 }' "$1"
}

# check DIR STATUS ALLOWED ERRNO MAINHIT: did the run end in one of the
# ALLOWED outcomes?  If not, prints why and returns 1.
check() {
	local dir=$1 rc=$2 allowed=$3 err=$4 mainhit=$5
	local untouched=1 newok=1 changed='' i why o ere='' cmdrc=3 tgt
	local -a litter
	[ "$S_FAIL" = 125 ] && cmdrc=125
	states "$dir" "${S_WATCH[@]}"
	for i in "${!S_WATCH[@]}"; do
		if [ "${STATES[$i]}" != "${PRE[$i]}" ]; then
			untouched=0
			changed="$changed ${S_WATCH[$i]}"
		fi
	done
	tgt=${STATES[0]}
	if [ "$S_SAME" = 1 ]; then
		newok=$untouched
	elif [ "$tgt" = absent ] || [ "${tgt##* }" != "$NEWSUM" ]; then
		newok=0
	elif [ "$(stat -c %a "$dir/$S_TARGET")" != "$S_MODE" ]; then
		newok=0
	elif [ "${PRE[0]}" != absent ] && [ "${tgt%% *}" = "${PRE[0]%% *}" ]; then
		newok=0
	elif [ -n "$S_BACKUP" ] && ! cmp -s "$dir/$S_BACKUP" "$WORK/data/old"; then
		newok=0
	fi
	# Hidden files left in the target's directory (or any directory -p
	# made) are litter: temporary files, backup links.
	litter=("$dir"/d/.[!.]* "$dir"/d/..?* "$dir"/d/p/.[!.]* "$dir"/d/p/q/.[!.]*)
	[ "$mainhit" = 1 ] && ere=$(errtext "$err")
	if [ "$allowed" = bakrename ] && [ ${#litter[@]} = 1 ]; then
		# Renaming the -b link over TARGET~ failed after the commit: the
		# target is new, TARGET~ as it was, the old file kept under the
		# hidden name the message gives, exit 3 (125 in command mode).
		local kept
		kept=$(sed -n 's/.*; it is kept as //p' "$dir.err")
		[ "$rc" = "$cmdrc" ] && [ "${tgt##* }" = "$NEWSUM" ] &&
		    [ "${STATES[1]}" = "${PRE[1]}" ] && [ -n "$kept" ] &&
		    [ "$dir/$kept" = "${litter[0]}" ] &&
		    cmp -s "${litter[0]}" "$WORK/data/old" && return 0
	fi
	for o in ${allowed//,/ }; do
		[ ${#litter[@]} = 0 ] || break
		case $o in
		ok)
			[ "$rc" = 0 ] && [ "$newok" = 1 ] && [ ! -s "$dir.err" ] && return 0 ;;
		fail)
			[ "$rc" = "$S_FAIL" ] && [ "$untouched" = 1 ] &&
			    has_message "$dir.err" "$S_PATHS" "$ere" && return 0 ;;
		dirsync)
			[ "$rc" = "$cmdrc" ] && [ "$newok" = 1 ] &&
			    grep -q 'replaced, but flushing directory.*may not survive a crash' "$dir.err" &&
			    has_message "$dir.err" "$S_TARGET" "$ere" && return 0 ;;
		replaced)
			[ "$rc" = 0 ] && [ "${tgt##* }" = "$NEWSUM" ] &&
			    [ "${tgt%% *}" != "${PRE[0]%% *}" ] && [ ! -s "$dir.err" ] && return 0 ;;
		after)
			{ [ "$rc" = 0 ] || [ "$rc" = "$cmdrc" ]; } && [ "$newok" = 1 ] && return 0 ;;
		anyfail)
			[ "$rc" != 0 ] && [ "$rc" != 3 ] && [ "$untouched" = 1 ] && return 0 ;;
		cmdfail)
			# No message check: when the command's write N fails,
			# ponywrite's own write N (its message) fails too.
			[ "$rc" != 0 ] && [ "$rc" != 3 ] && [ "$rc" != 125 ] &&
			    [ "$untouched" = 1 ] && return 0 ;;
		esac
	done
	why="exit $rc"
	if [ "$untouched" = 1 ]; then
		why="$why, untouched"
	else
		why="$why, changed:$changed"
		[ "$S_SAME" = 1 ] || [ "$newok" = 0 ] || why="$why (as wanted on success)"
	fi
	[ ${#litter[@]} = 0 ] || why="$why, litter: ${litter[*]#"$dir"/}"
	[ -s "$dir.err" ] && why="$why, stderr: $(firstline "$dir.err")"
	printf '%s (wanted %s)' "$why" "$allowed"
	return 1
}

# cases_for SCENARIO: the clean run, then the cases (one per line:
# scenario call errno N allowed hits).
cases_for() {
	local scen=$1 dir=$WORK/clean.$1 rc out
	scenario "$scen" || return 1
	setup "$scen" "$dir"
	NEWSUM=$(sha256sum <"$WORK/$S_NEW" | cut -c1-16)
	local -a force=()
	[ -n "$S_FORCE" ] && force=(-e "inject=${S_FORCE% *}:error=${S_FORCE#* }")
	launch "$dir" "$WORK/fifo.clean" -y -s 300 -o "$dir.trace" "${force[@]}"
	rc=$?
	out=$(traced_status "$dir.trace")
	rc=${out:-$rc}
	if ! out=$(check "$dir" "$rc" ok - 0); then
		result FAIL clean-run - "$scen" "without injection: $out"
		return 1
	fi
	awk -v errnos="$INJECT_ERRNOS" -f "$FAULTDIR/trace.awk" "$dir.trace" |
	    awk -v forced="${S_FORCE% *}" '$1 != forced' |
	    sort -k1,1 -k3,3n -k2,2 | sed "s/^/$scen /"
}

# run_case SCENARIO CALL ERRNO N ALLOWED HITS [WORKER]
run_case() {
	local scen=$1 call=$2 err=$3 n=$4 allowed=$5 hits=$6 w=${7:-0}
	local dir=$WORK/case.$w rc out mainhit=0 trc odd=
	if [ "$scen" != "${CURSCEN:-}" ]; then
		scenario "$scen" || return 1
		NEWSUM=$(sha256sum <"$WORK/$S_NEW" | cut -c1-16)
		CURSCEN=$scen
	fi
	setup "$scen" "$dir"
	case $hits in
	main:*|*"|main:"*) mainhit=1 ;;
	esac
	# With -C and nothing changed, a failing clean-up may or may not be
	# reported: the target is left alone either way.
	[ "$S_SAME" = 1 ] && [ "$call" = close ] && allowed="$allowed,ok"
	# ... and where no temporary file can be made (a read-only mount, a
	# directory the caller cannot write), unchanged content exits 0.
	case $S_SAME:$call:$err:$hits in
	1:openat:EACCES:*/d/.t.*|1:openat:EROFS:*/d/.t.*) allowed="$allowed,ok" ;;
	esac
	# ... and when -C cannot read the old content to compare it, the
	# target may be replaced instead (as without -C).
	case ${S_ARGS[0]}:$call:$hits in
	-C:read:*/d/t\>*|-C:pread64:*/d/t\>*) allowed="$allowed,ok,replaced" ;;
	esac
	local -a force=() trace=(execve "$call")
	if [ -n "$S_FORCE" ]; then
		force=(-e "inject=${S_FORCE% *}:error=${S_FORCE#* }")
		trace+=("${S_FORCE% *}")
	fi
	# The count of a call can vary from run to run (a pipe read in two
	# pieces or three): a run that never reached call N is run again.
	local tries
	for tries in 1 2 3; do
		launch "$dir" "$WORK/fifo.$w" -o "$dir.trace" \
		    -e "trace=$(IFS=,; echo "${trace[*]}")" \
		    "${force[@]}" -e "inject=$call:error=$err:when=$n"
		rc=$?
		grep -q "^[0-9]* *$call(.*(INJECTED)" "$dir.trace" && break
		[ "$tries" = 3 ] && break
		setup "$scen" "$dir"
	done
	if ! grep -q "^[0-9]* *$call(.*(INJECTED)" "$dir.trace"; then
		result PASS "$call" "$err" "$scen#$n" "not reached in 3 runs (a count that varies); at $hits"
		return 0
	fi
	# Once in some ten thousand runs strace 6.1 exited 0 for a ponywrite
	# that had failed: the status in the trace is the one ponywrite gave.
	trc=$(traced_status "$dir.trace")
	if [ -n "$trc" ] && [ "$trc" != "$rc" ]; then
		odd=" (strace exited $rc, the traced ponywrite $trc)"
		rc=$trc
	fi
	if out=$(check "$dir" "$rc" "$allowed" "$err" "$mainhit"); then
		result PASS "$call" "$err" "$scen#$n" "$hits$odd"
	else
		result FAIL "$call" "$err" "$scen#$n" "$out$odd; at $hits; repro: tests/fault/run --case '$scen $call $err $n'"
	fi
}

# inject_worker CASEFILE WORKER: runs the cases of one worker.
inject_worker() {
	local line
	local -a f
	while IFS= read -r line; do
		read -r -a f <<<"$line"
		run_case "${f[0]}" "${f[1]}" "${f[2]}" "${f[3]}" "${f[4]}" "${f[5]}" "$2"
	done <"$1"
}

inject_prereq() {
	if ! command -v strace >/dev/null 2>&1; then
		note "strace fault injection: strace is not installed"
		return 1
	fi
	if ! strace -qq -o /dev/null -e trace=getpid -e inject=getpid:error=EIO true 2>/dev/null; then
		note "strace fault injection: strace cannot trace here (ptrace not permitted?)"
		return 1
	fi
	return 0
}

inject_all() {
	local scen w pids=()
	SCENARIOS=${SCENARIOS//,/ }
	inject_prereq || return 0
	make_data
	[ -n "$HELPER" ] || note "command scenario uses cat: no C compiler for helper.c"
	mkfifo "$WORK/fifo.clean" || return 1
	for scen in ${SCENARIOS:-$ALL_SCENARIOS}; do
		cases_for "$scen"
	done >"$WORK/cases"
	for ((w = 0; w < JOBS; w++)); do
		mkfifo "$WORK/fifo.$w" || return 1
		awk -v j="$JOBS" -v w="$w" 'NR % j == w' "$WORK/cases" >"$WORK/cases.$w"
		RESULTFILE=$WORK/results.$w inject_worker "$WORK/cases.$w" "$w" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for ((w = 0; w < JOBS; w++)); do
		cat "$WORK/results.$w" >>"$RESULTS"
	done
}

# inject_one 'SCENARIO CALL ERRNO N': one case, verbosely, kept.
inject_one() {
	local -a f
	local line dir
	read -r -a f <<<"$1"
	inject_prereq || return 1
	make_data
	mkfifo "$WORK/fifo.clean" "$WORK/fifo.one" || return 1
	line=$(cases_for "${f[0]}" | awk -v c="${f[1]}" -v e="${f[2]}" -v n="${f[3]}" \
	    '$2 == c && $3 == e && $4 == n')
	if [ -z "$line" ]; then
		echo "run: no such case (the clean run has no occurrence $1)" >&2
		return 1
	fi
	read -r -a f <<<"$line"
	echo "case: $line"
	run_case "${f[@]}" one
	echo "stderr was:"
	cat "$WORK/case.one.err"
	echo "clean trace: $WORK/clean.${f[0]}.trace"
	dir=$WORK/repro
	scenario "${f[0]}"
	setup "${f[0]}" "$dir"
	echo "a fresh copy of the scenario is in $dir; to rerun by hand:"
	printf '  cd %q && strace -f -qq -o /dev/null -e trace=%s%s' "$dir" "${f[1]}" \
	    "${S_FORCE:+,${S_FORCE% *} -e inject=${S_FORCE% *}:error=${S_FORCE#* }}"
	printf ' -e inject=%s:error=%s:when=%s %q' "${f[1]}" "${f[2]}" "${f[3]}" "$PONYWRITE"
	printf ' %q' "${S_ARGS[@]}"
	[ -n "$S_STDIN" ] && printf ' < %q' "$S_STDIN"
	echo
	grep -q '^FAIL' "$RESULTS" && return 1
	return 0
}

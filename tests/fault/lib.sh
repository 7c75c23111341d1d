# shellcheck shell=bash
# Helpers shared by the fault tests (sourced by run).
# Globals used: WORK, RESULTS, VERBOSE.

# result STATUS CALL ERRNO WHERE DETAIL
#   STATUS is PASS or FAIL; CALL x ERRNO is the row of the summary table;
#   WHERE says which case it was; DETAIL explains a failure.
result() {
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"${RESULTFILE:-$RESULTS}"
	if [ "$1" = FAIL ] || [ "$VERBOSE" = 1 ]; then
		printf '%s %s %s %s: %s\n' "$1" "$2" "$3" "$4" "$5" >&2
	fi
}

# note TEXT: something that could not be tested, shown in the summary.
note() {
	printf 'SKIP\t-\t-\t-\t%s\n' "$1" >>"$RESULTS"
	printf 'skip: %s\n' "$1" >&2
}

# state FILE: one line that changes whenever the file is touched in any way
# ponywrite could touch it (inode, type and mode, owner, link count, size,
# mtime, content); "absent" if it does not exist.
state() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		printf '%s %s\n' "$(stat -c '%i %f %u %g %h %s %.9Y' -- "$1")" \
		    "$(sha256sum <"$1" 2>/dev/null | cut -c1-16)"
	else
		echo absent
	fi
}

# errtext ERRNO: strerror(3) texts of glibc and musl, as an ERE.
errtext() {
	case $1 in
	EIO) echo 'Input/output error|I/O error' ;;
	ENOSPC) echo 'No space left on device' ;;
	EDQUOT) echo 'Disk quota exceeded|Quota exceeded' ;;
	EFBIG) echo 'File too large' ;;
	EPERM) echo 'Operation not permitted' ;;
	EROFS) echo 'Read-only file system' ;;
	EACCES) echo 'Permission denied' ;;
	EINTR) echo 'Interrupted system call|Interrupted' ;;
	ENOSYS) echo 'Function not implemented' ;;
	EAGAIN) echo 'Resource temporarily unavailable' ;;
	ENOLCK) echo 'No locks available' ;;
	EXDEV) echo 'Invalid cross-device link|Cross-device link' ;;
	EOPNOTSUPP) echo 'Operation not supported|Not supported' ;;
	EINVAL) echo 'Invalid argument' ;;
	ENODATA) echo 'No data available' ;;
	ENOMEM) echo 'Cannot allocate memory|Out of memory' ;;
	*) echo "$1" ;;
	esac
}

# has_message FILE PATHS ERE: FILE has a line "ponywrite: P: ..." for one of
# the space-separated PATHS whose reason matches ERE (empty: any reason).
has_message() {
	local file=$1 paths=$2 ere=$3 line p
	while IFS= read -r line; do
		for p in $paths; do
			case $line in
			"ponywrite: $p: "?*)
				if [ -z "$ere" ] || printf '%s\n' "$line" | grep -Eq -- "$ere"; then
					return 0
				fi
				;;
			esac
		done
	done <"$file"
	return 1
}

# firstline FILE: the first line of FILE, for failure reports.
firstline() {
	local l=
	IFS= read -r l <"$1"
	printf '%s' "${l:0:160}"
}

# summary RESULTS SECONDS: the table and the final line.
summary() {
	local file=$1 secs=$2
	echo
	awk -F '\t' -v secs="$secs" '
	$1 == "SKIP" { skips[++ns] = $5; next }
	{
		k = $2 SUBSEP $3
		if (!(k in n)) order[++nk] = k
		n[k]++
		if ($1 == "FAIL") f[k]++
		if ($1 == "PASS") pass++; else fail++
	}
	END {
		printf "%-22s %-11s %6s %7s\n", "call", "errno", "cases", "failed"
		# sorted by call, then errno
		for (i = 1; i <= nk; i++)
			for (j = i + 1; j <= nk; j++)
				if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
		for (i = 1; i <= nk; i++) {
			split(order[i], p, SUBSEP)
			printf "%-22s %-11s %6d %7d%s\n", p[1], p[2], n[order[i]], f[order[i]], f[order[i]] ? "  <--" : ""
		}
		for (i = 1; i <= ns; i++)
			printf "skipped: %s\n", skips[i]
		printf "time: %ds\n", secs
		printf "%d passed, %d failed\n", pass, fail
	}' "$file"
	! grep -q '^FAIL' "$file"
}

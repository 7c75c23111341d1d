# Turns the `strace -f -qq -y -s 300 -o LOG` trace of a clean run into the
# list of fault injection cases for it.
#
# strace counts `when=N` per system call and per process (a forked child
# starts from zero; execve does not reset the count), so occurrences are
# numbered here the same way.  Each occurrence is classed:
#   noise  the main process before set_tid_address (dynamic loader, libc
#          start-up: failing those tests ld.so, not ponywrite)
#   main   ponywrite's own work in the main process
#   child  a forked ponywrite child before it execs the command
#   cmd    the command run in command mode
# and placed before ("pre") or after ("post") the last successful rename of
# the main process, which commits the target.
#
# Input variables: errnos="call=E1,E2;call=..." (the calls to inject and the
# errors that make sense for each).  Output, one line per case:
#   call errno N allowed-outcomes hits
# where hits describes every process the injection lands in.

function add_errnos(spec,    n, i, kv, parts) {
	n = split(spec, parts, ";")
	for (i = 1; i <= n; i++) {
		if (split(parts[i], kv, "=") == 2)
			table[kv[1]] = kv[2]
	}
}

function retval(s,    i) {
	i = match(s, / = [^=]*$/)
	if (i == 0)
		return ""
	return substr(s, i + 3)
}

# -b renames its hidden link over TARGET~ just after the commit rename: that
# one is not the commit.
function backup_rename(args) {
	return args ~ /~"\)$/
}

function record(pid, name, args, ret,    k) {
	if (!(pid in seen)) {
		seen[pid] = 1
		if (mainpid == "")
			mainpid = pid
		cls[pid] = (pid == mainpid) ? "noise" : "child"
	}
	k = pid SUBSEP name
	cnt[k]++
	nocc++
	occ_pid[nocc] = pid
	occ_name[nocc] = name
	occ_n[nocc] = cnt[k]
	occ_cls[nocc] = cls[pid]
	occ_desc[nocc] = args
	occ_ret[nocc] = ret
	if (cnt[k] > maxn[name])
		maxn[name] = cnt[k]
	if (name == "set_tid_address" && pid == mainpid && cls[pid] == "noise") {
		cls[pid] = "main"
		started = 1
	}
	if (name == "execve" && pid != mainpid && ret == "0")
		cls[pid] = "cmd"
	if (pid == mainpid && name ~ /^rename(at2?)?$/ && ret == "0" && !backup_rename(args))
		lastrename = nocc
	pending[pid] = nocc
}

BEGIN {
	add_errnos(errnos)
	mainpid = ""
	lastrename = 0
	nocc = 0
}

{
	pid = $1
	rest = $0
	sub(/^[0-9]+ +/, "", rest)
	if (rest ~ /^<\.\.\. [a-z0-9_]+ resumed>/) {
		if (pid in pending) {
			occ_ret[pending[pid]] = retval(rest)
			name = occ_name[pending[pid]]
			if (name == "execve" && pid != mainpid && occ_ret[pending[pid]] == "0")
				cls[pid] = "cmd"
			if (pid == mainpid && name ~ /^rename(at2?)?$/ && occ_ret[pending[pid]] == "0" &&
			    !backup_rename(occ_desc[pending[pid]]))
				lastrename = pending[pid]
		}
		next
	}
	if (rest !~ /^[a-z0-9_]+\(/)
		next
	name = rest
	sub(/\(.*/, "", name)
	args = rest
	sub(/^[a-z0-9_]+/, "", args)
	if (rest ~ /<unfinished \.\.\.>$/)
		ret = ""
	else
		ret = retval(rest)
	sub(/ += [^=]*$/, "", args)
	sub(/ <unfinished \.\.\.>$/, "", args)
	record(pid, name, args, ret)
}

# Which outcomes are acceptable when ERR is injected into an occurrence.
function allowed(name, err, c, phase, desc,    flushish, tempfd) {
	if (c == "cmd")
		return "ok,cmdfail"
	if (c == "child")
		return "ok,anyfail"
	flushish = (name == "fsync" || name == "fdatasync" || name == "close")
	# Closing the temporary file must be checked; closing a descriptor
	# that was only read (input, directory, old target) may be ignored.
	tempfd = (desc ~ /\/\.[^\/]*>\)$/ || desc ~ /\(deleted\)>\)$/)
	if (name == "close" && !tempfd && err != "EINTR")
		return phase == "pre" ? "ok,fail" : "ok,after"
	if (err == "EINTR") {
		if (flushish)
			return phase == "pre" ? "ok,fail" : "ok,after"
		return "ok"
	}
	# Errors that say "not here": go on another way.  A file system
	# without extended attributes fails the first flistxattr.
	if ((name ~ /^(splice|sendfile)$/ && err == "EINVAL") ||
	    (name == "copy_file_range" && err ~ /^(EXDEV|EOPNOTSUPP|ENOSYS|EINVAL)$/) ||
	    (name == "fallocate" && err == "EOPNOTSUPP") ||
	    (name == "sync_file_range" && err == "ENOSYS") ||
	    (name == "flistxattr" && err == "EOPNOTSUPP" && desc ~ /, NULL, 0\)$/) ||
	    (name == "fgetxattr" && err == "ENODATA" && desc ~ /, NULL, 0\)$/) ||
	    (name == "fremovexattr" && err ~ /^(ENODATA|EOPNOTSUPP)$/))
		return "ok"
	# fs.protected_regular that cannot be read is taken as 2, which
	# changes nothing outside sticky directories; fs.protected_hardlinks
	# as 1, and a caller's capabilities (/proc/self/status) as root's:
	# they only foresee a kept link's refusal, which the link then tells.
	if (desc ~ /\/proc\/sys\/fs\/protected_(regular|hardlinks)|\/proc\/(self|[0-9]+)\/status/)
		return "ok"
	# A mount whose options cannot be read gets the safe flush plan; a
	# backup name whose flags cannot be read is not refused for them (a
	# rename that then fails says so, exit 3).
	if (desc ~ /mountinfo|fdinfo|\/sys\//)
		return "ok"
	if (name == "openat" && desc ~ /~"?, ?O_RDONLY\|O_NONBLOCK\|O_NOFOLLOW/)
		return "ok"
	# Either way is right: skipping an attribute that vanished or cannot
	# be set there, falling back to read(2) after copy_file_range fails
	# (read then says whether the source is bad), ...
	if ((name == "fsetxattr" && err == "EOPNOTSUPP") ||
	    (name ~ /^f(list|get)xattr$/ && err ~ /^(EOPNOTSUPP|ENODATA)$/) ||
	    (name == "copy_file_range" && err == "EIO") ||
	    (name == "getrandom") ||
	    (name == "flock" && err == "ENOLCK" && phase == "post"))
		return phase == "pre" ? "ok,fail" : "ok,after"
	# An old file that cannot be read is still replaced (its metadata comes
	# through O_PATH); -C cannot compare it, so it replaces it too.
	if (name == "openat" && err == "EACCES" && desc ~ /O_RDONLY\|O_NONBLOCK\|O_NOFOLLOW/)
		return "ok,fail,replaced"
	if (phase == "pre")
		return "fail"
	if (name ~ /^rename(at2?)?$/ && backup_rename(desc))
		return "bakrename"
	if (name == "fsync" || name == "fdatasync")
		return "dirsync"
	return "ok,after"
}

function union(a, b,    n, i, p, seenu, out) {
	if (a == "")
		return b
	out = a
	n = split(a, p, ",")
	for (i = 1; i <= n; i++)
		seenu[p[i]] = 1
	n = split(b, p, ",")
	for (i = 1; i <= n; i++)
		if (!(p[i] in seenu)) {
			out = out "," p[i]
			seenu[p[i]] = 1
		}
	return out
}

function short(s) {
	gsub(/[ \t]+/, "", s)
	gsub(/"/, "", s)
	if (length(s) > 90)
		s = substr(s, 1, 87) "..."
	return s
}

END {
	# No set_tid_address (an unusual libc): no way to tell the start-up
	# apart, so everything counts as ponywrite's.
	if (!started)
		for (i = 1; i <= nocc; i++)
			if (occ_cls[i] == "noise")
				occ_cls[i] = "main"
	if (lastrename == 0)
		lastrename = nocc + 1
	for (name in table) {
		for (n = 1; n <= maxn[name]; n++) {
			hits = ""
			noisy = 0
			delete hitcls
			delete hitphase
			delete hitdesc
			nh = 0
			for (i = 1; i <= nocc; i++) {
				if (occ_name[i] != name || occ_n[i] != n)
					continue
				if (occ_cls[i] == "noise")
					noisy = 1
				nh++
				hitcls[nh] = occ_cls[i]
				hitphase[nh] = (i <= lastrename) ? "pre" : "post"
				hitdesc[nh] = occ_desc[i]
				hits = hits (hits == "" ? "" : "|") occ_cls[i] ":" hitphase[nh] ":" name short(occ_desc[i]) "=" short(occ_ret[i])
			}
			if (noisy || nh == 0)
				continue
			ne = split(table[name], errs, ",")
			for (e = 1; e <= ne; e++) {
				al = ""
				for (h = 1; h <= nh; h++)
					al = union(al, allowed(name, errs[e], hitcls[h], hitphase[h], hitdesc[h]))
				print name, errs[e], n, al, hits
			}
		}
	}
}

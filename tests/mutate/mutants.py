# The mutants: plausible bugs at the places where ponywrite's safety lives.
#
# Each is described by what it changes in the code, not by line numbers, so
# that it keeps applying as the code evolves:
#
#   M(name, function, [(find, replace), ...], what, kind, equivalent=None)
#
# Within the body of FUNCTION (from the line "function(" to the next line
# "}"), each FIND is replaced once by REPLACE, in order.  A FIND that is not
# there makes the harness fail: the list must then be brought up to date.
# An equivalent mutant changes nothing a user can observe; EQUIVALENT says
# why, and it is listed but not expected to be killed.

MUTANTS = []


def M(name, func, edits, what, kind, equivalent=None):
    MUTANTS.append(dict(name=name, func=func, edits=edits, what=what,
                        kind=kind, equivalent=equivalent))


# --- errors ignored or wrongly handled on read, write, close, flush, rename
M("short-write", "xwrite", [("n -= w;", "n = 0;")],
  "a short write is taken as complete", "write")
M("short-pwrite", "xpwrite", [("n -= w;", "n = 0;")],
  "a short pwrite is taken as complete", "write")
M("write-error-ignored", "copy_fd",
  [("if (xwrite(out, buf, n) < 0)", "if (xwrite(out, buf, n) < -1)")],
  "an error writing the temporary file is ignored", "write")
M("pwrite-error-ignored", "copy_pread",
  [("if (xpwrite(out, buf, n, to + done) < 0)",
    "if (xpwrite(out, buf, n, to + done) < -1)")],
  "an error of pwrite to the temporary file is ignored", "write")
M("read-error-ignored", "copy_fd", [("if (n < 0)\n\t\treturn failed_errno(inname);", "")],
  "a read error of the input is taken as end of file", "read")
M("pread-error-ignored", "copy_pread", [("if (n < 0)\n\t\treturn failed_errno(inname);", "")],
  "a pread error of the input is taken as end of file", "read")
M("splice-error-ignored", "splice_pipe",
  [("if (dest_error(errno) || errno == EIO)\n\t\treturn failed_write(f);", "")],
  "an ENOSPC or EIO from splice falls back to read(2) instead of failing",
  "write")
M("cfr-error-ignored", "copy_span",
  [("if (done < len && n < 0 && dest_error(errno))", "if (0)")],
  "ENOSPC from copy_file_range falls back to pread/pwrite", "write")
M("close-error-ignored", "close_new",
  [("fd >= 0 && close(fd) < 0 ?", "fd >= 0 && close(fd) < -1 ?")],
  "a close() error on the temporary file is ignored", "close")
M("rename-error-ignored", "rename_over",
  [("if (renameat(f->dirfd, tmp, f->dirfd, f->name) < 0) {",
    "if (renameat(f->dirfd, tmp, f->dirfd, f->name) < -1) {")],
  "a failed rename is reported as success", "rename")

# --- flushes removed, moved, retried, weakened
M("no-data-flush", "make_ready",
  [("(!later && (j->flushes & (FL_WAIT | FL_FSYNC)) &&\n\t    flush_new(j, j->newfd) < 0)", "0")],
  "the temporary file is not flushed before the rename", "flush")
M("data-flush-error-ignored", "make_ready",
  [("flush_new(j, j->newfd) < 0", "flush_new(j, j->newfd) < -1")],
  "a failed flush of the temporary file is ignored", "flush")
M("fdatasync-not-fsync", "flush_fd", [("fsync(fd)", "fdatasync(fd)")],
  "fdatasync instead of fsync: mode and owner not flushed", "flush")
M("flush-retried", "flush_fd", [("errno == EINTR", "errno != 0")],
  "a failed fsync is retried until it succeeds (fsyncgate)", "flush")
M("no-dir-flush", "rename_job",
  [("\tif (j->flushes & FL_DIR)\n", "\tif (0)\n")],
  "the directory is not flushed after the rename", "flush")
M("dir-flush-status-0", "failed_dir_flush",
  [("return renamed || done > 0 ? run->late : opt.failstatus;", "return renamed ? 0 : done > 0 ? run->late : opt.failstatus;")],
  "a failed directory flush exits 0 instead of 3", "status")
M("file-flush-status-0", "flush_renamed_files",
  [("status = run->late;", "status = 0;")],
  "btrfs: a failed flush of the renamed file exits 0 instead of 3", "status")
M("flush-before-metadata", "make_ready",
  [("(!opt.inplace && apply_metadata(run, j, j->newfd) < 0) ||\n\t    name_new(j, j->newfd) < 0 ||\n\t    (later && start_flush(j, j->newfd) < 0) ||\n\t    (!later && (j->flushes & (FL_WAIT | FL_FSYNC)) &&\n\t    flush_new(j, j->newfd) < 0) ||", "(later && start_flush(j, j->newfd) < 0) ||\n\t    (!later && (j->flushes & (FL_WAIT | FL_FSYNC)) &&\n\t    flush_new(j, j->newfd) < 0) ||\n\t    (!opt.inplace && apply_metadata(run, j, j->newfd) < 0) ||\n\t    name_new(j, j->newfd) < 0 ||")],
  "the temporary file is flushed before its owner, attributes and mode are set", "flush")
M("no-parent-flush", "make_dir", [("r = flush_fd(dir);", "r = 0;")],
  "-p does not flush the parent of a created directory", "flush")
M("unchanged-not-flushed", "keep_unchanged",
  [("\tif (!(j->flushes & FL_OLD))\n\t\treturn 0;", "\treturn 0;")],
  "-C exits 0 on an unchanged file that was never flushed", "flush")
M("nosync-skips-data-flush", "make_ready",
  [("flush_new(j, j->newfd) < 0)", "(opt.sync && flush_new(j, j->newfd) < 0))")],
  "--no-sync also skips the flush before the rename", "nosync")
M("data-wait-error-ignored", "flush_data",
  [("if (errno != ENOSYS)\n\t\t\treturn -1;", "")],
  "a write error reported by sync_file_range before the rename is ignored (fsync then succeeds)",
  "flush")
M("cheap-flush-without-journal", "ext4_journaled", [("link[0] != '<'", "1")],
  "ext2 and ext4 without a journal only wait for the data before the rename", "flush")
M("cheap-flush-everywhere", "fs_plan",
  [("\treturn PLAN_SAFE;\n}", "\treturn PLAN_ORDERED | PLAN_SYNCFS;\n}")],
  "every file system the allow-list does not name only waits for the data before the rename", "flush")
M("cheap-flush-nowhere", "fs_plan",
  [("if (!mount_of(fd, type, sizeof type, opts, sizeof opts))", "if (1)")],
  "no file system gets the cheaper sequence: 4 flushes where 2 are proven enough", "flush")
M("unproven-options-allowed", "options_proven", [("\t\t\treturn 0;", "\t\t\treturn 1;")],
  "a mount option the block-level test never proved (journal_async_commit) keeps the cheap sequence", "flush")
M("option-prefix-allowed", "options_proven",
  [("(w[k - 1] == '=' ? k <= n : k == n)", "k <= n")],
  "an option that only starts like a proven one (data=orderedX) is taken for it", "flush")
M("fuse-taken-for-its-lower-fs", "fs_plan",
  [("\t\treturn fuse_plan(type);", "\t\t(void)fuse_plan(type);")],
  "a FUSE file system is not recognised: a batch flushes nothing the server sees", "flush")
M("fuse-renamed-file-not-flushed", "plan_flushes",
  [("if (flush && (plan & (PLAN_FILELOG | PLAN_FUSE)))",
    "if (flush && (plan & (njobs == 1 ? PLAN_FILELOG :\n\t    PLAN_FILELOG | PLAN_FUSE)))")],
  "on FUSE the renamed file is not flushed after the rename (the server never syncs it)", "flush")
M("fuse-batch-renamed-not-flushed", "flush_renamed_files",
  [("if (jobs[i].state != REPLACED ||\n\t\t    !(jobs[i].flushes & FL_FILE_AFTER)) {", "if (1) {")],
  "a FUSE batch does not flush the renamed files", "many")
M("failed-rename-drops-kept-links", "remove_file_litter",
  [("else if (f->state != REPLACED)", "else")],
  "no journal: a rename failing half-way through a batch removes the old files'"
  " links of the targets renamed before the directory is flushed (a power cut"
  " can then lose them)", "many")
M("fuse-kept-fd-not-flushed", "flush_named",
  [("\tif (fd < 0)\n\t\tfd = xopenat(dirfd, name, O_RDONLY",
    "\tif (fd >= 0) {\n\t\tclose(fd);\n\t\treturn 0;\n\t}\n\tfd = xopenat(dirfd, name, O_RDONLY")],
  "a FUSE batch closes the descriptor it kept for a -m 0 file without flushing it", "many")
M("fuse-mode-0-fd-not-kept", "plan_flushes",
  [("!(f->meta.mode & (S_IRUSR | S_IWUSR))", "0")],
  "a FUSE batch opens a user's -m 0 file again to flush it (exit 3, Permission denied)", "many")
M("filelog-dir-flushed", "plan_flushes",
  [("if (flush && !(plan & PLAN_FILELOG))\n\t\tfl |= FL_DIR;\n\tif (flush && (plan & (PLAN_FILELOG | PLAN_FUSE)))",
    "if (flush)\n\t\tfl |= FL_DIR;\n\tif (flush && (plan & PLAN_FUSE))")],
  "btrfs: the data only waited for, then the directory flushed, not the file"
  " (that log commit does not carry the data: empty targets after a power cut)",
  "flush")
M("filelog-with-backup", "plan_flushes",
  [("if (njobs > 1 || opt.backup)", "if (njobs > 1)")],
  "btrfs -b: the renamed file is flushed, not the directory, so TARGET~ may be lost after exit 0", "backup")
M("filelog-in-batch", "plan_flushes",
  [("if (njobs > 1 || opt.backup)", "if (opt.backup)")],
  "btrfs before Linux 5.8 (a flush per file): a batch's files only waited for, then their directory flushed", "many")
M("nosync-ignored", "read_options", [("opt.sync = 0;", "opt.sync = 1;")],
  "--no-sync still flushes the directory", "nosync")

# --- the temporary file: O_EXCL, O_NOFOLLOW, 0600, litter
M("temp-not-excl", "try_temp_name", [("O_CREAT |\n\t    O_EXCL |", "O_CREAT |\n\t    ")],
  "the temporary file is not created exclusively", "open")
M("temp-follows-links", "try_temp_name", [("O_NOFOLLOW | O_CLOEXEC, 0600", "O_CLOEXEC, 0600")],
  "O_NOFOLLOW dropped from the temporary file's open", "open")
M("temp-0644", "try_temp_name", [("O_CLOEXEC, 0600)", "O_CLOEXEC, 0644)")],
  "the temporary file is readable by others while written", "open")
M("temp-not-cloexec", "try_temp_name", [("O_NOFOLLOW | O_CLOEXEC, 0600", "O_NOFOLLOW, 0600")],
  "the command inherits the temporary file's descriptor", "open")
# litter-temp is retired: the one-file form's temporary file is jobs[0]'s,
# so its edit would be many-litter's.
M("litter-backup-link", "remove_file_litter", [("unlink_litter(fd, f->dirpath, f->bakname,", "if (0) unlink_litter(fd, f->dirpath, f->bakname,")],
  "-b's hidden link is left behind when the run fails", "litter")
M("litter-on-signal", "die_by", [("remove_litter(0);", "")],
  "a signal leaves the temporary file", "litter")
M("litter-after-failed-batch", "replace_all",
  [("\tremove_litter(1);\n\tdrop_source_dir(&run.src);", "\tdrop_source_dir(&run.src);")],
  "when a target fails, the other targets' new files are left", "litter")
M("litter-untold", "unlink_litter", [("errno != ENOENT)) &&\n\t    tell)", "errno != ENOENT)) &&\n\t    0)")],
  "a temporary file that cannot be removed (read-only file system) is not named", "litter")

# --- metadata: owner, ACL, xattrs, mode, and their order
M("mode-before-owner", "apply_metadata",
  [("if ((f->regular && copy_xattrs(f, fd, away) < 0) ||\n\t    set_mode(f, fd, f->meta.mode) < 0)", "if ((f->regular && copy_xattrs(f, fd, away) < 0))"),
   ("return (f->regular && copy_xattrs(f, fd, 0) < 0) ||\n\t\t    set_mode(f, fd, f->meta.mode) < 0 ? -1 : 0;", "return (f->regular && copy_xattrs(f, fd, 0) < 0) ? -1 : 0;"),
   ("\tif ((f->meta.gid != (gid_t)-1 || (f->meta.uid", "\tif (set_mode(f, fd, f->meta.mode) < 0)\n\t\treturn -1;\n\tif ((f->meta.gid != (gid_t)-1 || (f->meta.uid")],
  "the mode (set-id bits) is set before the owner, which clears them", "metadata")
M("xattrs-not-copied", "apply_metadata", [("if ((f->regular && copy_xattrs(f, fd, away) < 0) ||", "if ((0) ||")],
  "ACL and user.* attributes are not kept", "metadata")
M("inherited-acl-kept", "drop_inherited_acl",
  [("if (fremovexattr(fd, \"system.posix_acl_access\") < 0 &&", "if (0 &&")],
  "a directory's default ACL leaks onto a replaced file", "metadata")
M("acl-mode-not-applied", "copy_xattr",
  [("acl_apply_mode((unsigned char *)val, len,\n\t\t\t    f->meta.mode);", ";")],
  "a kept ACL is set with the old permission bits before the mode", "metadata",
  equivalent="the fchmod that follows gives the ACL the same bits; the only difference is a moment before it, with the temporary file's owner alone having access")
M("setid-kept-on-chown", "decide_metadata",
  [("f->meta.mode &= ~(mode_t)(S_ISUID | S_ISGID);", ";")],
  "-o/-g keep the set-id bits under the new owner", "metadata")
M("mode-not-checked", "set_mode",
  [("if ((st.st_mode & 07777) == mode)", "if (1)")],
  "a set-group-ID bit dropped by the kernel goes unnoticed", "metadata")
M("owner-not-kept", "decide_metadata",
  [("f->regular ? f->st.st_uid : (uid_t)-1;", "(uid_t)-1;")],
  "the owner of an existing file is not kept", "metadata")
M("umask-on-existing", "decide_metadata",
  [("f->meta.mode = f->regular ? f->st.st_mode & 07777 : 0666 & ~mask;",
    "f->meta.mode = f->regular ? f->st.st_mode & 0777 : 0666 & ~mask;")],
  "the set-id and sticky bits of an existing file are lost", "metadata")
M("default-acl-ignored", "decide_metadata",
  [("if (!f->regular && default_acl_mode(f, &f->meta.mode) < 0)", "if (0)")],
  "a new file in a directory with a default ACL gets the umask's mode", "metadata")

# --- links and the protected_* rules
M("protected-symlinks-off", "follow_link", [("check_protected_link(f, st) < 0", "0")],
  "links planted in /tmp by others are followed", "links")
M("protected-symlinks-dirowner", "planted_in",
  [("owner != geteuid() && owner != dir.st_uid", "owner != geteuid()")],
  "links of the sticky directory's owner are refused", "links")
M("protected-regular-off", "open_target", [("return check_protected_regular(f);", "return 0;")],
  "files planted in /tmp by others receive root's output", "links")
M("protected-regular-level", "check_protected_regular",
  [("if (fs_sysctl(\"protected_regular\", '2') != '2' &&",
    "if (fs_sysctl(\"protected_regular\", '2') == '2' &&")],
  "protected_regular=2 is taken as 1", "links")
M("keep-old-link-swallowed", "link_backup",
  [("return opt.backup ? failed_link(f) : failed_keep_old(f);", "return opt.backup ? failed_link(f) : 0;")],
  "without a journal, a failed link of the old file is ignored and the rename goes on", "flush")
M("overlay-upper-ignored", "fs_plan",
  [("if (strcmp(type, \"overlay\") == 0 && !has_option(opts, \"volatile\"))\n\t\treturn strlen(opts) < sizeof opts - 1 ?", "if (0)\n\t\treturn strlen(opts) < sizeof opts - 1 ?")],
  "overlayfs over a file system without a journal gets the safe sequence without the old file's link", "flush")
# issue 52: where features meet
M("protected-regular-sysctl-off", "check_protected_regular",
  [("\tif (fs_sysctl(\"protected_regular\", '2') != '2' &&",
    "\tif (fs_sysctl(\"protected_regular\", '2') == '0')\n\t\treturn 0;\n\tif (fs_sysctl(\"protected_regular\", '2') != '2' &&")],
  "a file planted in a sticky world-writable directory is replaced when fs.protected_regular is 0", "links")
M("backup-planted-replaced", "planted_backup", [("if ((r = planted(f, owner, S_IWOTH)) < 0)", "if ((r = 0) < 0)")],
  "-b renames over another user's TARGET~ in a sticky world-writable directory", "links")
M("privileged-temp-named", "needs_unnamed", [("return caps || (f->meta.mode & (S_ISUID | S_ISGID));", "return 0;")],
  "a new set-ID or capability file another user could write is named while it is completed", "metadata")
M("batch-list-not-walked", "jobs_from_list",
  [("(fd = open_walked(opt.batch)) < 0", "(fd = open(opt.batch, O_RDONLY | O_CLOEXEC)) < 0")],
  "--batch=LIST follows another user's link in a sticky directory", "links")
M("check-input-not-walked", "check_input",
  [("if ((fd = open_input(run, f, O_LOOK)) < 0)\n\t\treturn -1;", "if ((fd = open(f->source, O_PATH | O_CLOEXEC)) < 0)\n\t\treturn 0;")],
  "--check does not walk a source: a planted link to /dev/null passes", "links")
M("in-place-capabilities-dropped", "check_in_place", [("if (has_capabilities(f))", "if (0)")],
  "--in-place exchanges a file with file capabilities, which the kernel then removes", "metadata")
M("in-place-backup-owner", "keep_exchanged", [("if (can_give_owner(run, j))", "if (1)")],
  "--in-place -b by a user on another user's file fails to keep the owner (exit 3)", "metadata")
M("protected-symlinks-dirs-off", "followable_link",
  [("if (planted_in(fd, st.st_uid, S_IWOTH) != 0) {", "if (0) {")],
  "a directory link planted in /tmp by others is followed on the way", "links")
M("walk-kernel-follows", "walk_component",
  [("sub = xopenat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0);", "sub = xopenat(fd, name, flags | O_CLOEXEC, 0);")],
  "the kernel follows a directory link on the way, without the rule", "links")
M("nojournal-options-unproven", "fs_plan",
  [("if (strcmp(type, \"ext2\") == 0 || journal == 0)", "if (strcmp(type, \"ext2\") == 0)")],
  "ext4 without a journal under options outside the allow-list keeps no link to the old file", "flush")
M("input-kernel-follows", "keep_source_dir",
  [("walk_dir(AT_FDCWD, d->path, O_SEARCH_DIR | O_DIRECTORY,\n\t    w)", "xopenat(AT_FDCWD, d->path, O_SEARCH_DIR | O_DIRECTORY |\n\t    O_CLOEXEC, 0)")],
  "-i follows a directory link planted in /tmp (root reads what it points to)", "links")
M("nolink-found-late", "check_replaceable",
  [("return max < 0 ? -1 : probe_link(f, max);", "return max < 0 ? -1 : 0;")],
  "-b without hard links is found only after the command ran", "backup")
M("keep-old-off", "plan_flushes", [("if (nojournal && !opt.backup)", "if (0)")],
  "without a journal the old inode is freed before the new name is on disk", "flush")
M("no-sync-nojournal-no-dirflush", "plan_flushes", [("int flush = opt.sync || nojournal;", "int flush = opt.sync;")],
  "--no-sync without a journal drops the old file's link before the new name is on disk", "flush")
M("keep-old-found-late", "prepare_job", [("\t    check_keep_old(run, j) < 0)) ||", "\t    0)) ||")],
  "a kept link the kernel refuses is found only after the command ran", "flush")
M("keep-old-check-silent", "check_job", [("check_keep_old(run, j) < 0 ||", "")],
  "--check says replace where the kept link will be refused", "flush")
M("keep-old-setgid-linked", "check_keep_old",
  [("(m & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&", "")],
  "an executable set-group-ID file is taken to be linkable under protected_hardlinks", "flush")
M("keep-old-uid-not-capability", "replace_all", [("run.fowner = (caps & CAP_FOWNER_BIT) != 0;", "run.fowner = geteuid() == 0;")],
  "root without CAP_FOWNER is taken to be able to link another user's set-user-ID file", "flush")
M("nojournal-batch-per-file", "fs_plan", [("return PLAN_NOJOURNAL | PLAN_SYNCFS;", "return PLAN_NOJOURNAL;")],
  "a batch without a journal flushes each new file: flushes grow with the files", "flush")
M("nojournal-syncfs-unflushed", "flush_fs_of",
  [("return (j->plan & PLAN_NOJOURNAL) ? flush_fd(j->dirfd) : 0;", "return 0;")],
  "without a journal, what syncfs writes after its own flush is renamed over unflushed", "flush")
M("fuse-no-keep-old", "fuse_plan",
  [("return PLAN_FUSE | PLAN_NOJOURNAL | PLAN_NODIRSYNC;", "return PLAN_FUSE | PLAN_NODIRSYNC;")],
  "through FUSE over ext2 the old file is freed before the new name is on the disk below", "flush")
M("fuse-no-sync", "sync_below", [("\t\t\tsync();\n", "")],
  "through bindfs a directory's fsync reaches nothing: the rename is not on the disk below when the link goes",
  "flush")
M("fuse-overlayfs-unlinked", "fuse_plan", [("PLAN_FUSE | PLAN_NOJOURNAL | PLAN_WHITEOUT;", "PLAN_FUSE;")],
  "fuse-overlayfs over ext2 without the kept link: a crash can lose the target's name", "flush")
M("whiteout-random-link", "link_old", [("if (opt.backup || !(f->plan & PLAN_WHITEOUT) ||", "if (1 ||")],
  "fuse-overlayfs: the kept link has a random name, a whiteout left in its upper directory a replace", "flush")
M("whiteout-taken-fails", "link_old", [("if (r < 0 && errno == EEXIST)", "if (0)")],
  "fuse-overlayfs: a kept link's name left by a crash fails every later replace of that target", "flush")
M("kept-link-name-other-target", "check_duplicates", [("jobs[jobs[i].dir].randomold = 1;", ";")],
  "fuse-overlayfs: a batch's target named .a.ponywrite-old replaces a's kept link before the directory flush", "flush")
M("kept-link-name-no-hash", "tagged_name", [("if (!unique || strlen(name) <= keep)", "if (1)")],
  "fuse-overlayfs: two long names that begin alike share one kept link name: a whiteout a replace again", "flush")
M("overlay-copy-up-full-fails", "no_links", [("f->plan & PLAN_GUESS ? full :", "0 ? full :")],
  "an overlay out of sight on a full disk: the link's copy-up of a lower file fails a replace that needs no link", "flush")
M("check-append-may-stay", "check_job", [("j->changes = appends(run, j);", "j->changes = 0;")],
  "--check -C -a with a non-empty input: warns where the run fails (immutable target)", "check")
M("check-missing-dotdot-apart", "dir_key", [("if (n == 2 && p[0] == '.' && p[1] == '.' && o > stop)", "if (0)")],
  "--check -p: n/y/../x/a and n/x/a are two places to --check (exit 0), one to the run (2)", "check")
M("check-missing-dir-too-long", "make_parents", [("if (missing_too_long(fd, p, s, next, w)) {", "if (0) {")],
  "--check -p: a directory to make with a name over NAME_MAX: --check says create, the run 1", "check")
M("missing-dotdot-other-fs", "missing_too_long", [("if (strcmp(s, \"..\") == 0)", "if (0)")],
  "--check -p: a name past '..' out of a mount is measured against the mount's NAME_MAX (a false failure)", "check")
M("name-units-everywhere", "name_too_long", [("|| !fs_is(dirfd, UNIT_NAMES))", ")")],
  "--check -p: a 300-byte name of 100 characters passes on ext4, which counts bytes; the run fails", "check")
M("appends-sizeless", "appends", [("st.st_size > 0 &&\n\t    !fs_is(fd, SIZELESS);", "st.st_size > 0;")],
  "--check -C -a: a sysfs file that reads nothing makes a change certain (--check 1, the run 0)", "check")
M("missing-part-by-path", "missing_part", [("sub = openat(fd, name,", "sub = openat(AT_FDCWD, path,")],
  "--check -p: a missing directory's place looked up by its whole path: past PATH_MAX a false duplicate", "check")
M("check-dangling-made", "make_parents", [("opt.check && dangling(fd, s)) {", "opt.check && 0) {")],
  "--check -p through a link to nothing: --check says create, the run fails (the link is there: its mkdir finds it)", "check")
M("ifchanged-writes-first", "compares_first", [("return opt.ifchanged && meta_unchanged(f);", "return 0 && meta_unchanged(f);")],
  "-C writes the input before it compares: unchanged content fails on a full disk or a read-only mount", "ifchanged")
M("ifchanged-prefix-lost", "write_changed", [("if ((done = copy_data(f, f->fd, 0, same, fd, 0, &filled,\n\t    f->target)) < 0)", "if ((done = same) < 0)")],
  "-C: the part of the target before the first difference is not copied: the new file has a hole there", "ifchanged")
M("ifchanged-pending-lost", "write_changed", [("if (n > 0 && xpwrite(fd, buf, n, same) < 0)", "if (0)")],
  "-C: the block read where the input first differs is not written", "ifchanged")
M("kept-link-not-checked", "unlink_kept_link", [("st.st_ino != f->st.st_ino))", "st.st_ino != st.st_ino))")],
  "a batch's target named as another's kept link (fuse-overlayfs) is removed as that link: its content lost", "flush")
M("fuseblk-linked", "fuse_plan", [('if (strcmp(type, "fuseblk") == 0)', "if (0)")],
  "ntfs-3g keeps the old file linked: a crash can leave its directory unreadable", "flush")
M("fuse-nolink-fails", "no_links", [("f->flushes &= ~FL_KEEP_OLD;\n\treturn 1;", "return 0;")],
  "exFAT through FUSE, which has no hard links, refuses every replace", "flush")
M("sticky-rename-found-late", "prepare_job", [("(check_sticky(run, j) < 0 ||", "(")],
  "a rename the sticky bit refuses is found after a batch replaced others (exit 4)", "links")
M("sticky-rename-check-silent", "check_job", [("check_sticky(run, j) < 0 || ", "")],
  "--check says replace where the sticky bit refuses the rename", "links")
M("fuse-hardlinks-check-kept", "check_keep_old", [("\tif (no_links(f))\n\t\treturn 0;\n", "")],
  "through FUSE, a link protected_hardlinks refuses fails the run instead of going on without", "flush")
M("sticky-backup-found-late", "planted_backup", [("(!sticky_keeps(f->dirfd, owner) ||\n\t    (capabilities() & CAP_FOWNER_BIT))", "1")],
  "-b over the directory owner's TARGET~ in a sticky directory fails after the target was replaced", "links")
M("ifchanged-readonly-longer", "compare_input",
  [("return opt.append || *same == f->st.st_size;", "return 1;")],
  "-C takes an input that is a prefix of the target as unchanged", "ifchanged")
M("ifchanged-hole-end", "write_changed", [("if ((n == 0 && ftruncate(fd, same) < 0) ||", "if (0 ||")],
  "-C: an input that is the target's first part and ends in its hole comes out cut at the target's last data", "ifchanged")
M("owner-given-first", "apply_metadata", [("int away = f->meta.uid != (uid_t)-1 && f->meta.uid != run->euid;", "int away = 0;")],
  "root without CAP_FOWNER gives another user's new file away before its ACL and mode: the replace fails", "metadata")
M("setid-before-owner", "apply_metadata", [("if (mode_after_away(run, f)) {", "if (0) {")],
  "root sets another user's set-ID bits while the new file is still root's: a set-user-ID root file for a moment", "metadata")
M("no-chown-fails", "set_owner", [("if (!sets_no_metadata(e = errno) || fstat(fd, &st) < 0)", "if ((e = errno) || fstat(fd, &st) < 0)")],
  "fusefat (no chown): every replace fails, though the file has the only owner the mount gives", "foreignfs")
M("no-chmod-fails", "set_mode", [("if (fchmod(fd, mode) < 0 && !sets_no_metadata(errno))", "if (fchmod(fd, mode) < 0)")],
  "fusefat (no chmod): every new file fails, though it has the mode the mount gives", "foreignfs")
M("no-chown-any-owner", "set_owner", [("if ((uid == (uid_t)-1 || st.st_uid == uid) &&", "if (1 ||")],
  "fusefat: -o an owner the file system does not give is taken silently", "foreignfs")
M("before-away-unmasked", "mode_before_away", [("return (mode & 01700) | (mode & (u << 3)) | (mode & u);", "return mode & 01777;")],
  "root gives another user a 0460 file: while root owns it, the owner-to-be writes it through the group", "metadata")
M("after-away-fowner-unchecked", "apply_metadata", [("if (!run->fowner)\n\t\t\treturn failed_mode_after_away(f);", "if (0)\n\t\t\treturn failed_mode_after_away(f);")],
  "root without CAP_FOWNER on another user's set-ID file: the run fails with a message that names no cause", "metadata")
M("inplace-ifchanged-opens-rw", "open_target", [("int rw = opt.inplace && !opt.ifchanged;", "int rw = opt.inplace;")],
  "--in-place -C opens the target for writing before it compares: unchanged content fails on a read-only mount", "inplace")
M("inplace-reopen-drops-lock", "reopen_to_exchange", [("\tif (opt.lock)\n\t\tf->keptfd = f->fd;\n\telse\n\t\tclose(f->fd);", "\tclose(f->fd);")],
  "--in-place -C -l: the lock goes with the read descriptor once the content differs: another run writes meanwhile", "inplace")
M("inplace-ifchanged-any-fs", "check_in_place", [("if (opt.ifchanged && !fs_is(f->fd, EXCHANGES))", "if (0)")],
  "--in-place -C on ext4 or tmpfs exits 0 when unchanged: the impossible exchange is not said till a change", "inplace")
M("append-changed-old-lost", "append_changed", [("if ((old = copy_old(f, fd)) < 0)", "if ((old = f->st.st_size) < 0)")],
  "-C -a: the old content is not copied before what is appended: a hole", "ifchanged")
M("append-changed-pending-lost", "append_changed", [("memcpy(cmpbuf, buf, n);", "memset(cmpbuf, 0, n);")],
  "-C -a: the first block of what is appended is lost while the old content is copied", "ifchanged")
M("case-duplicates-unchecked", "check_folded",
  [("\t\t    one_file(run, v[i - 1], v[i], NULL)) {", "\t\t    0) {")],
  "README and readme on exFAT: both reported written, one content lost", "many")
M("case-backup-unchecked", "check_folded",
  [("\t\t    !one_file(run, v[i], *hit, bak))", "\t\t    1)")],
  "-b on NTFS ignoring case: a target A~ is a's backup too; its new"
  " content lost", "backup")
M("case-asked-of-names-only", "dir_folds",
  [("\t\t\tr = folds_name(dirfd(d), e->d_name);", "\t\t\t;")],
  "--check in an empty directory that ignores case cannot tell: README and"
  " readme pass --check, the run refuses them", "backup")
M("name-too-long-unchecked", "reach_file",
  [("if (errno == ENOENT && too_long(f))", "if (0)")],
  "a new name longer than fuse-overlayfs's 251: --check says create, a"
  " batch stops after a replace", "open")
M("lock-name-255", "lock_missing", [("long max = name_max(f);", "long max = NAME_MAX;")],
  "the lock file's name assumes NAME_MAX is 255 (fuse-overlayfs has 251)", "open")
M("dir-failed-said-each", "resolve_job",
  [("if (j->dirfailed || resolve_target(j) < 0)", "if (resolve_target(j) < 0)")],
  "-t with a missing directory says it once per source", "many")
M("nolink-message-bare", "failed_link",
  [("\t\treturn failed_nolink(f);", "\t\t;")],
  "-b without hard links says only Operation not permitted", "backup")
M("temp-name-255", "name_temp", [("long max = name_max(f);", "long max = NAME_MAX;")],
  "the temporary name assumes NAME_MAX is 255 (fuse-overlayfs has 251)", "open")
M("temp-name-cut-in-char", "hidden_name",
  [("(int)utf8_fit(whole, keep)", "(int)keep")],
  "the temporary name is cut inside a UTF-8 character (NTFS refuses it)", "open")
M("lock-name-cut-in-char", "tagged_name",
  [("(int)utf8_fit(name,", "(int)(")],
  "the lock file's name is cut inside a UTF-8 character (exFAT refuses it)", "open")
M("modeless-new-file-refused", "set_mode",
  [("if (!f->regular && opt.mode == NULL)\n\t\t\treturn 0;", "")],
  "a new file on NTFS is refused for the mode the file system gives it", "metadata")
M("proc-links-followed", "follow_link", [("check_proc_link(f) < 0 || ", "")],
  "/dev/stdout and /proc/self/fd/N are followed as paths", "links")
M("nofollow-ignored", "reach_file",
  [("if (!S_ISLNK(f->st.st_mode) || opt.nofollow)", "if (!S_ISLNK(f->st.st_mode))")],
  "-P follows the link anyway", "links")
M("not-regular-accepted", "open_target",
  [("if (!S_ISREG(st.st_mode))\n\t\treturn failed(f->target, \"not a regular file\");", "")],
  "a FIFO swapped in for the target is accepted", "links",
  equivalent="reach_file refuses non-regular files first; only a race between the two checks reaches this one")

# --- script features
M("append-drops-old", "fill_temp", [("opt.append ? copy_old(f, fd) : 0", "0")],
  "-a replaces instead of appending", "append")
M("noempty-ignored", "fill_temp", [("if (opt.noempty && added == 0)", "if (0)")],
  "-E replaces with empty input", "noempty")
M("ifchanged-content-ignored", "unchanged",
  [("if (memcmp(buf, cmpbuf, n) != 0)\n\t\t\treturn 0;", "")],
  "-C keeps a file whose content differs at equal size", "ifchanged")
M("ifchanged-mode-ignored", "meta_unchanged",
  [("f->meta.mode == (f->st.st_mode & 07777) &&", "")],
  "-C keeps a file whose mode -m would change", "ifchanged")
M("backup-not-made", "link_backup", [("if (!needs_link(f))", "if (1)")],
  "-b makes no backup", "backup")
M("backup-renamed-first", "rename_over",
  [("{\n\tif (renameat(", "{\n\tint r = rename_backup(f);\n\n\tif (renameat("),
   ("return rename_backup(f) < 0 ? 1 : 0;", "return r < 0 ? 1 : 0;")],
  "-b renames the backup to TARGET~ before the target's rename", "backup")
M("backup-hidden-left", "rename_backup",
  [("if (fstatat(f->dirfd, f->bakname, &st, AT_SYMLINK_NOFOLLOW) == 0)\n\t\tunlinkat(f->dirfd, f->bakname, 0);", "")],
  "a backup that already was TARGET~ leaves its hidden link", "backup")
M("backup-status-0", "commit_all",
  [("status != 0 ? status :\n\t    run->but)", "status)")],
  "a failed backup rename exits 0", "status")
M("parents-ignored", "enter_dir", [("opt.parents ? make_parents(atfd, path, &w) :", "")],
  "-p creates no directory", "parents")

# --- command mode, signals and exit statuses
M("command-status-lost", "wait_command",
  [("f->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) :\n\t    WEXITSTATUS(status);", "f->status = 1;")],
  "the command's exit status is not passed on", "status")
M("command-failure-replaces", "wait_command",
  [("if (WIFEXITED(status) && WEXITSTATUS(status) == 0)", "if (1)")],
  "a failing command's output replaces the target", "command")
M("exec-status", "exec_failed", [("f->status = e == ENOENT ? 127 : 126;", "f->status = 126;")],
  "a command not found exits 126", "status")
M("signal-not-forwarded", "on_signal", [("kill(child, sig);", ";")],
  "a signal is not passed on to the command", "signals")
M("signal-forgotten", "wait_command", [("if ((sig = caught) != 0)", "if ((sig = caught) != 0 && 0)")],
  "a command that survives SIGTERM gets its output committed", "signals")
M("sigchld-inherited", "setup_signals",
  [("sigaction(SIGCHLD, &sa, &origchld);", ";")],
  "an ignored SIGCHLD makes command mode fail", "signals")
M("failstatus-1", "one_file_options", [("opt.failstatus = 125;", ";")],
  "ponywrite's own failure in command mode exits 1, not 125", "status")
M("usage-status-1", "usage_error", [("return 2;", "return 1;")],
  "a usage error exits 1", "status")

# --- write-behind of large input
M("no-write-behind", "write_behind", [("end >= BEHIND_FROM &&", "0 &&")],
  "large input is not written behind: dirty memory grows with the input", "writeback")
M("write-behind-no-wait", "write_behind",
  [("(*at > 0 && sync_range(fd, *at - WINDOW, WINDOW,\n\t\t    SYNC_RANGE_WAIT) < 0)", "0")],
  "the window before is not waited for: writeback is started but never bounded", "writeback")
M("write-behind-error-ignored", "write_behind",
  [("if (errno != ENOSYS)\n\t\t\t\treturn failed_write(f);", "")],
  "a write error reported by sync_file_range on a window is ignored (fsync then succeeds)",
  "writeback")
M("write-behind-from-start", "write_behind", [("end >= BEHIND_FROM &&", "end >= 0 &&")],
  "small input is written behind too: a sync_file_range per window below 64 MiB", "writeback")

# --- input copying
M("holes-filled-size", "end_regular",
  [("while (filled < outend &&", "while (0 &&")],
  "a trailing hole of the input is lost: the new file is too short", "read")
M("input-offset-ignored", "copy_fd", [("(start = lseek(in, 0, SEEK_CUR)) >= 0", "(start = 0) >= 0")],
  "a regular standard input is read from its start, not its offset", "read")
M("growth-not-copied", "copy_regular",
  [("if ((n = copy_pread(f, in, end, out, base + end - start, MAX_OFF,\n\t    inname)) < 0)\n\t\treturn -1;",
    "n = 0;")],
  "input beyond its size at the start (growing, or /sys) is cut", "read")

# --- -l, -a and -w: the lock
M("lock-not-taken", "wait_lock",
  [("while ((r = flock(fd, LOCK_EX | (opt.wait == 0 ? LOCK_NB : 0))) < 0 &&", "while ((r = 0) < 0 &&")],
  "-l takes no lock: read-modify-write races", "lock")
M("lock-stale-inode", "lock_once",
  [("else if (!(r = still_named(f, f->fd, f->name))) {", "else if (!(r = 1)) {")],
  "a lock won on an inode replaced meanwhile is kept", "lock")
M("append-without-lock", "one_file_options",
  [("if (opt.append || opt.wait >= 0)", "if (opt.wait >= 0)")],
  "-a does not take the lock: parallel appends lose lines", "append")
M("lock-gap-at-rename", "make_ready",
  [(" ||\n\t    (opt.lock && !opt.inplace && lock_new_file(j, j->newfd) < 0))", ")")],
  "the lock ends at the rename: -l -b loses a version", "lock")
M("lock-file-left", "remove_file_litter", [("unlink_litter(fd, f->dirpath, f->lockname,", "if (0) unlink_litter(fd, f->dirpath, f->lockname,")],
  "-l on a missing target leaves its lock file", "litter")
M("lock-wait-forever", "wait_lock",
  [("if (lock_timeout || errno == EWOULDBLOCK)", "if (0)")],
  "-w gives up with the wrong message", "lock")
M("lock-file-umask", "open_lock_file", [("mask = umask(0);", "mask = umask(0), umask(mask);")],
  "the lock file is created under the caller's umask: others cannot wait on it", "lock")

# --- many files (-t, --batch): the order of flushes and renames, failures
M("many-no-syncfs", "flush_new_files", [("flush_fs_of(&jobs[i]) < 0", "0")],
  "the new files are not flushed before the renames", "many")
M("many-syncfs-error-ignored", "flush_new_files",
  [("flush_fs_of(&jobs[i]) < 0", "flush_fs_of(&jobs[i]) < -1")],
  "a failed syncfs is ignored and the targets are renamed", "many")
M("many-syncfs-after-renames", "commit_all",
  [("\tif (!run->perfile && flush_new_files(run) < 0)\n\t\treturn opt.failstatus;\n", ""),
   ("\tfor (i = 0; i < njobs; i++) {\n\t\tdone +=",
    "\tif (!run->perfile && flush_new_files(run) < 0)\n\t\treturn opt.failstatus;\n\tfor (i = 0; i < njobs; i++) {\n\t\tdone +=")],
  "the files are flushed after the renames, not before", "many")
M("many-no-dir-flush", "flush_marked_dirs",
  [("r = whole ? flush_fs_of(&jobs[i]) :\n\t\t\t    flush_fd(jobs[i].dirfd);", "r = 0;")],
  "nothing is flushed after the renames", "many")
M("many-dir-flush-status-0", "flush_marked_dirs",
  [("\t\t\tstatus = onfail(", "\t\t\tonfail(")],
  "a failed flush after the renames exits 0 instead of 3", "many")
M("many-failure-renames-others", "prepare_all", [("if (nfailed > 0) {", "if (0) {")],
  "a target that failed does not stop the others from being renamed", "many")
M("many-rename-failure-goes-on", "commit_all",
  [("rename_job(run, &jobs[i]) < 0)) {\n\t\t\tremove_litter(1);\n\t\t\tbreak;\n\t\t}",
    "rename_job(run, &jobs[i]) < 0))\n\t\t\tcontinue;")],
  "after a failed rename the remaining targets are still renamed", "many")
M("many-partial-status-1", "report_jobs", [("return 4;", "return 1;")],
  "a batch stopped half way exits 1, as if nothing was replaced", "many")
M("many-duplicates-allowed", "check_duplicates",
  [("if (by_place(&v[i - 1], &v[i]) == 0) {", "if (0) {")],
  "a target given twice is replaced twice", "many")
M("many-litter", "remove_file_litter",
  [("\tunlink_litter(fd, f->dirpath, f->tmpname,", "\tif (0) unlink_litter(fd, f->dirpath, f->tmpname,")],
  "the temporary files are left behind on failure (one file's, or every"
  " target's of a batch)", "many")
M("many-no-writeback", "make_ready",
  [("sync_file_range(j->newfd, 0, 0, SYNC_FILE_RANGE_WRITE);", ";")],
  "write-back of each new file is not started as it is written", "many")
M("many-signals-not-held", "commit_all",
  [("\tblock_signals();\n\tfor (i = 0;", "\tfor (i = 0;")],
  "a signal during the renames kills ponywrite half way", "many")
M("many-unchanged-replaced", "prepare_job",
  [("(same ? keep_unchanged(j) : make_ready(run, j))", "make_ready(run, j)")],
  "-C replaces unchanged targets of a batch", "many")
M("many-old-kernel-unflushed", "plan_flushes",
  [("if (per || (plan & PLAN_ORDERED))",
    "if (njobs == 1 || (plan & PLAN_ORDERED))")],
  "before Linux 5.8 (no syncfs errors) the new files are not flushed", "many")
M("many-ordered-not-waited", "plan_flushes",
  [("if (per || (plan & PLAN_ORDERED))", "if (per)")],
  "where the journal orders data, the new files are not waited for", "many")
M("many-ordered-everywhere", "resolve_job",
  [("j->plan = fs_plan(j->dirfd, 0);", "j->plan = PLAN_ORDERED | PLAN_SYNCFS;")],
  "every file system is taken for one whose journal orders data", "many")

# --- checks before the first rename (tests/before-rename.bats)
M("backup-name-target-allowed", "check_backup_names",
  [("if ((hit = bsearch(&k, v, n, sizeof *v, by_place)) == NULL)", "if (1)")],
  "-b: a target that is another target's backup name is replaced twice",
  "before-rename")
M("mount-point-unchecked", "replace_refusal",
  [("if (!opt.inplace && mount_point(f, f->name))", "if (0)")],
  "a bind-mounted target is found only by the rename (after a command ran,"
  " or after other targets of a batch were replaced)", "before-rename")
M("chattr-unchecked", "chattr_refusal",
  [("if (fd >= 0 && ioctl(", "if (0 && ioctl(")],
  "chattr +i or +a is found only by the rename", "before-rename")

# --- the edges of the many-files forms (tests/batch-edges.bats)
M("many-dir-inode-only", "dir_slot",
  [(" ^\n\t    (unsigned long long)dev);", ");"),
   ("(jobs[*s - 1].dev == dev &&\n\t\t    jobs[*s - 1].ino == ino)", "jobs[*s - 1].ino == ino")],
  "two mount roots with one inode number are taken for one directory", "many")
M("many-unchanged-temp-cwd", "keep_unchanged",
  [("unlink_litter(j->dirfd, j->dirpath, j->tmpname,", "unlink_litter(AT_FDCWD, j->dirpath, j->tmpname,")],
  "-C in a batch leaves the temporary file beside an unchanged target", "litter")
M("many-close-error-ignored", "finish_flushes",
  [("flush_new(j, j->newfd) < 0 || close_new(j) < 0", "flush_new(j, j->newfd) < 0 || (close_new(j), 0)")],
  "a close error on a batch's temporary file is ignored", "close")
M("many-print-changed-status-lost", "report_jobs",
  [("\t\t\tstatus = print_changed(jobs[i].target, status);", "\t\t\tprint_changed(jobs[i].target, status);")],
  "--print-changed in a batch to a full disk exits 0", "status")
M("many-backup-rename-status-lost", "rename_job",
  [("\tif (r > 0)\n\t\trun->but = run->late;", "\tif (r > 0)\n\t\t;")],
  "-b in a batch: a backup not renamed to TARGET~ exits 0", "status")
M("many-list-read-error-eof", "read_list", [("if (r < 0)", "if (0)")],
  "a read error of --batch's list is taken as its end", "many")
M("p-message-bare", "failed_dir", [("if (w->made > 0)", "if (0)")],
  "-p that cannot make a directory names neither it nor its parent", "parents")
M("p-reads-on-the-way", "make_parents",
  [("flags = (next[strspn(next, \"/\")] == '\\0' ? O_RDONLY :\n\t\t    O_SEARCH_DIR) | O_DIRECTORY;", "flags = O_RDONLY | O_DIRECTORY;")],
  "-p cannot pass a directory it may search but not read", "parents")
M("caps-dropped", "keep_xattr",
  [("if (f->meta.uid == f->st.st_uid && f->meta.gid == f->st.st_gid)\n\t\treturn 1;", "")],
  "file capabilities are dropped on every replace", "metadata")
M("caps-eperm-ignored", "copy_xattr",
  [("if (fsetxattr(to, name, val, len, 0) < 0 && (errno != ENOTSUP ||", "if (fsetxattr(to, name, val, len, 0) < 0 && errno != EPERM && (errno != ENOTSUP ||")],
  "a user's file loses its capabilities silently", "metadata")
M("write-behind-not-reset", "write_behind",
  [("off_t *at = &f->behind;", "off_t *at = &jobs[0].behind;")],
  "the write-behind state is shared by a batch's files (the old static): only the first large file is written behind", "writeback")
M("many-flush-quadratic", "flush_new_files",
  [("\t\tif (!needs_syncfs(&jobs[i]))\n", "\t\tfor (k = 0; k < i && (!needs_syncfs(&jobs[k]) ||\n\t\t    jobs[k].dev != jobs[i].dev); k++)\n\t\t\t;\n\t\tif (k != i)\n\t\t\tcontinue;\n\t\tif (!needs_syncfs(&jobs[i]))\n")],
  "the flush step rescans every earlier target: quadratic", "many")
M("many-empty-t", "many_options",
  [("if (opt.targetdir != NULL && *opt.targetdir == '\\0')\n\t\treturn usage_hint(\"-t needs a directory name\");", "")],
  "-t '' writes NAME at the root", "usage")

# --- the kinds of fault issue 37 found make test blind to: a flag dropped
# from a system call, an errno test narrowed, a version test off by one, a
# file's identity taken from one field, per-target state not reset
M("data-wait-no-wait-before", "flush_data",
  [("sync_range(fd, 0, 0, SYNC_RANGE_WAIT)",
    "sync_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)")],
  "the data wait without WAIT_BEFORE: a page under write-back and dirtied"
  " again may not be written before the rename", "flush")
M("write-behind-no-wait-before", "write_behind",
  [("SYNC_RANGE_WAIT) < 0)) {", "SYNC_FILE_RANGE_WAIT_AFTER) < 0)) {")],
  "a write-behind window waited for without WAIT_BEFORE|WRITE", "writeback")
M("data-wait-enospc-falls-back", "flush_data",
  [("if (errno != ENOSYS)\n\t\t\treturn -1;", "if (errno == EIO)\n\t\t\treturn -1;")],
  "ENOSPC or EDQUOT from the data wait is taken for \"no sync_file_range\":"
  " fsync then may succeed on pages the kernel dropped", "flush")
M("write-behind-enospc-stops", "write_behind",
  [("if (errno != ENOSYS)\n\t\t\t\treturn failed_write(f);", "if (errno == EIO)\n\t\t\t\treturn failed_write(f);")],
  "ENOSPC from a write-behind window silently stops the windows", "writeback")
M("syncfs-version-from-5-9", "syncfs_reports",
  [("minor >= 8", "minor > 8")],
  "Linux 5.8 taken for a kernel whose syncfs reports no write-back errors", "many")
M("syncfs-version-from-5-7", "syncfs_reports",
  [("minor >= 8", "minor >= 7")],
  "Linux 5.7 taken for one whose syncfs reports write-back errors", "many")
M("same-file-inode-only", "same_file",
  [("a->st_dev == b->st_dev && a->st_ino == b->st_ino", "a->st_ino == b->st_ino")],
  "two files are taken for one when their inode numbers match on two"
  " file systems", "links",
  equivalent="both uses compare names of one directory (TARGET~ and the"
  " target; -l's lock file or target and what was opened by that name a"
  " moment before): another file system there means a mount point, refused"
  " before (mount_point) or mounted between the two lookups; the batch's"
  " directories, where two file systems do meet, are told apart by dir_slot"
  " (many-dir-inode-only)")
# pathonly-carried-over (load_job reset tgt.pathonly) is retired: each
# target has its own struct file, zeroed by xcalloc and set by add_job, so there is
# no reset left to drop and no state of one target left to the next.

# --- more directories than descriptors (issue 23)
M("reopen-any-directory", "reopen_dir",
  [("st.st_dev == d->dev &&\n\t    st.st_ino == d->ino", "1")],
  "a directory opened again by its path is not checked to be the same one:"
  " files are written and renamed in a directory put in its place", "fdlimit")
M("litter-not-reopened", "remove_file_litter",
  [("\tif (fd < 0)\n\t\tfd = reopened = reopen_dir(d);\n", "")],
  "a temporary file in a directory closed for the descriptor limit is left"
  " behind after a signal or a failure", "fdlimit")
M("dirs-never-closed", "make_room",
  [("run->nopen > 0 && run->nopen + run->held >= run->maxdirs", "0")],
  "every directory held open: a batch over more directories than the limit"
  " fails", "fdlimit")
M("soft-limit-not-raised", "fd_budget",
  [("if (setrlimit(RLIMIT_NOFILE, &rl) < 0 &&", "if (1 &&")],
  "the soft descriptor limit is not raised: directories are closed and"
  " opened again where the hard limit had room", "fdlimit")
M("borrowed-dir-not-taken", "use_dir",
  [("\tj->dirfd = d->dirfd;\n\treturn 0;", "\treturn 0;")],
  "a target of a shared directory is given no descriptor of it", "fdlimit")
M("pipeline-unbounded", "finish_flushes",
  [("(all || run->nflushing >= run->depth)", "all")],
  "a batch keeps every new file open till all are written: one descriptor"
  " a target", "fdlimit")
M("pipeline-not-drained", "prepare_all",
  [("\tnfailed += finish_flushes(run, 1);\n", "")],
  "the last new files of a batch are renamed before their flush", "flush")
M("pipeline-flush-error-ignored", "finish_flushes",
  [("flush_new(j, j->newfd) < 0 ||", "(flush_new(j, j->newfd), 0) ||")],
  "a failed flush of a batch's new file is ignored", "flush")
M("pipeline-start-error-ignored", "start_flush",
  [("sync_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0 &&", "0 &&")],
  "a failed start of a batch's write-back is ignored", "flush")
M("source-dir-of-another", "open_source",
  [("strncmp(d->path, source, n) != 0 ||", "")],
  "a source is opened in the directory of the source before it when their"
  " directories are named alike only in length", "many")
M("target-dir-of-another", "dir_as_before",
  [("strcmp(p->dirpath, path) != 0 ||", "")],
  "a target's directory is taken from the target before it, whatever"
  " directory it names", "many")
M("target-dir-through-link", "dir_as_before",
  [("p->linked ||", "")],
  "a target's directory is taken from the target before it, reached through"
  " a link to another directory", "many",
  equivalent="a target reached through a link names its new directory by"
  " the path walked to it (the link's, absolute, or joined to the link's"
  " directory and walked one component at a time as the kernel does), so"
  " where that string is the next target's directory it is the same"
  " directory; the test is a guard, not a fix")
M("append-offset-not-set", "end_regular",
  [("(opt.append && lseek(out, outend, SEEK_SET) < 0)", "0")],
  "-a: what follows the old content is written over it", "append")
M("duplicate-candidates-none", "candidates",
  [("\t\t\tif (bit_is_set(seen, k))\n\t\t\t\tset_bit(twice, k);\n", "")],
  "no target is taken as one that may share its place: a target given"
  " twice, or twice where case is ignored, is not found", "many")
M("duplicate-candidates-no-backup", "candidates",
  [("\t\t\tset_bit(twice, k);\n\tfor (i = 0; i < njobs; i++)",
    "\t\t\t;\n\tfor (i = 0; i < njobs; i++)")],
  "-b: a target that is another's backup name is not found among the"
  " targets that may share a place", "many")
M("duplicate-candidates-case-kept", "place_bit",
  [("(fold ? tolower((unsigned char)*name) :\n\t\t    *name)", "*name")],
  "where case is ignored, two names that differ in case only are hashed"
  " apart: the same file given twice is not found", "many")
M("dirtab-not-grown", "share_dir",
  [("\t\tif (2 * ++run->ndirs > run->dirtabsize)\n\t\t\tgrow_dirtab(run);\n", "")],
  "the table of directories does not grow: past 16 directories a"
  " batch loops for ever looking for a free slot", "many")
M("ring-not-grown", "add_open_dir",
  [("\tif (run->nopen == run->ringsize)\n\t\tgrow_ring(run);\n", "")],
  "the ring of open directories does not grow: past 16 directories open,"
  " the oldest is overwritten and never closed for the limit", "fdlimit")
M("name-freed-in-target", "follow_link",
  [("\tif (f->name != last_name(f->target))\n\t\tfree((char *)f->name);", "\tfree((char *)f->name);")],
  "a target's name, a part of the list's string, is freed when its link is"
  " followed", "links")
M("in-place-unprobed", "create_exchange_temp",
  [("return exchange(f, XFS_EXCHANGE_RANGE_DRY_RUN);", "return 0;")],
  "--in-place where the exchange cannot be done: found only after the input was read (a command ran)",
  "inplace")
M("in-place-set-id", "check_in_place", [("if ((f->st.st_mode & (S_ISUID | S_ISGID)) && geteuid() != 0)", "if (0)")],
  "--in-place by a user clears a set-ID bit", "inplace")

# --- --check against the run (issue 54; found by tests/differential)
M("check-duplicates-among-failed", "has_place",
  [("return j->resolved;", "return j->state != FAILED;")],
  "--check leaves out of the duplicates a target a later check fails: it"
  " says 1 where the run says 2", "check")
M("check-C-replaceable-fails", "check_job",
  [("(!may_stay(j) && check_replaceable(j, 0) < 0)", "check_replaceable(j, 0) < 0")],
  "--check -C fails an immutable file or a mount point a run leaves"
  " unchanged (exit 0)", "check")
M("check-C-owner-fails", "check_owner",
  [("if (may_stay(f)) {", "if (0) {")],
  "--check -C fails an owner nobody cannot keep, where a run leaves the"
  " file unchanged (exit 0)", "check")
M("check-C-backup-fails", "check_backup",
  [("\tif (!may_stay(f))\n\t\treturn -1;", "\treturn -1;")],
  "--check -C fails a backup name a run with nothing changed never needs", "check")
M("check-makedirs-not-shared", "share_missing_dirs",
  [("\t\t\tv[i].job->dir = v[i - 1].job->dir;", "\t\t\t;")],
  "--check -p: a target given twice in a missing directory passes; the"
  " run says 2", "check")
M("check-makedirs-resolved", "check_job",
  [("\t\tj->resolved = 0;", "\t\t;")],
  "--check -p where the directories cannot be made: a duplicate says 2,"
  " the run fails at step 1 (1)", "check")
M("too-long-units-unchecked", "name_too_long",
  [("\treturn units > (size_t)max;", "\treturn 0;")],
  "--check -p: a name over 255 passes; the run fails", "check")
M("may-stay-meta-ignored", "may_stay",
  [("&& !f->changes && meta_unchanged(f);", "&& !f->changes;")],
  "--check -C -m 0600 on an immutable file warns (exit 0); the run fails (1)", "check")
M("check-makedirs-spelled-apart", "dir_key",
  [("if (n == 0 || (n == 1 && *p == '.'))\n\t\t\tcontinue;", "")],
  "--check -p: n/x/a and n/x//a (or ./n/x/a) are two places; the run"
  " says given twice (2)", "check")
M("case-paths-unchecked", "check_folded_paths",
  [("\t\t    ignores_case(run, v[i - 1].job, v[i].job, NULL)) {", "\t\t    0) {")],
  "exFAT: D/a and d/a both replaced, one content lost", "backup")
M("case-paths-as-given", "kernel_path",
  [("if ((n = readlink(proc, dir, sizeof dir - 1)) < 0)", "if ((n = 0) != 0)")],
  "exFAT: D/a and ./d/a both replaced, one content lost (the paths as"
  " given compared, not the kernel's)", "backup")
M("check-C-append-unwritable", "check_writable",
  [("if (may_stay(f) && compares_first(f) &&", "if (may_stay(f) &&")],
  "--check -C -a in a directory that cannot be written warns (0); the"
  " run always fails (1)", "check")

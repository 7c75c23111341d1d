/* SPDX-License-Identifier: ISC */
/*
 * ponywrite - replace a file so that a crash leaves either its complete old
 * content or its complete new content, never an empty or partial file.
 *
 * The input (standard input, -i SOURCE, or the output of a command) is copied
 * into a temporary file created in the target's own directory.  One file is
 * the many-files case with one target.  The protocol, one function each
 * below, for each target:
 *
 *	1. resolve_target	find the real file and open its directory
 *	2. create_temp		.NAME.RANDOM, O_EXCL|O_NOFOLLOW, mode 0600
 *	3. fill_temp		copy the input (or run the command) into it,
 *				writing large input behind in windows; with
 *				-C, fill_if_changed compares first and makes
 *				2 and 3 only where the content differs
 *	4. apply_metadata	owner, attributes, then mode, on the descriptor
 *	5. flush_new		fsync the temporary file, or where the journal
 *				orders it (ext4, XFS) or its flush after the
 *				rename carries it (btrfs) wait for its data;
 *				a batch's: flush_new_files, one syncfs per
 *				file system
 *	6. rename_job		rename it over the target, once every target
 *				has passed step 5
 *	7. flush_dirs		fsync the directory (on btrfs, one target: the
 *				renamed file)
 *
 * prepare_all makes steps 1 to 5 for every target, commit_all 6 and 7.  Any
 * failure before step 6 removes the temporary files and leaves every target
 * as it was.  Only after step 7 does ponywrite exit 0.
 *
 * The sections of this file (grep '^/\* ====') follow the order of the run:
 * errors and messages; system calls; options; signals; step 1, resolving the
 * target and the kernel's protections; the directories of a run (held,
 * borrowed, opened again); locks; the new file's metadata, decided; steps
 * 2 to 5, the last of them the flush plan; the checks before the first
 * rename; steps 6 and 7; the run, for every target; main.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <sys/types.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Portability: capability-named switches, nothing OS-named below this block. */
#if defined(__linux__)
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#define HAVE_SPLICE 1
#define HAVE_COPY_FILE_RANGE 1
#define HAVE_PROCFS_MAGIC 0x9fa0	/* statfs f_type of /proc */
#define HAVE_SYNCFS 1
#define HAVE_EXT4_MAGIC	0xef53		/* ... of ext4 (and ext2, ext3) */
#define HAVE_XFS_MAGIC	0x58465342	/* ... of XFS */
#define HAVE_UNIT_NAMES_MAGIC	{ 0x65735546, 0x2011bab0, 0x7366746e, 0x4d44 }
				/* ... of FUSE, exFAT, NTFS, FAT: names
				   counted in UTF-16 units, not bytes */
#define HAVE_PSEUDO_MAGIC { 0x9fa0, 0x62656572, 0x64626720, 0x74726163, \
	0x73636673, 0x62656570, 0x27e0eb, 0x63677270, 0xde5e81e4 }
				/* ... of proc, sysfs, debugfs, tracefs,
				   securityfs, configfs, cgroup, cgroup2,
				   efivarfs: a size that says nothing */
#endif
#ifdef SYNC_FILE_RANGE_WRITE
#define HAVE_SYNC_FILE_RANGE 1
#define SYNC_RANGE_WAIT	(SYNC_FILE_RANGE_WAIT_BEFORE | \
	SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
#endif
#ifdef __has_include
#if __has_include(<sys/random.h>)
#include <sys/random.h>
#define HAVE_GETRANDOM 1
#endif
/* Linux's f*xattr signatures; macOS has other ones (and no POSIX ACLs there). */
#if __has_include(<sys/xattr.h>) && defined(__linux__)
#include <sys/xattr.h>
#define HAVE_XATTR 1
#endif
/* FS_IOC_GETFLAGS: chattr's +i and +a, which forbid a rename. */
#if __has_include(<linux/fs.h>) && defined(__linux__)
#include <linux/fs.h>
#endif
#endif
#if defined(FS_IOC_GETFLAGS) && defined(FS_IMMUTABLE_FL) && \
    defined(FS_APPEND_FL)
#define HAVE_CHATTR_FLAGS 1
#endif
/* statx tells a mount point (a bind-mounted file) from a file. */
#ifdef STATX_ATTR_MOUNT_ROOT
#define HAVE_STATX_MOUNT_ROOT 1
#endif
/*
 * --in-place: XFS_IOC_EXCHANGE_RANGE (Linux 6.10, ioctl_xfs_exchange_range(2))
 * swaps two files' contents, crash-atomically; defined here as in
 * xfs_fs.h, which few systems install.
 */
#if defined(__linux__) && defined(O_TMPFILE) && defined(_IOW)
#include <stdint.h>
struct xfs_exchange_range {
	int32_t	 file1_fd;
	uint32_t pad;
	uint64_t file1_offset;
	uint64_t file2_offset;
	uint64_t length;
	uint64_t flags;
};
#define XFS_IOC_EXCHANGE_RANGE	_IOW('X', 129, struct xfs_exchange_range)
#define HAVE_EXCHANGE_RANGE 1
#endif
#define XFS_EXCHANGE_RANGE_TO_EOF	(1ULL << 0)
#define XFS_EXCHANGE_RANGE_DRY_RUN	(1ULL << 2)
#ifndef ENOTSUP
#define ENOTSUP EOPNOTSUPP
#endif
#ifndef ENODATA
#define ENODATA ENOATTR
#endif

#define VERSION		"0.1.0"
#define MAX_HOPS	40		/* symbolic links followed, as SYMLOOP_MAX */
#define RANDOM_LEN	12		/* random characters in a temporary name */
#define BUFSIZE		(128 * 1024)
#define CHUNK		(1 << 30)	/* bytes asked of splice */
#define MAX_OFF		((off_t)1 << 62)
#define BEHIND_FROM	((off_t)64 << 20)	/* write behind past this size */
#define WINDOW		((off_t)8 << 20)	/* ... a window at a time */
#define STEP_FDS	16		/* descriptors a step opens besides the
					   directories' (with room to spare) */
#define FLUSH_DEPTH	32		/* a batch's new files whose data is
					   on its way to the disk at once */

/*
 * The options: written by parse_options (and parse_owner, parse_wait) only,
 * read-only afterwards (make lint checks it).  What differs from one target
 * to the next is in its struct file.
 */
static struct {
	int	 append, backup, check, ifchanged, inplace, lock, noempty,
		 nofollow;
	int	 parents, printchanged, sync, verbose;
	int	 null;			/* -z: --print-changed's and --check's
					   lines end with NUL */
	double	 wait;			/* -w seconds; -1: wait forever */
	const char *waitarg;		/* ... as the user typed them */
	const char *input;		/* -i, NULL: standard input */
	const char *mode;
	uid_t	 uid;			/* (uid_t)-1: keep or default */
	gid_t	 gid;
	const char *suffix;
	const char *target;		/* the one-file form's, as typed */
	char	**command;		/* NULL: not command mode */
	const char *targetdir;		/* -t DIRECTORY */
	const char *batch;		/* --batch=LIST */
	int	 failstatus;		/* 1, or 125 in command mode */
} opt = { .sync = 1, .wait = -1, .uid = (uid_t)-1, .gid = (gid_t)-1,
    .suffix = "~", .failstatus = 1 };

/*
 * What a target keeps of its file's stat(2), the fields named as there: a
 * batch keeps one per target.
 */
struct oldstat {
	dev_t	 st_dev;
	ino_t	 st_ino;
	off_t	 st_size;
	mode_t	 st_mode;
	uid_t	 st_uid;
	gid_t	 st_gid;
};

/*
 * A file to replace: the target (one, or each of -t's and --batch's), its
 * place, its temporary file, kept from one step to the next.
 */
struct file {
	const char *target;		/* as given */
	const char *source;
	char	*dirpath;		/* its real directory, for messages */
	const char *name;		/* its name in that directory: in
					   target, or allocated (a link's) */
	size_t	 dir;			/* the first job in that directory */
	dev_t	 dev;			/* the file system of that directory */
	ino_t	 ino;
	struct oldstat st;
	/* cppcheck-suppress unusedStructMember ; write_behind's *at */
	off_t	 behind;		/* write-behind: the first window not
					   yet written out, MAX_OFF for none */
	/* Shared with the signal handler: "" or NULL when there is none. */
	char	*tmpname;		/* the temporary file, sized for it */
	char	*bakname;		/* hidden link for -b or FL_KEEP_OLD */
	char	*lockname;		/* -l lock file we hold */
	int	 dirfd;			/* its directory: on the first job
					   there, held, or -1 if closed for
					   the descriptor limit; on another,
					   borrowed for a step (use_dir) */
	int	 fd;			/* read descriptor of the old file, or -1 */
	int	 in;			/* the input, while it is open, or -1 */
	int	 newfd;			/* the temporary file, or -1 */
	int	 keptfd;		/* the new file, kept for
					   flush_renamed_files, or -1 */
	struct {			/* the new file's metadata */
		mode_t	 mode;
		uid_t	 uid;
		gid_t	 gid;
	} meta;
	/* Bit fields: a batch keeps one struct file a target. */
	unsigned exists : 1;		/* something has that name */
	unsigned regular : 1;		/* ... and it is a regular file */
	unsigned pathonly : 1;		/* fd is an O_PATH one: not readable */
	unsigned linked : 1;		/* reached through a symbolic link */
	unsigned unnamed : 1;		/* its new file is made unnamed, and
					   named once complete: needs_unnamed */
	unsigned makedirs : 1;		/* --check -p: dirfd is the last of
					   its directories that exists */
	unsigned resolved : 1;		/* step 1 found its place (has_place) */
	unsigned changes : 1;		/* --check -C -a: its input is a file
					   with something to append (appends) */
	unsigned folding : 2;		/* on a directory's first job: does it
					   ignore case?  0 not asked, 1, 2 no */
	unsigned randomold : 1;		/* on a directory's first job: a target
					   there is named as a kept link is
					   (link_old): random names only */
	unsigned dirfailed : 1;		/* step 1 could not open its directory,
					   said once for the targets after it
					   there (-t): resolve_job */
	unsigned flushdir : 2;		/* FLUSH_*, on a directory's first job:
					   what its flush after the renames
					   makes durable */
	unsigned bakfixed : 1;		/* bakname is link_old's fixed name */
	unsigned plan : 8;		/* its file system's flush plan */
	unsigned flushes : 12;		/* FL_*: plan_flushes */
	unsigned state : 3;		/* enum state */
	unsigned status : 8;		/* the exit status if it fails:
					   opt.failstatus, or the command's */
};

enum state { TODO, FAILED, UNCHANGED, READY, REPLACED };

enum { FLUSH_RENAMED = 1, FLUSH_UNCHANGED = 2 };

/* Shared with the signal handler. */
static volatile pid_t child;
static volatile sig_atomic_t caught;
static volatile sig_atomic_t lock_timeout;	/* -w: the time is up */
static sigset_t fatalsigs, origmask;
static sigset_t cmdmask;			/* as it was on entry, for a command */
static int stdin_closed;		/* it holds a placeholder, not an input */
static const int fatal[] = { SIGHUP, SIGINT, SIGPIPE, SIGTERM };
static struct sigaction origact[sizeof fatal / sizeof fatal[0]], origxfsz,
    origchld;

/*
 * The files: one, or many (-t, --batch).  The signal handler removes the
 * litter of jobs[0] to jobs[njobs - 1].
 */
static struct file *jobs;
static size_t njobs;

/* The directory of a source, kept for the next (open_source). */
struct srcdir {
	char	*path;			/* as given, up to its last '/' */
	char	*at;			/* as the walk named it (messages) */
	int	 fd;			/* opened for search only, or -1 */
};

/*
 * What a run keeps besides its files, from one step to the next; a local of
 * replace_all, passed to the steps that need it.
 */
struct run {
	int	 single;		/* the one-file form */
	char	*list;			/* --batch's list, whole */
	size_t	*dirtab;		/* 1 + the first job of each directory,
					   hashed by (device, inode) */
	size_t	 dirtabsize;		/* a power of two, over 2 × ndirs */
	size_t	 ndirs;			/* directories in it */
	size_t	*opendirs;		/* the first jobs of the directories
					   open, oldest first: a ring, grown
					   as they are opened */
	size_t	 ringsize, oldest, nopen;
	size_t	 maxdirs;		/* directories open at once, at most */
	size_t	 held;			/* new files' descriptors kept until
					   after the renames (FL_KEEPFD) */
	size_t	 depth;			/* new files flushed at once, at most:
					   flush_later */
	size_t	 nflushing, nextflush;	/* how many are, from which job on */
	struct file *borrower;		/* the target whose step has its
					   directory's descriptor: use_dir */
	int	 perfile;		/* flush each file, not each file
					   system */
	int	 late;			/* the status of "replaced, but": 3, or
					   125 in command mode */
	int	 but;			/* replaced, but a backup was not
					   renamed, or an exchange not
					   flushed: late */
	mode_t	 umask;			/* the process's, for new files */
	int	 linkrules;		/* fs.protected_hardlinks binds the
					   caller: check_keep_old */
	int	 fowner;		/* the caller has CAP_FOWNER */
	int	 anyowner;		/* ... CAP_CHOWN: can_give_owner */
	uid_t	 euid;			/* its user: apply_metadata */
	struct srcdir src;		/* the directory of the last source */
};

static char buf[BUFSIZE], cmpbuf[BUFSIZE];

static void
usage(FILE *fp)
{
	fputs("usage: ponywrite [-abCElpPv] [-i source] [-m mode]"
	    " [-o owner[:group]]\n"
	    "                 [-g group] [-S suffix] [-w seconds] [--no-sync]"
	    " [--in-place]\n"
	    "                 [--check | --print-changed] [-z]\n"
	    "                 target [command [argument ...]]\n"
	    "       ponywrite -t directory [-bCEpPv] [-m mode] [-o owner[:group]]"
	    "\n                 [-g group] [-S suffix] [--no-sync]\n"
	    "                 [--check | --print-changed] [-z] source ...\n"
	    "       ponywrite --batch=list [-bCEpPv] [-m mode]"
	    " [-o owner[:group]] [-g group]\n"
	    "                 [-S suffix] [--no-sync]"
	    " [--check | --print-changed] [-z]\n"
	    "       ponywrite --help | --version\n", fp);
}

/* --help: after the synopsis, what each option does. */
static const char helptext[] =
    "\nReplace TARGET atomically and durably with standard input,"
    " SOURCE, or the\noutput of COMMAND.  Options come before TARGET;"
    " what follows it is COMMAND.\nWith -t or --batch, replace many"
    " files; none before all of them are on disk.\n\n"
    "  -a, --append            append the input to the old content"
    " (implies -l)\n"
    "  -b, --backup            keep the previous version as TARGET~\n"
    "  -C, --if-changed        leave TARGET alone if nothing would"
    " change\n"
    "  -E, --no-empty          refuse to replace TARGET with empty"
    " input\n"
    "  -g, --group=GROUP       group of the new file\n"
    "  -i, --input=SOURCE      read SOURCE instead of stdin"
    " (-: stdin, even a tty)\n"
    "  -l, --lock              serialize with other ponywrite -l runs\n"
    "  -m, --mode=MODE         mode of the new file (octal or"
    " symbolic)\n"
    "  -o, --owner=OWNER[:GROUP]\n"
    "                          owner (and group) of the new file\n"
    "  -p, --parents           create missing parent directories\n"
    "  -P, --no-dereference    replace a symbolic link itself\n"
    "  -S, --suffix=SUFFIX     backup suffix instead of ~\n"
    "  -t, --target-directory=DIRECTORY\n"
    "                          each SOURCE replaces DIRECTORY/its"
    " name\n"
    "  -v, --verbose           say what was done\n"
    "  -w, --wait=SECONDS      wait at most SECONDS for the lock"
    " (implies -l)\n"
    "  -z, --null              --print-changed and --check end each"
    " line with NUL\n"
    "      --batch=LIST        replace the TARGET\\0SOURCE\\0 pairs of"
    " LIST (-: stdin)\n"
    "      --check             say what a run would do, write nothing\n"
    "      --in-place          exchange TARGET's content, keeping its"
    " inode (XFS)\n"
    "      --no-sync           keep old-or-new, skip the directory"
    " flush\n"
    "      --print-changed     print TARGET on stdout if it changed\n"
    "      --help              print this help and exit\n"
    "      --version           print the version and exit\n"
    "      --                  end the options\n"
    "\nSee ponywrite(1) for the details.\n";

static void
help(void)
{
	usage(stdout);
	fputs(helptext, stdout);
}

/* ==== Errors and messages ==== */

/* Remove what we made, say why, exit. */

static void warnx(const char *, const char *, ...);
struct file;
static const char *chattr_refusal_at(const struct file *, const char *);

/* Does litter name NAME exist (it is NULL or "" when it does not)? */
static int
named(const char *name)
{
	return name != NULL && name[0] != '\0';
}

/*
 * Remove NAME from DIRFD (DIR in messages).  One that cannot be removed,
 * as on a file system turned read-only, is named when TELL allows it (not
 * in a signal handler), so that its owner can remove it later.
 */
static void
unlink_litter(int dirfd, const char *dir, char *name, const char *what,
    int tell)
{
	if (!named(name))
		return;
	/* DIRFD -1: its directory could not be opened again (errno). */
	if ((dirfd < 0 || (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)) &&
	    tell)
		warnx(dir, "cannot remove the %s %s: %s", what, name,
		    strerror(errno));
	name[0] = '\0';
}

/*
 * Directory D (a directory's first job) again, by its path, if it still is
 * the same one (device and inode): its descriptor, or -1 (errno; ESTALE if
 * another directory has that path now).  Async-signal-safe.
 */
static int
reopen_dir(const struct file *d)
{
	struct stat st;
	int fd = open(d->dirpath, O_RDONLY | O_DIRECTORY | O_NONBLOCK |
	    O_CLOEXEC);

	if (fd < 0 || (fstat(fd, &st) == 0 && st.st_dev == d->dev &&
	    st.st_ino == d->ino))
		return fd;
	close(fd);
	errno = ESTALE;
	return -1;
}

/*
 * FL_KEEP_OLD's link of F in DIRFD; under its fixed name (link_old), only
 * while it still is F's old file: that name may be another's by now, a
 * target of that name.
 */
static void
unlink_kept_link(int dirfd, struct file *f, int tell)
{
	struct stat st;

	if (dirfd >= 0 && f->bakfixed && named(f->bakname) &&
	    fstatat(dirfd, f->bakname, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (st.st_dev != f->st.st_dev || st.st_ino != f->st.st_ino))
		f->bakname[0] = '\0';
	unlink_litter(dirfd, f->dirpath, f->bakname, "old file's hidden link",
	    tell);
}

/*
 * F's temporary file, hidden link and lock file, those that exist, from the
 * descriptor of its directory's first job (opened again if it was closed).
 */
static void
remove_file_litter(struct file *f, int tell)
{
	const struct file *d = &jobs[f->dir];
	int fd = d->dirfd, reopened = -1;

	if (!named(f->tmpname) && !named(f->bakname) && !named(f->lockname))
		return;
	if (fd < 0)
		fd = reopened = reopen_dir(d);
	unlink_litter(fd, f->dirpath, f->tmpname, "temporary file", tell);
	/* FL_KEEP_OLD's link of a target renamed already goes only after its
	   directory's flush (drop_old_links). */
	if (opt.backup)
		unlink_litter(fd, f->dirpath, f->bakname, "backup link", tell);
	else if (f->state != REPLACED)
		unlink_kept_link(fd, f, tell);
	if (f->lockname != NULL)
		unlink_litter(fd, f->dirpath, f->lockname, "lock file", tell);
	if (reopened >= 0)
		close(reopened);
}

/* Every target's: on the way out, and from the signal handler. */
static void
remove_litter(int tell)
{
	int e = errno;
	size_t i;

	for (i = 0; i < njobs; i++)
		remove_file_litter(&jobs[i], tell);
	errno = e;
}

/* The message, however long; FMT itself if there is no memory for it. */
static char *
vformat(const char *fmt, va_list ap)
{
	va_list copy;
	char *msg;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0 || (msg = malloc((size_t)n + 1)) == NULL)
		return NULL;
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	return msg;
}

static void
vwarnx(const char *path, const char *fmt, va_list ap)
{
	char *msg = vformat(fmt, ap);

	if (path != NULL)
		fprintf(stderr, "ponywrite: %s: %s\n", path, msg ? msg : fmt);
	else
		fprintf(stderr, "ponywrite: %s\n", msg ? msg : fmt);
	free(msg);
}

static void
warnx(const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx(path, fmt, ap);
	va_end(ap);
}

/*
 * A target's failure: the message, and in command mode what became of the
 * target, since 125 alone does not say.
 */
static void
vfailed(const char *path, const char *fmt, va_list ap)
{
	char *msg = vformat(fmt, ap);
	const char *text = msg != NULL ? msg : fmt;

	warnx(path, "%s%s", text, opt.command != NULL &&
	    strstr(text, "not replaced") == NULL ? "; target not replaced" : "");
	free(msg);
}

/* Report a failure of PATH; a step returns what this does, -1. */
static int
failed(const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfailed(path, fmt, ap);
	va_end(ap);
	return -1;
}

static int
failed_errno(const char *path)
{
	return failed(path, "%s", strerror(errno));
}

static _Noreturn void
fail(const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfailed(path, fmt, ap);
	va_end(ap);
	remove_litter(1);
	exit(opt.failstatus);
}

/* A usage error and the synopsis; 2, the exit status of usage errors. */
static int
usage_error(const char *fmt, const char *arg)
{
	fputs("ponywrite: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	usage(stderr);
	return 2;
}

static int
try_help(void)
{
	fputs("\nTry 'ponywrite --help' for more information.\n", stderr);
	return 2;
}

/* A bad option or value: one line and a hint, as GNU tools give; 2. */
static int
usage_hint(const char *fmt, ...)
{
	va_list ap;

	fputs("ponywrite: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	return try_help();
}

/* Name a bad long option ARG as the user typed it; 2. */
static int
bad_long_option(const char *arg, const struct option *lo)
{
	const char *name = arg + 2;
	const struct option *o, *hit = NULL;
	int len = (int)strcspn(name, "="), n = 0;

	for (o = lo; o->name != NULL && n < 2; o++)
		if (strncmp(o->name, name, len) == 0) {
			hit = o;
			n = strlen(o->name) == (size_t)len ? 2 : n + 1;
		}
	if (n == 0)
		return usage_hint("unrecognized option '%s'", arg);
	if (strlen(hit->name) != (size_t)len && n > 1) {
		fprintf(stderr, "ponywrite: option '--%.*s' is ambiguous;"
		    " possibilities:", len, name);
		for (o = lo; o->name != NULL; o++)
			if (strncmp(o->name, name, len) == 0)
				fprintf(stderr, " '--%s'", o->name);
		return try_help();
	}
	if (name[len] == '=')
		return usage_hint("option '--%s' doesn't allow an argument",
		    hit->name);
	return usage_hint("option '--%s' requires an argument", hit->name);
}

/* Values of the options that have no letter, out of the way of letters. */
enum { OPT_LONG = 256, OPT_BATCH, OPT_CHECK, OPT_HELP, OPT_INPLACE,
    OPT_NOSYNC, OPT_PRINT, OPT_VERSION };

/*
 * getopt_long's error: a long option's is named from its text, which the
 * failed element ends with; a short option's is in optopt.  2.
 */
static int
bad_option(int ch, const char *shortopts, int argc, const char *const argv[],
    const struct option *lo)
{
	/* musl counts past the end for a missing argument. */
	const char *arg = argv[(optind > argc ? argc : optind) - 1];

	if (ch == ':' ? strncmp(arg, "--", 2) == 0 : optopt == 0 ||
	    optopt >= OPT_LONG || strchr(shortopts, optopt) != NULL)
		return bad_long_option(arg, lo);
	if (ch == ':')
		return usage_hint("option requires an argument -- '%c'",
		    optopt);
	return usage_hint("invalid option -- '%c'", optopt);
}

/*
 * After --help and --version: a full disk must not go unnoticed.  The exit
 * status: 0, or opt.failstatus if stdout could not be written.
 */
static int
close_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		failed_errno("stdout");
		return opt.failstatus;
	}
	return 0;
}

static void *
xmalloc(size_t n)
{
	void *p = malloc(n);

	if (p == NULL)
		fail(NULL, "%s", strerror(errno));
	return p;
}

static void *
xrealloc(void *p, size_t n)
{
	if ((p = realloc(p, n)) == NULL)
		fail(NULL, "%s", strerror(errno));
	return p;
}

/* N objects of SIZE bytes, zeroed. */
static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (p == NULL)
		fail(NULL, "%s", strerror(errno));
	return p;
}

/* ==== System calls ==== */

/* Wrappers: retry EINTR, finish short writes. */

static int
xwrite(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

static int
xpwrite(int fd, const char *p, size_t n, off_t off)
{
	ssize_t w;

	while (n > 0) {
		if ((w = pwrite(fd, p, n, off)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
		off += w;
	}
	return 0;
}

static ssize_t
xread(int fd, void *p, size_t n)
{
	ssize_t r;

	while ((r = read(fd, p, n)) < 0 && errno == EINTR)
		;
	return r;
}

static ssize_t
xpread(int fd, void *p, size_t n, off_t off)
{
	ssize_t r;

	while ((r = pread(fd, p, n, off)) < 0 && errno == EINTR)
		;
	return r;
}

/* An fsync error is final: only EINTR, which means nothing was done, is retried. */
static int
flush_fd(int fd)
{
	int r;

#ifdef F_FULLFSYNC
	if (fcntl(fd, F_FULLFSYNC) == 0)
		return 0;
#endif
	while ((r = fsync(fd)) < 0 && errno == EINTR)
		;
	return r;
}

#ifdef HAVE_SYNC_FILE_RANGE
static int
sync_range(int fd, off_t off, off_t len, unsigned int flags)
{
	int r;

	while ((r = sync_file_range(fd, off, len, flags)) < 0 && errno == EINTR)
		;
	return r;
}
#endif

static int
xopenat(int atfd, const char *path, int flags, mode_t mode)
{
	int fd;

	while ((fd = openat(atfd, path, flags, mode)) < 0 && errno == EINTR)
		;
	return fd;
}

static char *
join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);

	if (strcmp(dir, ".") == 0)
		snprintf(p, n, "%s", name);
	else
		snprintf(p, n, "%s%s%s", dir,
		    dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	return p;
}

/*
 * How many bytes of S, at most KEEP, end between UTF-8 characters, never
 * inside one: NTFS and exFAT refuse a name that is not valid UTF-8.
 */
static size_t
utf8_fit(const char *s, size_t keep)
{
	if (keep < strlen(s))
		while (keep > 0 && (s[keep] & 0xc0) == 0x80)
			keep--;		/* a continuation byte */
	return keep;
}

/*
 * ".NAME.TAG" in DST (NAME_MAX + 1 bytes), NAME shortened to fit MAX, the
 * directory's NAME_MAX, as a temporary name is (hidden_name); where it is
 * and UNIQUE asks, with "-HASH" of the whole NAME after it, so that two
 * names that begin alike are told apart.
 */
static void
tagged_name(char *dst, const char *name, const char *tag, long max,
    int unique)
{
	size_t room = strlen(tag) + 2, keep;
	uint32_t h = 2166136261u;	/* FNV-1a */
	const char *p;

	keep = max > (long)room ? (size_t)max - room : 0;
	if (!unique || strlen(name) <= keep) {
		snprintf(dst, NAME_MAX + 1, ".%.*s.%s",
		    (int)utf8_fit(name, keep), name, tag);
		return;
	}
	for (p = name; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(dst, NAME_MAX + 1, ".%.*s-%08lx.%s",
	    (int)utf8_fit(name, keep > 9 ? keep - 9 : 0), name,
	    (unsigned long)h, tag);
}

/* Split PATH into a directory ("." if none) and a final name. */
static int
split_path(const char *path, char **dir, char **name)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL) {
		*dir = strdup(".");
		*name = strdup(path);
	} else if (slash == path) {
		*dir = strdup("/");
		*name = strdup(slash + 1);
	} else {
		*dir = strndup(path, slash - path);
		*name = strdup(slash + 1);
	}
	if (*dir != NULL && *name != NULL)
		return 0;
	free(*dir);
	free(*name);
	*dir = *name = NULL;
	failed_errno(NULL);
	return -1;
}

/* The last component of PATH: its name in its directory. */
static const char *
last_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* ==== Options ==== */


/*
 * The permissions after an operator of a symbolic mode, from *SP (moved past
 * them), given the mode M so far.
 */
static mode_t
mode_perms(const char **sp, mode_t m)
{
	const char *s = *sp;
	mode_t perm = 0, n;

	/* As chmod(1): a copied class ("g=u") takes no letters. */
	if (*s != '\0' && strchr("ugo", *s) != NULL) {
		n = *s == 'u' ? m >> 6 & 7 : *s == 'g' ? m >> 3 & 7 : m & 7;
		*sp = s + 1;
		return n << 6 | n << 3 | n;
	}
	for (; *s != '\0' && strchr("rwxXst", *s) != NULL; s++)
		perm |= *s == 'r' ? 0444 : *s == 'w' ? 0222 : *s == 'x' ?
		    0111 : *s == 's' ? 06000 : *s == 't' ? 01000 :
		    (m & 0111 ? 0111 : 0);
	*sp = s;
	return perm;
}

/*
 * Apply chmod(1) MODE to BASE.  Without a "who", bits set in UMASK are left
 * alone, as chmod does.  Returns -1 if MODE is invalid.
 */
static int
parse_mode(const char *s, mode_t base, mode_t umask, mode_t *res)
{
	mode_t who, perm, mask, m = base;
	unsigned long n;
	char *end, op;

	if (*s >= '0' && *s <= '7') {
		n = strtoul(s, &end, 8);
		if (*end != '\0' || n > 07777)
			return -1;
		*res = n;
		return 0;
	}
	for (;;) {
		for (who = 0; *s != '\0' && strchr("ugoa", *s) != NULL; s++)
			who |= *s == 'u' ? 04700 : *s == 'g' ? 02070 :
			    *s == 'o' ? 01007 : 07777;
		mask = who != 0 ? who : 07777 & ~umask;
		if (*s == '\0' || strchr("+-=", *s) == NULL)
			return -1;
		while (*s != '\0' && strchr("+-=", *s) != NULL) {
			op = *s++;
			perm = mode_perms(&s, m);
			if (op == '+')
				m |= perm & mask;
			else if (op == '-')
				m &= ~(perm & mask);
			else
				m = (m & ~(who != 0 ? who : 07777)) |
				    (perm & mask);
		}
		if (*s == '\0')
			break;
		if (*s++ != ',')
			return -1;
	}
	*res = m;
	return 0;
}

static int
parse_number(const char *s, unsigned long *n)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*n = strtoul(s, &end, 10);
	return *end != '\0' || errno != 0 ? -1 : 0;
}

/*
 * A user name or number into UID; with GID, also that user's login group.
 * 0, or 2 after a usage error.
 */
static int
parse_user(const char *s, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;
	unsigned long n;

	if (parse_number(s, &n) == 0 && n == (uid_t)n &&
	    (uid_t)n != (uid_t)-1) {
		if (gid == NULL) {
			*uid = n;
			return 0;
		}
		/* cppcheck-suppress getpwuidCalled */
		if ((pw = getpwuid(n)) == NULL)
			return usage_hint("user '%s' has no login group", s);
	} else if ((pw = getpwnam(s)) == NULL)
		return usage_hint("unknown user: '%s'", s);
	if (gid != NULL)
		*gid = pw->pw_gid;
	*uid = pw->pw_uid;
	return 0;
}

/* A group name or number into GID; 0, or 2 after a usage error. */
static int
parse_group(const char *s, gid_t *gid)
{
	struct group *gr;
	unsigned long n;

	if (parse_number(s, &n) == 0 && n == (gid_t)n &&
	    (gid_t)n != (gid_t)-1) {
		*gid = n;
		return 0;
	}
	if ((gr = getgrnam(s)) == NULL)
		return usage_hint("unknown group: '%s'", s);
	*gid = gr->gr_gid;
	return 0;
}

/*
 * -o as chown(1): OWNER, OWNER:GROUP, OWNER: (and OWNER's login group) or
 * :GROUP.  0, or 2 after a usage error.
 */
static int
parse_owner(const char *s)
{
	const char *colon = strchr(s, ':');
	char user[256];

	if (colon == NULL)
		return parse_user(s, &opt.uid, NULL);
	if (colon == s && colon[1] == '\0')
		return usage_hint("invalid owner: '%s'", s);
	if (colon[1] != '\0' && parse_group(colon + 1, &opt.gid) != 0)
		return 2;
	if (colon == s)
		return 0;
	if ((size_t)(colon - s) >= sizeof user)
		return usage_hint("unknown user: '%.*s'", (int)(colon - s), s);
	snprintf(user, sizeof user, "%.*s", (int)(colon - s), s);
	return parse_user(user, &opt.uid, colon[1] == '\0' ? &opt.gid : NULL);
}

/* -w: seconds as flock -w takes them, fractions allowed; 0, or 2. */
static int
parse_wait(const char *s)
{
	char *end;

	errno = 0;
	opt.waitarg = s;
	opt.wait = strtod(s, &end);
	if (s[strspn(s, "0123456789.")] != '\0')
		opt.wait = -1;
	if (end == s || *end != '\0' || errno != 0 ||
	    !(opt.wait >= 0 && opt.wait <= 1e8))
		return usage_hint("invalid number of seconds: '%s'", s);
	return 0;
}

/* Many files: the targets and sources of -t or of --batch's list. */

static void
add_job(const char *target, const char *source)
{
	struct file *j = &jobs[njobs];

	memset(j, 0, sizeof *j);
	j->target = target;
	j->source = source;
	j->dirfd = j->fd = j->in = j->newfd = j->keptfd = -1;
	j->status = opt.failstatus;
	njobs++;		/* now the signal handler may look at it */
}

/*
 * -t: each SOURCE replaces DIRECTORY/NAME, NAME being its last one.  0, or
 * 2 after a usage error.
 */
static int
jobs_from_args(char **argv)
{
	const char *end, *name, *dir = opt.targetdir;
	size_t n;
	char *target;

	for (n = 0; argv[n] != NULL; n++)
		;
	if (n == 0)
		return usage_hint("missing source after -t %s", dir);
	jobs = xcalloc(n, sizeof *jobs);
	njobs = 0;
	for (; *argv != NULL; argv++) {
		for (end = *argv + strlen(*argv); end > *argv + 1 &&
		    end[-1] == '/'; end--)
			;
		for (name = end; name > *argv && name[-1] != '/'; name--)
			;
		n = end - name;
		if (strcmp(*argv, "-") == 0 || n == 0 || *name == '/' ||
		    strncmp(name, "..", n) == 0)
			return usage_hint("%s: no file name to give it in %s"
			    " (use --batch to name targets)", *argv, dir);
		target = xmalloc(strlen(dir) + n + 2);
		sprintf(target, "%s%s%.*s", strcmp(dir, ".") == 0 ? "" : dir,
		    strcmp(dir, ".") == 0 || dir[strlen(dir) - 1] == '/' ?
		    "" : "/", (int)n, name);
		add_job(target, *argv);
	}
	return 0;
}

/*
 * Read --batch's list from FD (NAME in messages) into RUN->list, checking
 * each name as it comes: /dev/zero is refused, not stored.  0 with its
 * length in *LEN and its number of pairs in *PAIRS; 2 after a usage error;
 * -1 after a read error.
 */
static int
read_list(struct run *run, int fd, const char *name, size_t *len,
    size_t *pairs)
{
	size_t size = BUFSIZE, names = 0, start = 0, i;
	char *more;
	ssize_t r;

	*len = 0;
	run->list = xmalloc(size);
	while ((r = xread(fd, run->list + *len, size - *len)) > 0) {
		for (i = *len, *len += r; i < *len; i++)
			if (run->list[i] == '\0') {
				if (i == start)
					return usage_hint("%s: an empty name in"
					    " pair %zu", name, names / 2 + 1);
				names++;
				start = i + 1;
			} else if (i - start >= PATH_MAX)
				return usage_hint("%s: a name longer than"
				    " PATH_MAX in pair %zu", name,
				    names / 2 + 1);
		if (*len == size) {
			if ((more = realloc(run->list, size *= 2)) == NULL)
				return failed_errno(name);
			run->list = more;
		}
	}
	if (r < 0)
		return failed_errno(name);
	if (start != *len || names % 2 != 0)
		return usage_hint("%s: not a list of NUL-terminated target and"
		    " source pairs", name);
	*pairs = names / 2;
	return 0;
}

static int open_walked(const char *);

/*
 * --batch: LIST holds TARGET\0SOURCE\0 pairs; read it whole.  0, 2 after a
 * usage error, or -1 after an I/O error.
 */
static int
jobs_from_list(struct run *run)
{
	/* Named in messages as -i - names it. */
	const char *name = strcmp(opt.batch, "-") == 0 ? "stdin" : opt.batch;
	size_t len = 0, pairs = 0;
	char *p;
	int fd = STDIN_FILENO, status;

	if (strcmp(opt.batch, "-") == 0 && isatty(STDIN_FILENO))
		return usage_hint("--batch=-: stdin is a terminal");
	if (strcmp(opt.batch, "-") == 0 && stdin_closed) {
		errno = EBADF;
		return failed_errno("stdin");
	}
	if (strcmp(opt.batch, "-") != 0 && (fd = open_walked(opt.batch)) < 0)
		return -1;
	status = read_list(run, fd, name, &len, &pairs);
	if (fd != STDIN_FILENO)
		close(fd);
	if (status != 0)
		return status;
	jobs = xcalloc(pairs + 1, sizeof *jobs);
	njobs = 0;
	for (p = run->list; p < run->list + len; p += strlen(p) + 1) {
		add_job(p, p + strlen(p) + 1);
		p += strlen(p) + 1;
	}
	return 0;
}

/* Standard input can be read once.  0, or 2 after a usage error. */
static int
check_sources(void)
{
	size_t stdins = 0, i;		/* sources that are "-" */

	for (i = 0; i < njobs; i++)
		stdins += strcmp(jobs[i].source, "-") == 0;
	if (stdins > 0 && opt.batch != NULL && strcmp(opt.batch, "-") == 0)
		return usage_hint("--batch=- reads the list from stdin: no"
		    " source can be -");
	if (stdins > 1)
		return usage_hint("stdin (-) can be the source of one target"
		    " only");
	return 0;
}

/*
 * -t and --batch: the options they take; -t's targets.  0, or 2 after a
 * usage error.
 */
static int
many_options(char **argv)
{
	const char *form = opt.batch != NULL ? "--batch" : "-t";

	if (opt.targetdir != NULL && opt.batch != NULL)
		return usage_hint("-t and --batch cannot be combined");
	if (opt.append || opt.input != NULL || opt.lock || opt.wait >= 0 ||
	    opt.inplace)
		return usage_hint("%s cannot be used with %s", opt.append ?
		    "-a" : opt.input != NULL ? "-i" : opt.lock ? "-l" :
		    opt.wait >= 0 ? "-w" : "--in-place", form);
	if (opt.batch != NULL && *argv != NULL)
		return usage_hint("--batch takes no operands: '%s'", *argv);
	if (opt.targetdir != NULL && *opt.targetdir == '\0')
		return usage_hint("-t needs a directory name");
	return opt.targetdir != NULL ? jobs_from_args(argv) : 0;
}

/* The options, as help() describes them. */
static const struct option longopts[] = {
	{ "append",		no_argument,		NULL, 'a' },
	{ "backup",		no_argument,		NULL, 'b' },
	{ "batch",		required_argument,	NULL, OPT_BATCH },
	{ "check",		no_argument,		NULL, OPT_CHECK },
	{ "if-changed",		no_argument,		NULL, 'C' },
	{ "in-place",		no_argument,		NULL, OPT_INPLACE },
	{ "no-empty",		no_argument,		NULL, 'E' },
	{ "group",		required_argument,	NULL, 'g' },
	{ "help",		no_argument,		NULL, OPT_HELP },
	{ "input",		required_argument,	NULL, 'i' },
	{ "lock",		no_argument,		NULL, 'l' },
	{ "mode",		required_argument,	NULL, 'm' },
	{ "no-sync",		no_argument,		NULL, OPT_NOSYNC },
	{ "owner",		required_argument,	NULL, 'o' },
	{ "parents",		no_argument,		NULL, 'p' },
	{ "print-changed",	no_argument,		NULL, OPT_PRINT },
	{ "no-dereference",	no_argument,		NULL, 'P' },
	{ "suffix",		required_argument,	NULL, 'S' },
	{ "target-directory",	required_argument,	NULL, 't' },
	{ "verbose",		no_argument,		NULL, 'v' },
	{ "version",		no_argument,		NULL, OPT_VERSION },
	{ "wait",		required_argument,	NULL, 'w' },
	{ "null",		no_argument,		NULL, 'z' },
	{ NULL,			0,			NULL, 0 }
};
static const char shortopts[] = "+:abCEg:i:lm:o:pPS:t:vw:z";

/*
 * The options, into opt: 0; 2 after a usage error; -1 after --help or
 * --version.
 */
static int
read_options(int argc, char *argv[])
{
	int ch, status = 0;

	opterr = 0;
	while (status == 0 && (ch = getopt_long(argc, argv, shortopts,
	    longopts, NULL)) != -1) {
		switch (ch) {
		case 'a': opt.append = 1; break;
		case 'b': opt.backup = 1; break;
		case 'C': opt.ifchanged = 1; break;
		case 'E': opt.noempty = 1; break;
		case 'g': status = parse_group(optarg, &opt.gid); break;
		case 'i': opt.input = optarg; break;
		case 'l': opt.lock = 1; break;
		case 'm': opt.mode = optarg; break;
		case 'o': status = parse_owner(optarg); break;
		case 'p': opt.parents = 1; break;
		case 'P': opt.nofollow = 1; break;
		case 'S': opt.suffix = optarg; break;
		case 't': opt.targetdir = optarg; break;
		case 'v': opt.verbose = 1; break;
		case 'w': status = parse_wait(optarg); break;
		case 'z': opt.null = 1; break;
		case OPT_BATCH: opt.batch = optarg; break;
		case OPT_CHECK: opt.check = 1; break;
		case OPT_HELP: help(); return -1;
		case OPT_INPLACE: opt.inplace = 1; break;
		case OPT_NOSYNC: opt.sync = 0; break;
		case OPT_PRINT: opt.printchanged = 1; break;
		case OPT_VERSION: puts("ponywrite " VERSION); return -1;
		default: status = bad_option(ch, shortopts, argc,
		    (const char *const *)argv, longopts);
		}
	}
	return status;
}

/*
 * --in-place: the target keeps its inode, and with it its mode, owner,
 * group and links; what would change them, or replace a link itself, is
 * refused.  0, or 2 (usage).
 */
static int
in_place_options(void)
{
	const char *what = opt.mode != NULL ? "-m" : opt.uid != (uid_t)-1 ?
	    "-o" : opt.gid != (gid_t)-1 ? "-g" : opt.nofollow ? "-P" :
	    opt.check ? "--check" : NULL;

	return what != NULL ? usage_hint("%s cannot be used with --in-place",
	    what) : 0;
}

/* The one-file form's operands, TARGET [COMMAND...]: 0, or 2 (usage). */
static int
one_file_options(char **argv)
{
	if ((opt.target = *argv++) == NULL)
		return usage_error("missing target%s", "");
	if (*argv != NULL)
		opt.command = argv;
	if (opt.command != NULL && opt.input != NULL)
		return usage_hint("-i cannot be combined with a command");
	/* A script that forgot its redirect must not wait for a Ctrl-D. */
	if (opt.command == NULL && opt.input == NULL && !opt.check &&
	    isatty(STDIN_FILENO))
		return usage_hint("stdin: is a terminal; use -i - to read from"
		    " it");
	if (opt.command != NULL)
		opt.failstatus = 125;
	if (opt.inplace && in_place_options() != 0)
		return 2;
	/* Two appends of the same old content would lose a line; -w waits. */
	if (opt.append || opt.wait >= 0)
		opt.lock = 1;
	return 0;
}

/*
 * 0 to go on; 2 after a usage error; -1 after --help or --version, whose
 * exit status is close_stdout()'s.
 */
static int
parse_options(int argc, char *argv[])
{
	mode_t unused;
	int status;

	if ((status = read_options(argc, argv)) != 0)
		return status;
	argv += optind;
	if (opt.mode != NULL && parse_mode(opt.mode, 0, 0, &unused) < 0)
		return usage_hint("invalid mode: '%s'", opt.mode);
	if (*opt.suffix == '\0' || strchr(opt.suffix, '/') != NULL)
		return usage_hint("invalid suffix: '%s'", opt.suffix);
	if (opt.null && !opt.printchanged && !opt.check)
		return usage_hint("-z (--null) needs --print-changed or --check");
	if (opt.check && opt.printchanged)
		return usage_hint("--check and --print-changed cannot be"
		    " combined");
	if (opt.targetdir != NULL || opt.batch != NULL)
		return many_options(argv);
	return one_file_options(argv);
}

/* ==== Signals ==== */

/* Remove the temporary files and die by the same signal. */

static _Noreturn void
die_by(int sig)
{
	remove_litter(0);
	signal(sig, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &fatalsigs, NULL);
	raise(sig);
	/* cppcheck-suppress unreachableCode */
	_exit(128 + sig);
}

/*
 * Our own write to a closed pipe (a message to a stderr nobody reads) is not
 * a reason to stop: the write fails with EPIPE and the run goes on.
 */
static int
own_sigpipe(int sig, const siginfo_t *si)
{
	return sig == SIGPIPE && si->si_code == SI_USER && si->si_pid == getpid();
}

/*
 * While the command runs, a signal is passed on to it, unless the terminal
 * sent it to the whole process group, the command included.
 */
static int
sent_to_group(const siginfo_t *si)
{
#ifdef SI_KERNEL
	return si->si_code == SI_KERNEL;
#else
	(void)si;
	return 0;
#endif
}

static void
on_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (own_sigpipe(sig, si))
		return;
	if (child > 0) {
		if (!sent_to_group(si))
			kill(child, sig);
		caught = sig;
		return;
	}
	die_by(sig);
}

static void
setup_signals(void)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigemptyset(&fatalsigs);
	for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		sigaddset(&fatalsigs, fatal[i]);
	sa.sa_mask = fatalsigs;
	/* A signal ignored on entry (nohup) stays ignored, here and in a command. */
	for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		sigaction(fatal[i], &sa, &origact[i]);
		if (origact[i].sa_handler == SIG_IGN)
			sigaction(fatal[i], &origact[i], NULL);
	}
	/* Past RLIMIT_FSIZE, fail with EFBIG and clean up instead of dying. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGXFSZ, &sa, &origxfsz);
	/* An ignored SIGCHLD (inherited across exec) would make waiting fail. */
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, &origchld);
}

static void
block_signals(void)
{
	sigprocmask(SIG_BLOCK, &fatalsigs, NULL);
}

static void
unblock_signals(void)
{
	sigprocmask(SIG_SETMASK, &origmask, NULL);
}

/*
 * A descriptor 0-2 that is closed would be reused for our own files: hold
 * its place with one that cannot be read or written, closed again on exec
 * so that a command sees what it would see if run directly.  0, or if a
 * place cannot be held 2, the exit status, with no word on a stderr that
 * may be the closed one.
 */
static int
open_std_fds(void)
{
	int fd, held;

	for (fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0) {
			/* The lowest free descriptor: fd itself. */
			held = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (held != fd)
				return 2;
			if (fd == STDIN_FILENO)
				stdin_closed = 1;
		}
	return 0;
}

/* ==== Step 1: resolving the target; the kernel's protections ==== */

/*
 * In a sticky directory DIRFD that others can write to (WRITABLE: the bits
 * that count), is a file of OWNER someone else's plant?  The kernel's rule
 * for protected_symlinks and protected_regular: only the caller's own files
 * and those of the directory's owner are trusted.  -1 if DIRFD fails.
 */
static int
planted_in(int dirfd, uid_t owner, mode_t writable)
{
	struct stat dir;

	if (fstat(dirfd, &dir) < 0)
		return -1;
	return (dir.st_mode & S_ISVTX) && (dir.st_mode & writable) &&
	    owner != geteuid() && owner != dir.st_uid;
}

#ifdef O_PATH
#define O_SEARCH_DIR	O_PATH	/* a directory passed through: search only */
#define O_LOOK		O_PATH	/* a file looked at, not opened: a FIFO
				   does not block, a device is not opened */
#else
#define O_SEARCH_DIR	O_RDONLY
#define O_LOOK		(O_RDONLY | O_NONBLOCK)
#endif

struct walk {
	int hops;	/* symbolic links followed so far */
	int refused;	/* stopped at another user's link in a sticky directory: */
	uid_t owner;	/* its owner */
	int missing;	/* --check -p: stopped where a run makes directories */
	size_t made;	/* -p: the directory that could not be made, */
	size_t in;	/* and its parent, as lengths of the path walked */
	char at[PATH_MAX];	/* the directory reached, as named (messages); */
	char link[PATH_MAX];	/* the link refused there */
};

static int walk_dir(int, const char *, int, struct walk *);

/*
 * A walk from the start: its buffers are not cleared whole, 8 KiB a target
 * that a batch of many would pay for (and that callgrind, which counts each
 * byte of rep stosb, would see instead of a loop over the targets).
 */
static void
walk_start(struct walk *w)
{
	w->hops = w->refused = w->missing = 0;
	w->owner = 0;
	w->made = w->in = 0;
	w->at[0] = w->link[0] = '\0';
}

/*
 * ID as a message names a user, or a GROUP: "nobody (65534)", "uid 1234".
 */
static void
id_name(int group, unsigned long id, char *buf, size_t n)
{
	/* cppcheck-suppress getpwuidCalled */
	const struct passwd *pw = group ? NULL : getpwuid((uid_t)id);
	/* cppcheck-suppress getgrgidCalled */
	const struct group *gr = group ? getgrgid((gid_t)id) : NULL;
	const char *name = pw != NULL ? pw->pw_name : gr != NULL ?
	    gr->gr_name : NULL;

	if (name != NULL)
		snprintf(buf, n, "%s (%lu)", name, id);
	else
		snprintf(buf, n, "%s %lu", group ? "gid" : "uid", id);
}

/* Refuse FILE, a link or a file of OWNER in the sticky directory DIR. */
static int
failed_planted(const char *file, const char *what, uid_t owner,
    const char *dir)
{
	char who[128];

	id_name(0, owner, who, sizeof who);
	return failed(file, "not %s that %s owns in the sticky directory %s",
	    what, who, *dir != '\0' ? dir : ".");
}

/* ... F's own name in its directory. */
static int
failed_planted_name(const struct file *f, const char *what, uid_t owner)
{
	char *file = join(f->dirpath, f->name);

	failed_planted(file, what, owner, f->dirpath);
	free(file);
	return -1;
}

/* DIR/NAME into BUF, as join() names it. */
static void
join_into(char *buf, size_t n, const char *dir, const char *name)
{
	if (*dir == '\0' || strcmp(dir, ".") == 0)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "%s%s%s", dir,
		    dir[strlen(dir) - 1] == '/' ? "" : "/", name);
}

static int
in_procfs(int fd)
{
#ifdef HAVE_PROCFS_MAGIC
	struct statfs fs;

	return fstatfs(fd, &fs) == 0 && fs.f_type == HAVE_PROCFS_MAGIC;
#else
	(void)fd;
	return 0;
#endif
}

/*
 * NAME in FD, which O_NOFOLLOW refused to open (errno ENOTDIR or ELOOP): 0
 * if it is a symbolic link the walk may follow, as protected_symlinks lets
 * the kernel; -1 and errno if not (EACCES: planted by another user, said in
 * W).
 */
static int
followable_link(int fd, const char *name, struct walk *w)
{
	struct stat st;
	int e = errno;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISLNK(st.st_mode)) {
		errno = e;
		return -1;
	}
	if (++w->hops > MAX_HOPS) {
		errno = ELOOP;
		return -1;
	}
	if (planted_in(fd, st.st_uid, S_IWOTH) != 0) {
		w->refused = 1;
		w->owner = st.st_uid;
		join_into(w->link, sizeof w->link, w->at, name);
		errno = EACCES;
		return -1;
	}
	return 0;
}

/* Did FLAGS open FD, a symbolic link, itself (O_PATH | O_NOFOLLOW does)? */
static int
opened_link(int fd, int flags)
{
#ifdef O_PATH
	struct stat st;

	return (flags & O_PATH) && !(flags & O_DIRECTORY) &&
	    fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
#else
	(void)fd;
	(void)flags;
	return 0;
#endif
}

/*
 * Component NAME of directory FD, opened with FLAGS (O_DIRECTORY for a
 * directory).  A symbolic link is followed here, by the sticky-directory
 * rule, never by the kernel; but for the links of /proc, which stand for
 * open files (/dev/stdin, -i <(command)) and are in no sticky directory.
 */
static int
walk_component(int fd, const char *name, int flags, struct walk *w)
{
	char link[PATH_MAX];
	ssize_t len;
	int sub;

	sub = xopenat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0);
	if (sub >= 0 && opened_link(sub, flags)) {
		close(sub);
		sub = -1;
		errno = ELOOP;
	}
	if (sub >= 0) {
		join_into(link, sizeof link, w->at, name);
		memcpy(w->at, link, strlen(link) + 1);
		return sub;
	}
	if ((errno != ENOTDIR && errno != ELOOP) ||
	    followable_link(fd, name, w) < 0)
		return -1;
	if (in_procfs(fd))
		return xopenat(fd, name, flags | O_CLOEXEC, 0);
	if ((len = readlinkat(fd, name, link, sizeof link)) < 0)
		return -1;
	if ((size_t)len >= sizeof link) {
		errno = ENAMETOOLONG;
		return -1;
	}
	link[len] = '\0';
	return walk_dir(fd, link, flags, w);
}

/*
 * Open PATH, relative to ATFD (named W->at in messages), one component at
 * a time: the sticky-directory rule applies to every link on the way,
 * whatever fs.protected_symlinks says (SPEC: Targets).  The last component
 * is opened with FLAGS, the directories before it for search only.
 */
static int
walk_dir(int atfd, const char *path, int flags, struct walk *w)
{
	char *p, *s, *next;
	int fd, sub, e;

	if (*path == '\0') {
		errno = ENOENT;
		return -1;
	}
	if ((p = strdup(path)) == NULL)
		return -1;
	s = p + strspn(p, "/");
	if (*p == '/')
		strcpy(w->at, "/");
	fd = xopenat(atfd, *p == '/' ? "/" : ".", (*s == '\0' ? flags :
	    O_SEARCH_DIR | O_DIRECTORY) | O_CLOEXEC, 0);
	for (; fd >= 0 && *s != '\0'; s = next) {
		next = s + strcspn(s, "/");
		if (*next != '\0')
			*next++ = '\0';
		next += strspn(next, "/");
		sub = walk_component(fd, s, *next == '\0' ? flags :
		    O_SEARCH_DIR | O_DIRECTORY, w);
		e = errno;
		close(fd);
		errno = e;
		fd = sub;
	}
	free(p);
	return fd;
}

static int
open_dir_at(int atfd, const char *path, struct walk *w)
{
	return walk_dir(atfd, path, O_RDONLY | O_DIRECTORY, w);
}

/* PATH, which walk W could not open (errno): a planted link named first. */
static int
failed_walk(const char *path, const struct walk *w)
{
	if (w->refused)
		return failed_planted(w->link, "following a link", w->owner,
		    w->at);
	return failed_errno(path);
}

/* PATH, a file to read (--batch's list), opened as walk_dir walks it. */
static int
open_walked(const char *path)
{
	struct walk w;
	int fd;

	walk_start(&w);
	if ((fd = walk_dir(AT_FDCWD, path, O_RDONLY, &w)) < 0)
		return failed_walk(path, &w);
	return fd;
}

/*
 * -p: directory NAME made in FD, and durable once FD is flushed.  FD is
 * opened for the flush first, so that a parent the caller may write but not
 * read is found before anything is made there.  One that exists is fine.
 */
static int
make_dir(int fd, const char *name)
{
	int dir = -1, r, e;

	if (opt.sync && (dir = xopenat(fd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC, 0)) < 0)
		return -1;
	r = mkdirat(fd, name, 0777) < 0 && errno != EEXIST ? -1 : 0;
	if (r == 0 && dir >= 0)
		r = flush_fd(dir);
	e = errno;
	if (dir >= 0)
		close(dir);
	errno = e;
	return r;
}

static int name_too_long(int, const char *);

/*
 * --check -p: is S, or a name after it in REST, a directory of P to make in
 * FD, too long for FD's file system?  1, with errno and W as a run's mkdir
 * leaves them (failed_dir), or 0.
 */
static int
missing_too_long(int fd, const char *p, char *s, char *rest, struct walk *w)
{
	char *next;

	for (;;) {
		if (strcmp(s, "..") == 0)	/* another file system, maybe */
			return 0;
		if (*s != '\0' && name_too_long(fd, s)) {
			w->in = (size_t)(s - p);
			w->made = w->in + strlen(s);
			errno = ENAMETOOLONG;
			return 1;
		}
		if (*rest == '\0')
			return 0;
		s = rest;
		if ((next = strchr(rest, '/')) != NULL)
			*next++ = '\0';
		else
			next = rest + strlen(rest);
		rest = next;
	}
}

/*
 * --check -p: is NAME in FD a link to nothing?  A run's mkdir finds it
 * there (EEXIST), and the walk after it fails as the one before did.
 */
static int
dangling(int fd, const char *name)
{
	struct stat st;

	return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * -p: create each missing directory of PATH, flushing its parent.  The ones
 * on the way are opened for search only, as the kernel's walk needs.
 */
static int
make_parents(int atfd, const char *path, struct walk *w)
{
	char *p, *s, *next, at[PATH_MAX];
	int fd, sub, flags;

	memcpy(at, w->at, strlen(w->at) + 1);
	if ((fd = open_dir_at(atfd, path, w)) >= 0 || errno != ENOENT)
		return fd;
	w->hops = 0;		/* the links of that try count no more */
	memcpy(w->at, at, strlen(at) + 1);
	if ((fd = walk_dir(atfd, *path == '/' ? "/" : ".",
	    O_SEARCH_DIR | O_DIRECTORY, w)) < 0)
		return -1;
	if ((p = strdup(path)) == NULL) {
		close(fd);
		return -1;
	}
	for (s = p; *s != '\0'; s = next) {
		if ((next = strchr(s, '/')) != NULL)
			*next++ = '\0';
		else
			next = s + strlen(s);
		if (*s == '\0')
			continue;
		flags = (next[strspn(next, "/")] == '\0' ? O_RDONLY :
		    O_SEARCH_DIR) | O_DIRECTORY;
		if ((sub = walk_dir(fd, s, flags, w)) < 0 && errno == ENOENT &&
		    opt.check && dangling(fd, s)) {
			close(fd);
			fd = -1;
			errno = ENOENT;
			break;
		}
		if (sub < 0 && errno == ENOENT && opt.check) {
			/* --check: from here on a run would make them;
			   the last that exists stands for them, opened
			   for reading (its default ACL) where it can be. */
			w->missing = 1;
			if (missing_too_long(fd, p, s, next, w)) {
				close(fd);
				fd = -1;
			} else if ((sub = xopenat(fd, ".", O_RDONLY |
			    O_DIRECTORY | O_CLOEXEC, 0)) >= 0) {
				close(fd);
				fd = sub;
			}
			break;
		}
		if (sub >= 0 || errno != ENOENT)
			;
		else if (make_dir(fd, s) < 0) {
			w->in = s - p;
			w->made = w->in + strlen(s);
		} else
			sub = walk_dir(fd, s, flags, w);
		close(fd);
		if ((fd = sub) < 0)
			break;
	}
	free(p);
	return fd;
}

/* A directory that cannot be opened; behind a link, the link comes first. */
static int
failed_dir(const struct file *f, const char *path, const char *display,
    const struct walk *w)
{
	size_t in = w->in;

	while (in > 1 && path[in - 1] == '/')
		in--;
	if (w->made > 0)
		return failed(f->target, "cannot create directory %.*s in"
		    " %.*s: %s", (int)w->made, path, in > 0 ? (int)in : 1,
		    in > 0 ? path : ".", strerror(errno));
	if (w->refused)
		return failed_planted(w->link, "following a link", w->owner,
		    w->at);
	if (f->linked)
		return failed(f->target, "%s: %s", display, strerror(errno));
	return failed_errno(display);
}

/*
 * F's directory PATH, where the target before F named the same (and was not
 * reached through a link): opened again through that one's descriptor, not
 * walked again, as a list in directory order has it.  -1 where not (or if
 * its directory is closed for the descriptor limit).
 */
static int
dir_as_before(const struct file *f, const char *path)
{
	const struct file *p = f - 1;

	if (f == jobs || p->state != TODO || p->linked ||
	    strcmp(p->dirpath, path) != 0 || jobs[p->dir].dirfd < 0)
		return -1;
	return xopenat(jobs[p->dir].dirfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC, 0);
}

/*
 * Open directory PATH (relative to ATFD: the current directory, or that of
 * the target); a copy of DISPLAY names it in messages.
 */
static int
enter_dir(struct file *f, int atfd, const char *path, const char *display)
{
	struct walk w;
	char *shown;
	int fd;

	walk_start(&w);
	if (atfd != AT_FDCWD)
		snprintf(w.at, sizeof w.at, "%s", f->dirpath);
	/* Kept (for -t and --batch) even if it cannot be opened. */
	if ((shown = strdup(display)) == NULL)
		return failed_errno(NULL);
	free(f->dirpath);
	f->dirpath = shown;
	if (atfd != AT_FDCWD || (fd = dir_as_before(f, path)) < 0)
		fd = opt.parents ? make_parents(atfd, path, &w) :
		    open_dir_at(atfd, path, &w);
	if (fd < 0)
		return failed_dir(f, path, display, &w);
	if (f->dirfd >= 0)
		close(f->dirfd);
	f->dirfd = fd;
	f->makedirs = w.missing;
	return 0;
}

/* 1 if a file of OWNER is another user's plant, 0 if not, -1 (reported). */
static int
planted(const struct file *f, uid_t owner, mode_t writable)
{
	int r = planted_in(f->dirfd, owner, writable);

	return r < 0 ? failed_errno(f->dirpath) : r;
}

static int
check_protected_link(const struct file *f, const struct oldstat *link)
{
	int r = planted(f, link->st_uid, S_IWOTH);

	if (r > 0)
		return failed_planted_name(f, "following a link",
		    link->st_uid);
	return r;
}

/* The first character of /proc/sys/fs/NAME, or DFLT where it cannot be read. */
static char
fs_sysctl(const char *name, char dflt)
{
	char path[64], c = dflt;
	int fd;

	snprintf(path, sizeof path, "/proc/sys/fs/%s", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return dflt;
	if (xread(fd, &c, 1) != 1)
		c = dflt;
	close(fd);
	return c;
}

/*
 * fs.protected_regular: 1 guards sticky world-writable directories, 2 also
 * group-writable ones.  Where the setting cannot be read, assume 2; world-
 * writable ones are guarded whatever it says, as links are (planted_in).
 */
static int
check_protected_regular(const struct file *f)
{
	int r;

	if ((r = planted(f, f->st.st_uid, S_IWOTH | S_IWGRP)) <= 0)
		return r;
	if (fs_sysctl("protected_regular", '2') != '2' &&
	    (r = planted(f, f->st.st_uid, S_IWOTH)) <= 0)
		return r;
	return failed_planted_name(f, "writing to a file", f->st.st_uid);
}

/* The text of F's link (ST), or NULL (reported). */
static char *
read_link(const struct file *f, const struct oldstat *st)
{
	size_t n = st->st_size > 0 ? (size_t)st->st_size + 1 : PATH_MAX;
	char *link = xmalloc(n);
	ssize_t len;

	if ((len = readlinkat(f->dirfd, f->name, link, n)) >= 0 &&
	    (size_t)len < n) {
		link[len] = '\0';
		return link;
	}
	if (len >= 0)
		errno = ENAMETOOLONG;
	failed_errno(f->target);
	free(link);
	return NULL;
}

/*
 * The links of /proc/PID/fd stand for open files, not for paths: their text
 * may name a deleted file ("x (deleted)"), a pipe, or another file now.
 */
static int
check_proc_link(const struct file *f)
{
	if (in_procfs(f->dirfd))
		return failed(f->target, "refusing to follow a link in /proc:"
		    " it stands for an open file, which cannot be replaced");
	return 0;
}

/* Move from a symbolic link to what it points to. */
static int
follow_link(struct file *f, const struct oldstat *st)
{
	char *link, *dir, *name, *shown = NULL;
	int r;

	if (check_proc_link(f) < 0 || check_protected_link(f, st) < 0)
		return -1;
	f->linked = 1;
	if ((link = read_link(f, st)) == NULL)
		return -1;
	if (split_path(link, &dir, &name) < 0) {
		free(link);
		return -1;
	}
	if (*link == '/')
		r = enter_dir(f, AT_FDCWD, dir, dir);
	else if (strchr(link, '/') != NULL) {
		shown = join(f->dirpath, dir);
		r = enter_dir(f, f->dirfd, dir, shown);
	} else
		r = 0;
	free(shown);
	free(dir);
	free(link);
	if (r < 0) {
		free(name);
		return -1;
	}
	if (f->name != last_name(f->target))
		free((char *)f->name);
	f->name = name;
	return 0;
}

/* "dir/", "." and "..": names that can only be directories. */
static int
names_dir(const char *name)
{
	return *name == '\0' || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0;
}

static void
keep_stat(struct file *f, const struct stat *st)
{
	f->st.st_dev = st->st_dev;
	f->st.st_ino = st->st_ino;
	f->st.st_size = st->st_size;
	f->st.st_mode = st->st_mode;
	f->st.st_uid = st->st_uid;
	f->st.st_gid = st->st_gid;
}

/* What F's name is (a link not followed), in F->st: 0, or -1 (errno). */
static int
stat_name(struct file *f)
{
	struct stat st;

	if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	keep_stat(f, &st);
	return 0;
}

static long dir_name_max(int);
static long name_max(const struct file *);

/*
 * Is FD on a file system of KIND (its statfs f_type)?  UNIT_NAMES: it
 * counts a name's length in UTF-16 units, not bytes (FUSE, exFAT, NTFS,
 * FAT).  SIZELESS: a file's size says nothing of its content (proc, sysfs
 * and the like).  EXCHANGES: it may exchange file contents (XFS,
 * --in-place).  Where that cannot be told, 1: the answer that refuses
 * less.
 */
enum fskind { UNIT_NAMES, SIZELESS, EXCHANGES };

static int
fs_is(int fd, enum fskind kind)
{
#if defined(HAVE_UNIT_NAMES_MAGIC) && defined(HAVE_PSEUDO_MAGIC) && \
    defined(HAVE_XFS_MAGIC)
	static const long units[] = HAVE_UNIT_NAMES_MAGIC,
	    pseudo[] = HAVE_PSEUDO_MAGIC, xfs[] = { HAVE_XFS_MAGIC };
	static const struct {
		const long	*type;
		size_t		 n;
	} kinds[] = {
		[UNIT_NAMES] = { units, sizeof units / sizeof units[0] },
		[SIZELESS] = { pseudo, sizeof pseudo / sizeof pseudo[0] },
		[EXCHANGES] = { xfs, 1 },
	};
	struct statfs fs;
	size_t i;

	if (fstatfs(fd, &fs) < 0)
		return 1;
	for (i = 0; i < kinds[kind].n; i++)
		if ((long)fs.f_type == kinds[kind].type[i])
			return 1;
	return 0;
#else
	(void)fd;
	(void)kind;
	return 1;
#endif
}

/*
 * Is NAME, not found, too long for directory DIRFD?  Longer than its
 * NAME_MAX where that is less than the kernel's (fuse-overlayfs: 251: such
 * a server says only that the name does not exist, and the rename fails),
 * or than 255 UTF-16 units, which no file system takes (NTFS and exFAT
 * count those, not bytes: a longer name of fewer characters is theirs).
 */
static int
name_too_long(int dirfd, const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t n = strlen(name), units = 0;
	long max;

	if (n <= _POSIX_NAME_MAX)
		return 0;
	if ((max = dir_name_max(dirfd)) < NAME_MAX || !fs_is(dirfd, UNIT_NAMES))
		return n > (size_t)max;
	for (; *p != '\0'; p++)	/* a character a unit, 4 bytes two */
		units += ((*p & 0xc0) != 0x80) + ((*p & 0xf8) == 0xf0);
	return units > (size_t)max;
}

static int
too_long(const struct file *f)
{
	return name_too_long(f->dirfd, f->name);
}

/*
 * From F's name in its directory, follow links (unless -P) to the file
 * itself, or to the name where it does not exist yet.
 */
static int
reach_file(struct file *f)
{
	int hops;

	for (hops = 0;; hops++) {
		if (names_dir(f->name))
			return failed(f->target, "not a regular file");
		if (stat_name(f) < 0) {
			if (errno == ENOENT && too_long(f))
				errno = ENAMETOOLONG;
			if (errno != ENOENT)
				return failed_errno(f->target);
			f->exists = 0;
			return 0;
		}
		f->exists = 1;
		if (!S_ISLNK(f->st.st_mode) || opt.nofollow)
			break;
		if (hops == MAX_HOPS) {
			errno = ELOOP;
			return failed_errno(f->target);
		}
		if (follow_link(f, &f->st) < 0)
			return -1;
		if (f->makedirs) {
			f->exists = 0;
			return 0;
		}
	}
	if (!S_ISREG(f->st.st_mode) && !S_ISLNK(f->st.st_mode))
		return failed(f->target, "not a regular file");
	return 0;
}

static int
resolve_target(struct file *f)
{
	struct stat st;
	char *dir, *name;
	int r;

	if (*f->target == '\0') {
		errno = ENOENT;
		return failed_errno(f->target);
	}
	if (split_path(f->target, &dir, &name) < 0)
		return -1;
	free(name);			/* no copy kept: a target's own */
	f->name = last_name(f->target);
	if (names_dir(f->name)) {
		free(dir);
		if (stat(f->target, &st) < 0)
			return failed_errno(f->target);
		return failed(f->target, "not a regular file");
	}
	r = enter_dir(f, AT_FDCWD, dir, dir);
	free(dir);
	if ((f->dirfailed = r < 0))
		return -1;
	if (!f->makedirs)
		return reach_file(f);
	if (too_long(f)) {	/* --check -p: asked of the last that exists */
		errno = ENAMETOOLONG;
		return failed_errno(f->target);
	}
	return 0;
}

/*
 * The target opened with FLAGS, O_RDONLY or O_RDWR (--in-place): its
 * descriptor; -1 (errno); -2 where chattr refuses writing (said).
 * O_NONBLOCK: if it was swapped for a FIFO since fstatat, opening must not
 * hang.
 */
static int
open_old(const struct file *f, int flags)
{
	const char *why;
	int fd;

	fd = xopenat(f->dirfd, f->name, flags | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC, 0);
	if (fd < 0 && errno == EPERM && flags == O_RDWR &&
	    (why = chattr_refusal_at(f, f->name)) != NULL) {
		failed(f->target, "is %s; cannot be replaced", why);
		return -2;
	}
	return fd;
}

/* Open the existing file, to read its content and attributes. */
static int
open_target(struct file *f)
{
	struct stat st;
	/* --in-place writes into the target: its content is exchanged (-C:
	   once the input differs, reopen_to_exchange). */
	int rw = opt.inplace && !opt.ifchanged;

	f->regular = 0;
	if (!f->exists || S_ISLNK(f->st.st_mode))
		return 0;
	if ((f->fd = open_old(f, rw ? O_RDWR : O_RDONLY)) == -2)
		return -1;
#ifdef O_PATH
	/* A file we may replace but not read: its metadata is still needed. */
	if (f->fd < 0 && errno == EACCES && !opt.append && !opt.lock &&
	    !opt.inplace) {
		f->fd = xopenat(f->dirfd, f->name, O_PATH | O_NOFOLLOW |
		    O_CLOEXEC, 0);
		f->pathonly = 1;
	}
#endif
	if (f->fd < 0 || fstat(f->fd, &st) < 0)
		return failed_errno(f->target);
	if (!S_ISREG(st.st_mode))
		return failed(f->target, "not a regular file");
	keep_stat(f, &st);
	f->regular = 1;
	return check_protected_regular(f);
}

/* ==== The directories of a run: held, borrowed, opened again ==== */

/*
 * The directories' descriptors.  Each directory of a run is opened once
 * (resolve_job), and its descriptor held by its first job, for its targets
 * to borrow one step at a time (use_dir).  A run may name more directories
 * than the descriptor limit allows: the soft limit is raised, as far as the
 * hard one and as far as the targets need (fd_budget); past that, the
 * directory open longest is closed (make_room), and opened again by its
 * path when one of its targets needs it, if it still is the same directory
 * (reopen_dir: device and inode).
 */

/* How many descriptors are open; a guess if /proc cannot tell. */
static size_t
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t n = 0;

	if (d == NULL)
		return STEP_FDS;
	/* cppcheck-suppress readdirCalled ; one thread; readdir_r is obsolete */
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n > 0 ? n - 1 : 0;	/* not opendir's own */
}

/*
 * How many descriptors a run of several targets may keep open: for its
 * directories and the new files being flushed.
 */
static size_t
fd_budget(void)
{
	struct rlimit rl;
	rlim_t used = open_fds() + STEP_FDS, want = used + njobs + FLUSH_DEPTH;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY &&
		    rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 &&
		    getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 1;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return njobs + FLUSH_DEPTH;
	return rl.rlim_cur > used ? rl.rlim_cur - used : 1;
}

/* The descriptors of a run: up to half for the flushes, the rest to read
   directories. */
static void
make_dir_ring(struct run *run)
{
	size_t fds = njobs > 1 ? fd_budget() : 1;

	run->depth = njobs > 1 ? fds / 2 < FLUSH_DEPTH ? fds / 2 :
	    FLUSH_DEPTH : 0;
	run->maxdirs = fds - run->depth;
	run->ringsize = 16;
	run->opendirs = xmalloc(run->ringsize * sizeof *run->opendirs);
}

/* Room for one more directory: those open longest, closed. */
static void
make_room(struct run *run)
{
	struct file *d;
	int fd;

	while (run->nopen > 0 && run->nopen + run->held >= run->maxdirs) {
		d = &jobs[run->opendirs[run->oldest]];
		run->oldest = (run->oldest + 1) % run->ringsize;
		run->nopen--;
		fd = d->dirfd;
		d->dirfd = -1;		/* first: the signal handler reads it */
		close(fd);
	}
}

/* RUN's ring of open directories, twice the size, the oldest first. */
static void
grow_ring(struct run *run)
{
	size_t n = run->ringsize > 0 ? 2 * run->ringsize : 16, i;
	size_t *v = xmalloc(n * sizeof *v);

	for (i = 0; i < run->nopen; i++)
		v[i] = run->opendirs[(run->oldest + i) % run->ringsize];
	free(run->opendirs);
	run->opendirs = v;
	run->ringsize = n;
	run->oldest = 0;
}

/* D, the first job of its directory, holds it open: the newest. */
static void
add_open_dir(struct run *run, const struct file *d)
{
	if (run->nopen == run->ringsize)
		grow_ring(run);
	run->opendirs[(run->oldest + run->nopen) % run->ringsize] =
	    (size_t)(d - jobs);
	run->nopen++;
}

/*
 * Before a step of J that uses its directory: J->dirfd, its descriptor,
 * opened again if it was closed; 0, or -1 (said).  The target that
 * borrowed one before gives it back.
 */
static int
use_dir(struct run *run, struct file *j)
{
	struct file *d = &jobs[j->dir];
	int fd;

	if (run->borrower != NULL && run->borrower->dir !=
	    (size_t)(run->borrower - jobs))
		run->borrower->dirfd = -1;
	run->borrower = j;
	if (d->dirfd < 0) {
		make_room(run);
		if ((fd = reopen_dir(d)) < 0 && errno == ESTALE)
			return failed(j->target, "its directory %s was moved or"
			    " replaced during the run", d->dirpath);
		if (fd < 0)
			return failed_errno(d->dirpath);
		d->dirfd = fd;
		add_open_dir(run, d);
	}
	j->dirfd = d->dirfd;
	return 0;
}

/* ==== Locks: -l, -w ==== */

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Does NAME still lead to the inode open as FD? */
static int
still_named(const struct file *f, int fd, const char *name)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(f->dirfd, name, &b,
	    AT_SYMLINK_NOFOLLOW) == 0 && same_file(&a, &b);
}

static void
on_alarm(int sig)
{
	(void)sig;
	lock_timeout = 1;
}

/*
 * -w: SIGALRM interrupts flock(2) once the time is up, and every 10 ms after
 * that, in case it came just before flock was entered.  Zero stops it.
 */
static int
set_lock_timer(const struct file *f, double seconds, struct sigaction *orig)
{
	int r = 0;

	struct sigaction sa;
	struct itimerval it;
	long long us = seconds * 1e6 + 1;	/* -w takes at most 1e8 */

	memset(&sa, 0, sizeof sa);
	memset(&it, 0, sizeof it);
	if (seconds > 0) {
		/* Ignoring it first drops one that was pending, blocked. */
		sa.sa_handler = SIG_IGN;
		sigaction(SIGALRM, &sa, orig);
		sigdelset(&origmask, SIGALRM);
		unblock_signals();
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		it.it_value.tv_sec = us / 1000000;
		it.it_value.tv_usec = us % 1000000;
		it.it_interval.tv_usec = 10000;
	}
	if (setitimer(ITIMER_REAL, &it, NULL) < 0)
		r = failed(f->target, "cannot set the timer of -w: %s",
		    strerror(errno));
	if (seconds == 0)
		sigaction(SIGALRM, orig, NULL);
	return r;
}

/* Take the lock on FD, giving up as -w says. */
static int
wait_lock(const struct file *f, int fd)
{
	int r;

	while ((r = flock(fd, LOCK_EX | (opt.wait == 0 ? LOCK_NB : 0))) < 0 &&
	    errno == EINTR && !lock_timeout)
		;
	if (r == 0)
		return 0;
	if (lock_timeout || errno == EWOULDBLOCK)
		return failed(f->target, "lock is busy: gave up after %s"
		    " seconds (-w)", opt.waitarg);
	return failed(f->target, "cannot lock: %s", strerror(errno));
}

/*
 * Is there nothing to flock(2) at the target's name: no file, or a symbolic
 * link that -P replaces?
 */
static int
nothing_to_lock(struct file *f)
{
	if (stat_name(f) < 0) {
		f->exists = 0;
		return errno == ENOENT;
	}
	f->exists = 1;
	return S_ISLNK(f->st.st_mode) && opt.nofollow;
}

/*
 * Open an existing lock file without O_CREAT, which protected_regular refuses
 * on another user's file in a sticky directory; else create it, readable by
 * everyone whatever the umask, so that another user can wait on it too.
 */
static int
open_lock_file(const struct file *f, const char *name)
{
	mode_t mask;
	int fd;

	for (;;) {
		fd = xopenat(f->dirfd, name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC, 0);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT)
			return failed(f->target, "cannot lock: %s",
			    strerror(errno));
		mask = umask(0);
		fd = xopenat(f->dirfd, name, O_RDONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
		umask(mask);
		if (fd < 0 && errno != EEXIST)
			return failed(f->dirpath, "cannot create a lock file in"
			    " this directory: %s", strerror(errno));
		if (fd >= 0)
			return fd;
	}
}

/*
 * A missing target (or a link -P replaces) is locked through
 * ".NAME.ponywrite-lock", removed on exit: a name no other program uses,
 * opened without blocking and only if it is a regular file, so that a FIFO
 * planted there cannot hang us.  1 if it is locked, 0 to look again, -1.
 */
static int
lock_missing(struct file *f)
{
	char name[NAME_MAX + 1], *copy;
	long max = name_max(f);
	struct stat st;
	int fd, r = 0;

	tagged_name(name, f->name, "ponywrite-lock", max, 0);
	if ((fd = open_lock_file(f, name)) < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		r = failed(f->target, "cannot lock: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		r = failed(f->target, "cannot lock: %s is not a regular file",
		    name);
	else if (wait_lock(f, fd) < 0)
		r = -1;
	else if (!still_named(f, fd, name))
		r = 0;
	else if (!nothing_to_lock(f))
		/* The target came: whoever holds the lock file removes it. */
		unlinkat(f->dirfd, name, 0);
	else if ((copy = strdup(name)) == NULL)
		r = failed_errno(f->target);
	else {
		block_signals();
		f->lockname = copy;
		unblock_signals();
		return 1;		/* FD stays open: it holds the lock */
	}
	close(fd);
	return r;
}

/*
 * One try at -l's lock: 1 if it is held, 0 to look again, -1.  A lock won on
 * an inode that was replaced (or a lock file that was removed) while we
 * waited is worthless: look again and lock what is there now.
 */
static int
lock_once(struct file *f)
{
	int r;

	if (open_target(f) < 0)
		return -1;
	if (!f->regular)
		r = lock_missing(f);
	else if (wait_lock(f, f->fd) < 0)
		return -1;
	else if (!(r = still_named(f, f->fd, f->name))) {
		close(f->fd);
		f->fd = -1;
	}
	if (r != 0)
		return r;
	f->exists = stat_name(f) == 0;
	if (!f->exists && errno != ENOENT)
		return failed_errno(f->target);
	if (f->exists && !S_ISREG(f->st.st_mode) &&
	    !(S_ISLNK(f->st.st_mode) && opt.nofollow))
		return failed(f->target, "not a regular file");
	return 0;
}

/* -l: flock(2) the target's inode, held until exit; -w's timer stopped. */
static int
lock_target(struct file *f)
{
	struct sigaction orig;		/* SIGALRM's, while -w's timer runs */
	int r;

	if (opt.wait > 0 && set_lock_timer(f, opt.wait, &orig) < 0)
		return -1;
	while ((r = lock_once(f)) == 0)
		;
	if (opt.wait > 0 && set_lock_timer(f, 0, &orig) < 0)
		r = -1;
	return r < 0 ? -1 : 0;
}

/*
 * -l: lock the new file before it takes the target's name, so that a run
 * that opens it waits until we exit (-b renames once more after it).  The
 * duplicate holds the lock once commit closes FD.
 */
static int
lock_new_file(const struct file *f, int fd)
{
	int dup, r = -1;

	if ((dup = fcntl(fd, F_DUPFD_CLOEXEC, 3)) >= 0)
		while ((r = flock(dup, LOCK_EX | LOCK_NB)) < 0 && errno == EINTR)
			;
	if (r < 0)
		return failed(f->target, "cannot lock: %s", strerror(errno));
	return 0;
}

/* ==== The new file's metadata, decided ==== */

/*
 * POSIX ACLs as the kernel stores them in system.posix_acl_*: a little-endian
 * header (version 2), then 8-byte entries: tag (16 bits), permissions (16
 * bits), id (32 bits).
 */
#define ACL_USER_OBJ	0x01
#define ACL_GROUP_OBJ	0x04
#define ACL_MASK	0x10
#define ACL_OTHER	0x20

#ifdef HAVE_XATTR
/*
 * Give an access ACL the permission bits of MODE, as chmod(2) would, so that
 * setting it on the temporary file never grants more than the final mode.
 */
static void
acl_apply_mode(unsigned char *acl, ssize_t len, mode_t mode)
{
	unsigned char *e, *end = acl + len;
	unsigned tag;
	int mask = 0;

	for (e = acl + 4; e + 8 <= end; e += 8)
		mask |= (e[0] | e[1] << 8) == ACL_MASK;
	for (e = acl + 4; e + 8 <= end; e += 8) {
		tag = e[0] | e[1] << 8;
		if (tag == ACL_USER_OBJ)
			e[2] = mode >> 6 & 7;
		else if (tag == ACL_MASK || (tag == ACL_GROUP_OBJ && !mask))
			e[2] = mode >> 3 & 7;
		else if (tag == ACL_OTHER)
			e[2] = mode & 7;
		else
			continue;
		e[3] = 0;
	}
}

/* A new file in a directory with a default ACL: open(2) ignores the umask. */
static int
default_acl_mode(const struct file *f, mode_t *mode)
{
	unsigned char acl[4096], *e, *end;
	unsigned perm[0x21] = { 0 };
	ssize_t len;

	if ((len = fgetxattr(f->dirfd, "system.posix_acl_default", acl,
	    sizeof acl)) < 0 && errno != ENODATA && errno != ENOTSUP)
		return failed(f->dirpath, "cannot read the default ACL: %s",
		    strerror(errno));
	if (len < 12)
		return 0;
	end = acl + len;
	for (e = acl + 4; e + 8 <= end; e += 8)
		if ((e[0] | e[1] << 8) <= ACL_OTHER)
			perm[e[0] | e[1] << 8] = e[2] | 0x100;
	if (perm[ACL_MASK] != 0)
		perm[ACL_GROUP_OBJ] = perm[ACL_MASK];
	*mode = (perm[ACL_USER_OBJ] & 6) << 6 | (perm[ACL_GROUP_OBJ] & 6) << 3 |
	    (perm[ACL_OTHER] & 6);
	return 0;
}
#else
static int
default_acl_mode(const struct file *f, mode_t *mode)
{
	(void)f;
	(void)mode;
	return 0;
}
#endif

#ifdef HAVE_XATTR
/*
 * The old file's attribute NAME, or its list of names if NAME is NULL.  An
 * O_PATH descriptor is read through /proc, which reaches the same inode.
 */
static ssize_t
old_xattr(const struct file *f, const char *name, char *val, size_t n)
{
	char proc[64];

	if (!f->pathonly)
		return name != NULL ? fgetxattr(f->fd, name, val, n) :
		    flistxattr(f->fd, val, n);
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
	return name != NULL ? getxattr(proc, name, val, n) :
	    listxattr(proc, val, n);
}
#endif

/* Has F's old file file capabilities (security.capability)? */
static int
has_capabilities(const struct file *f)
{
#ifdef HAVE_XATTR
	return f->regular && old_xattr(f, "security.capability", NULL, 0) >= 0;
#else
	(void)f;
	return 0;
#endif
}

/*
 * Will F's new file carry a privilege (set-ID bits, or the old file's file
 * capabilities, kept as keep_xattr keeps them) that someone but the caller
 * could write into before it has it: its owner, who may chmod(2) it, or
 * those its mode lets write?  Then it is made unnamed (create_temp) and
 * named only once complete (name_temp).
 */
static int
needs_unnamed(const struct file *f)
{
	uid_t owner = f->meta.uid != (uid_t)-1 ? f->meta.uid : geteuid();
	int caps;

	if (owner == geteuid() && !(f->meta.mode & 022))
		return 0;
	caps = f->meta.uid == f->st.st_uid && f->meta.gid == f->st.st_gid &&
	    has_capabilities(f);
	return caps || (f->meta.mode & (S_ISUID | S_ISGID));
}

/*
 * The new file's mode, owner and group.  A new file gets what open(2) would
 * give it: 0666 less the umask, or less what the directory's default ACL
 * allows.  As chown(2) does, a change of owner or group drops the set-id
 * bits, unless -m asks for them.
 */
static int
decide_metadata(struct file *f, mode_t cmask)
{
	mode_t mask = 0;

	if (!f->regular || (opt.mode != NULL &&
	    (*opt.mode < '0' || *opt.mode > '7')))
		mask = cmask;
	f->meta.mode = f->regular ? f->st.st_mode & 07777 : 0666 & ~mask;
	if (!f->regular && default_acl_mode(f, &f->meta.mode) < 0)
		return -1;
	f->meta.uid = opt.uid != (uid_t)-1 ? opt.uid :
	    f->regular ? f->st.st_uid : (uid_t)-1;
	f->meta.gid = opt.gid != (gid_t)-1 ? opt.gid :
	    f->regular ? f->st.st_gid : (gid_t)-1;
	if (f->regular && (f->meta.uid != f->st.st_uid ||
	    f->meta.gid != f->st.st_gid))
		f->meta.mode &= ~(mode_t)(S_ISUID | S_ISGID);
	if (opt.mode != NULL)
		parse_mode(opt.mode, f->meta.mode, mask, &f->meta.mode);
	f->unnamed = needs_unnamed(f);
	return 0;
}

/* ==== Step 2: the temporary file ==== */

static int
random_chars(char *p, size_t n)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char rnd[RANDOM_LEN];
	size_t i;
	int fd;

#ifdef HAVE_GETRANDOM
	if (getrandom(rnd, n, 0) == (ssize_t)n)
		goto done;
#endif
	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0 ||
	    xread(fd, rnd, n) != (ssize_t)n) {
		failed(NULL, "cannot read random bytes: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
#ifdef HAVE_GETRANDOM
done:
#endif
	for (i = 0; i < n; i++)
		p[i] = set[rnd[i] % 64];
	p[n] = '\0';
	return 0;
}

/*
 * The directory's NAME_MAX, asked of it: not every file system has 255
 * (fuse-overlayfs: 251).  On Linux, statfs(2)'s f_namelen, which glibc's
 * fpathconf reads too and musl's does not (it answers 255 for any file
 * system); fpathconf where statfs cannot tell.
 */
static long
dir_name_max(int dirfd)
{
	long max = -1;
#ifdef __linux__
	struct statfs fs;

	if (fstatfs(dirfd, &fs) == 0 && fs.f_namelen > 0)
		max = fs.f_namelen;
#endif
	if (max < 0)
		max = fpathconf(dirfd, _PC_NAME_MAX);
	return max < 0 || max > NAME_MAX ? NAME_MAX : max;
}

static long
name_max(const struct file *f)
{
	return dir_name_max(f->dirfd);
}

/*
 * The bytes ".NAME" SUFFIX ".RANDOM" takes at most, its NUL included, or
 * ".NAME.ponywrite-old" (one more: link_old).
 */
static size_t
hidden_size(const char *name, const char *suffix)
{
	size_t n = strlen(name) + strlen(suffix) + RANDOM_LEN + 4;

	return n < NAME_MAX + 1 ? n : NAME_MAX + 1;
}

/*
 * *P, a buffer for F's hidden name with SUFFIX, allocated empty the first
 * time: the signal handler may look at it from then on.
 */
static int
hidden_buffer(char **p, const struct file *f, const char *suffix)
{
	char *s;

	if (*p == NULL) {
		if ((s = calloc(1, hidden_size(f->name, suffix))) == NULL)
			return failed_errno(f->target);
		*p = s;
	}
	return 0;
}

/*
 * ".NAME.RANDOM", with NAME shortened (utf8_fit) so that the whole fits
 * MAX, the directory's NAME_MAX.
 */
static int
hidden_name(char *dst, const char *name, const char *suffix, long max)
{
	char whole[2 * NAME_MAX + 2];
	size_t keep = max > RANDOM_LEN + 2 ? (size_t)max - RANDOM_LEN - 2 : 0;
	int n;

	snprintf(whole, sizeof whole, "%s%s", name, suffix);
	n = snprintf(dst, hidden_size(name, suffix), ".%.*s.",
	    (int)utf8_fit(whole, keep), whole);
	return random_chars(dst + n, RANDOM_LEN);
}

/* The directory is named as given, or, behind a link, the link first. */
static int
failed_temp(const struct file *f, int e)
{
	if (f->linked)
		return failed(f->target, "cannot create a temporary file in"
		    " %s: %s", f->dirpath, strerror(e));
	return failed(f->dirpath, "cannot create a temporary file in this"
	    " directory: %s", strerror(e));
}

/* A new file in F's directory, unnamed till link_fd names it: its fd. */
static int
open_unnamed(const struct file *f)
{
#ifdef O_TMPFILE
	return openat(f->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#else
	(void)f;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

/*
 * The unnamed (O_TMPFILE) file FD named NAME in F's directory: through
 * /proc where AT_EMPTY_PATH needs a privilege.  For --in-place -b, the
 * new file, which the exchange then fills with the old content.
 */
static int
link_fd(const struct file *f, int fd, const char *name)
{
	char path[64];

#ifdef AT_EMPTY_PATH
	if (linkat(fd, "", f->dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
#endif
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, path, f->dirfd, name, AT_SYMLINK_FOLLOW);
}

/*
 * F's new file, unnamed (needs_unnamed), cannot be made: the file system
 * has no O_TMPFILE (E), and a named one could be written into before it has
 * its privilege.
 */
static int
failed_unnamed(const struct file *f, int e)
{
	if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL)
		return failed_temp(f, e);
	return failed(f->target, "cannot be given its set-ID bits or file"
	    " capabilities safely here: its owner, or those its mode lets"
	    " write, could write into the new file before it has them, and"
	    " this file system has no unnamed files (O_TMPFILE) to prevent"
	    " it");
}

/*
 * F's new file: named .NAME.RANDOM, created there (*FD < 0), or the
 * unnamed file *FD, complete, linked there.  0, or -1 with errno (EEXIST:
 * try another name), or -2 (said).
 */
static int
try_temp_name(struct file *f, int *fd, long max)
{
	int r;

	block_signals();
	if ((r = hidden_name(f->tmpname, f->name, "", max)) < 0)
		r = -2;
	else if (*fd >= 0)
		r = link_fd(f, *fd, f->tmpname);
	else if ((*fd = openat(f->dirfd, f->tmpname, O_RDWR | O_CREAT |
	    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		r = -1;
	if (r < 0)
		f->tmpname[0] = '\0';
	unblock_signals();
	return r < 0 ? r : 0;
}

/* F's new file its hidden name, as try_temp_name makes it: 0, -1, -2. */
static int
name_temp(struct file *f, int *fd)
{
	long max = name_max(f);
	int tries, r = -1;

	errno = EEXIST;
	for (tries = 0; tries < 100; tries++)
		if ((r = try_temp_name(f, fd, max)) != -1 ||
		    (errno != EEXIST && errno != EINTR))
			break;
	return r;
}

/*
 * The temporary file, in *FD.  Unnamed (F->unnamed) till it is complete:
 * name_new.
 */
static int
create_temp(struct file *f, int *fd)
{
	if (hidden_buffer(&f->tmpname, f, "") < 0)
		return -1;
	*fd = -1;
	if (f->unnamed)
		*fd = open_unnamed(f);
	else if (name_temp(f, fd) == -2)
		return -1;
	if (*fd >= 0)
		return 0;
	return f->unnamed ? failed_unnamed(f, errno) : failed_temp(f, errno);
}

/* F's unnamed new file, complete: its hidden name. */
static int
name_new(struct file *f, int fd)
{
	int r;

	if (!f->unnamed || (r = name_temp(f, &fd)) == 0)
		return 0;
	return r == -2 ? -1 : failed_temp(f, errno);
}

/*
 * --in-place, where the exchange cannot be done (E from the ioctl, or from
 * O_TMPFILE): why, and what would work.
 */
static int
failed_exchange(const struct file *f, int e)
{
	if (e == ENOTTY || e == EOPNOTSUPP || e == EINVAL || e == EISDIR)
		return failed(f->target, "cannot be replaced in place: its file"
		    " system cannot exchange file contents (XFS with the"
		    " exchange feature, Linux 6.10 or later); without"
		    " --in-place it is replaced by a new file");
	if (e == EXDEV)
		return failed(f->target, "cannot be replaced in place: it is"
		    " mounted on its own (a bind mount); replace the file it"
		    " mounts");
	return failed(f->target, "cannot exchange its content: %s",
	    strerror(e));
}

/*
 * --in-place: an existing regular file without what the kernel takes away
 * on an exchange: set-ID bits, but for root's, and file capabilities.
 */
static int
check_in_place(const struct file *f)
{
	if (!f->exists)
		return failed(f->target, "does not exist; --in-place exchanges"
		    " the content of an existing file");
	if ((f->st.st_mode & (S_ISUID | S_ISGID)) && geteuid() != 0)
		return failed(f->target, "is set-user-ID or set-group-ID, which"
		    " exchanging its content would clear; replace it without"
		    " --in-place");
	if (has_capabilities(f))
		return failed(f->target, "has file capabilities, which"
		    " exchanging its content would remove, even for root;"
		    " replace it without --in-place");
	/* -C tries the exchange only for a change: what is sure fails now. */
	if (opt.ifchanged && !fs_is(f->fd, EXCHANGES))
		return failed_exchange(f, EOPNOTSUPP);
	return 0;
}

/*
 * --in-place: F's exchange (DRY_RUN: tried, nothing exchanged), or, unless
 * DRY_RUN, the real one: the new file then holds the old content.
 */
static int
exchange(const struct file *f, unsigned long long flags)
{
#ifdef HAVE_EXCHANGE_RANGE
	struct xfs_exchange_range x = { 0 };

	x.file1_fd = f->newfd;
	x.flags = XFS_EXCHANGE_RANGE_TO_EOF | flags;
	if (ioctl(f->fd, XFS_IOC_EXCHANGE_RANGE, &x) == 0)
		return 0;
	return failed_exchange(f, errno);
#else
	(void)flags;
	return failed_exchange(f, ENOTTY);
#endif
}

/*
 * --in-place: the target flushed after the exchange.  The exchange's own
 * XFS_EXCHANGE_RANGE_DSYNC is not enough: with it alone, a crash just
 * after lost what of a longer new content lies past the old end (a hole,
 * at the new size), on Linux 6.18 (tests/blockcrash, profile xfs-exchange).
 */
static int
flush_exchanged(struct file *f)
{
	if (flush_fd(f->fd) == 0)
		return 0;
	return failed(f->target, "replaced in place, but cannot flush it to"
	    " disk: %s", strerror(errno));
}

/*
 * -C --in-place, once the input differs: the target, read till now, opened
 * again to be written into, still the file that was read.  The descriptor
 * that read it, which holds -l's lock, is kept till the end (keptfd).
 */
static int
reopen_to_exchange(struct file *f)
{
	struct stat st;
	int fd;

	if ((fd = open_old(f, O_RDWR)) == -2)
		return -1;
	if (fd < 0 || fstat(fd, &st) < 0) {
		failed_errno(f->target);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_dev != f->st.st_dev || st.st_ino != f->st.st_ino) {
		close(fd);
		return failed(f->target, "was replaced while it was read;"
		    " not replaced");
	}
	if (opt.lock)
		f->keptfd = f->fd;
	else
		close(f->fd);
	f->fd = fd;
	return 0;
}

/*
 * --in-place: the new content's file, unnamed (O_TMPFILE) in the target's
 * directory, in F->newfd; the exchange tried first, so that where it
 * cannot be done nothing is written.
 */
static int
create_exchange_temp(struct file *f)
{
#ifdef HAVE_EXCHANGE_RANGE
	f->newfd = open_unnamed(f);
	if (f->newfd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR ?
		    failed_exchange(f, errno) : failed_temp(f, errno);
	return exchange(f, XFS_EXCHANGE_RANGE_DRY_RUN);
#else
	return failed_exchange(f, ENOTTY);
#endif
}

/* ==== Step 3: copying, write-behind, the command, -C ==== */

static const char *
input_name(const struct file *f)
{
	return strcmp(f->source, "-") != 0 ? f->source : "stdin";
}

/* Errors that surely come from the file being written. */
static int
dest_error(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EFBIG || e == EROFS;
}

/* Writing the new content failed: a full disk, a size limit, an I/O error. */
static int
failed_write(const struct file *f)
{
	return failed(f->target, "cannot write the new content: %s",
	    strerror(errno));
}

/*
 * Large input: past BEHIND_FROM bytes, start writing out each full window,
 * wait for the one before it and drop that from the page cache, so that
 * dirty memory stays bounded (BEHIND_FROM, then a window or two) and other
 * writers do not stall behind it.  An error here is a lost write, which fsync would not report
 * again: it fails the run.
 */
static int
write_behind(struct file *f, int fd, off_t end)
{
#ifdef HAVE_SYNC_FILE_RANGE
	off_t *at = &f->behind;

	for (; end >= BEHIND_FROM && end - *at >= WINDOW; *at += WINDOW) {
		if (sync_range(fd, *at, WINDOW, SYNC_FILE_RANGE_WRITE) < 0 ||
		    (*at > 0 && sync_range(fd, *at - WINDOW, WINDOW,
		    SYNC_RANGE_WAIT) < 0)) {
			if (errno != ENOSYS)
				return failed_write(f);
			*at = MAX_OFF;		/* not here: no windows */
			return 0;
		}
		if (*at > 0)			/* advice: failing is harmless */
			(void)posix_fadvise(fd, *at - WINDOW, WINDOW,
			    POSIX_FADV_DONTNEED);
	}
#else
	(void)f;
	(void)fd;
	(void)end;
#endif
	return 0;
}

/*
 * Copy up to LEN bytes of IN at FROM into OUT at TO, by pread and pwrite.
 * The copy functions return the bytes copied, or -1.
 */
static off_t
copy_pread(struct file *f, int in, off_t from, int out, off_t to, off_t len,
    const char *inname)
{
	off_t done = 0;
	ssize_t n = 0;

	while (done < len && (n = xpread(in, buf, len - done < BUFSIZE ?
	    len - done : BUFSIZE, from + done)) > 0) {
		if (xpwrite(out, buf, n, to + done) < 0)
			return failed_write(f);
		done += n;
		if (write_behind(f, out, to + done) < 0)
			return -1;
	}
	if (n < 0)
		return failed_errno(inname);
	return done;
}

/*
 * The same, with copy_file_range (a reflink on XFS and btrfs) where the
 * kernel can; pread and pwrite then tell whether the source or the
 * destination failed.  Returns the bytes copied, fewer if IN ended early.
 */
static off_t
copy_span(struct file *f, int in, off_t from, int out, off_t to, off_t len,
    const char *inname)
{
	off_t done = 0, more;
#ifdef HAVE_COPY_FILE_RANGE
	ssize_t n;

	/* A window at a time, for write_behind (a reflink dirties nothing). */
	while (done < len && ((n = copy_file_range(in, &from, out, &to,
	    len - done < WINDOW ? len - done : WINDOW, 0)) > 0 ||
	    (n < 0 && errno == EINTR))) {
		done += n > 0 ? n : 0;
		if (write_behind(f, out, to) < 0)
			return -1;
	}
	if (done < len && n < 0 && dest_error(errno))
		return failed_write(f);
	if (done < len && n == 0)
		return done;
#endif
	if ((more = copy_pread(f, in, from, out, to, len - done,
	    inname)) < 0)
		return -1;
	return done + more;
}

/*
 * SEEK_DATA found no data from HOLE on: a hole to END, or the file shrank
 * since END was its size.  Where its content ends now, never where it did.
 */
static off_t
data_end(int in, off_t hole, off_t end, const char *inname)
{
	struct stat now;

	if (fstat(in, &now) < 0)
		return failed_errno(inname);
	if (now.st_size >= end)
		return end;
	return now.st_size > hole ? now.st_size : hole;
}

/*
 * The end of copy_regular, whose copy of IN ended at END: OUT, whose data
 * ends at FILLED, made END long (a hole at the end), its offset there with
 * -a; IN's offset at END if it is stdin, as if read(2) had read it.
 */
static int
end_regular(struct file *f, int in, off_t end, int out, off_t filled,
    off_t outend)
{
	int r = 0;

	while (filled < outend && (r = ftruncate(out, outend)) < 0 &&
	    errno == EINTR)
		;
	if (r < 0 || (opt.append && lseek(out, outend, SEEK_SET) < 0))
		return failed_write(f);
	if (in == STDIN_FILENO)
		lseek(in, end, SEEK_SET);
	return 0;
}

/*
 * IN's data from START to END into OUT from BASE on, its holes left holes
 * (SEEK_DATA): where the copy ended (END, or before it where IN shrank),
 * *FILLED where its data did; -1.
 */
static off_t
copy_data(struct file *f, int in, off_t start, off_t end, int out,
    off_t base, off_t *filled, const char *inname)
{
	off_t data, hole, n;

	*filled = start;
	for (hole = start; hole < end; hole = data + n) {
		if ((data = lseek(in, hole, SEEK_DATA)) < 0) {
			if (errno == ENXIO) {		/* a hole to the end */
				if ((end = data_end(in, hole, end,
				    inname)) < 0)
					return -1;
				break;
			}
			data = hole;			/* no SEEK_DATA here */
		}
		if (data >= end)
			break;
		if ((hole = lseek(in, data, SEEK_HOLE)) < 0 || hole > end)
			hole = end;
		if ((n = copy_span(f, in, data, out, base + data - start,
		    hole - data, inname)) < 0)
			return -1;
		*filled = data + n;
		if (n < hole - data) {			/* it shrank */
			end = data + n;
			break;
		}
	}
	return end;
}

/*
 * A regular file, from its offset on: the data is copied, the holes stay
 * holes (SEEK_DATA), and what was appended while copying is copied too.
 * OUT, which was empty from BASE on, ends there (a hole at the end is
 * one); with -a, where more may follow, its offset is left after it.
 */
static off_t
copy_regular(struct file *f, int in, off_t start, off_t size, int out,
    off_t base, const char *inname)
{
	off_t end = size > start ? size : start, n, filled;

	if ((end = copy_data(f, in, start, end, out, base, &filled,
	    inname)) < 0)
		return -1;
	/* Appended meanwhile, or more than st_size said (sysfs): no EFBIG at the limit. */
	if ((n = copy_pread(f, in, end, out, base + end - start, MAX_OFF,
	    inname)) < 0)
		return -1;
	filled = n > 0 ? end + n : filled;
	end += n;
	if (end_regular(f, in, end, out, base + filled - start,
	    base + end - start) < 0)
		return -1;
	return end - start;
}

#ifdef HAVE_SPLICE
/*
 * A pipe into OUT, whose content goes at offset AT, with splice(2), *TOTAL
 * bytes so far: 1 when it is all copied; 0 where splice cannot be used
 * (read(2) goes on after *TOTAL bytes); -1.
 */
static int
splice_pipe(struct file *f, int in, int out, off_t at, off_t *total)
{
	ssize_t n;

#ifdef F_SETPIPE_SZ
	/* A larger pipe means fewer, larger splices; failing is harmless. */
	fcntl(in, F_SETPIPE_SZ, 1 << 20);
#endif
	while ((n = splice(in, NULL, out, NULL, CHUNK, SPLICE_F_MORE)) > 0 ||
	    (n < 0 && errno == EINTR)) {
		*total += n > 0 ? n : 0;
		if (write_behind(f, out, at + *total) < 0)
			return -1;
	}
	if (n == 0)
		return 1;
	if (dest_error(errno) || errno == EIO)
		return failed_write(f);
	return 0;
}
#endif

/* IN (named INNAME) into OUT from its offset on: the bytes copied, or -1. */
static off_t
copy_fd(struct file *f, int in, int out, const char *inname)
{
	struct stat st;
	off_t total = 0, start, at = lseek(out, 0, SEEK_CUR);
	ssize_t n;

	if (fstat(in, &st) < 0)
		return failed_errno(inname);
	if (S_ISDIR(st.st_mode))
		return failed(inname, "%s", strerror(EISDIR));
	/* st_size 0 may be a file of /proc: read(2) it.  From where IN was
	   read to (stdin, or -C's comparison). */
	if (S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (start = lseek(in, 0, SEEK_CUR)) >= 0)
		return copy_regular(f, in, start, st.st_size, out, at,
		    inname);
#ifdef HAVE_SPLICE
	if (S_ISFIFO(st.st_mode)) {
		int r = splice_pipe(f, in, out, at, &total);

		if (r != 0)
			return r < 0 ? -1 : total;
	}
#endif
	while ((n = xread(in, buf, sizeof buf)) > 0) {
		if (xwrite(out, buf, n) < 0)
			return failed_write(f);
		total += n;
		if (write_behind(f, out, at + total) < 0)
			return -1;
	}
	if (n < 0)
		return failed_errno(inname);
	return total;
}

static void
drop_source_dir(struct srcdir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	free(d->at);
	d->path = d->at = NULL;
	d->fd = -1;
}

/* D: the directory of a source, its first N bytes, walked as walk_dir does. */
static int
keep_source_dir(struct srcdir *d, const char *source, size_t n,
    struct walk *w)
{
	int e;

	drop_source_dir(d);
	if ((d->path = strndup(source, n)) == NULL ||
	    (d->fd = walk_dir(AT_FDCWD, d->path, O_SEARCH_DIR | O_DIRECTORY,
	    w)) < 0 || (d->at = strdup(w->at)) == NULL) {
		e = errno;
		drop_source_dir(d);
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * SOURCE, opened in the directory of the source before it where both name
 * the same one, as given: a batch's sources are most often many in a few
 * directories, each walked once, not once a source.  The last component
 * is walked as walk_dir walks it.
 */
static int
open_source(struct srcdir *d, const char *source, int flags, struct walk *w)
{
	const char *name = strrchr(source, '/');
	size_t n;

	if (name == NULL || name[1] == '\0' || strcmp(name, "/.") == 0 ||
	    strcmp(name, "/..") == 0)
		return walk_dir(AT_FDCWD, source, flags, w);
	n = (size_t)(++name - source);
	if (d->path == NULL || strncmp(d->path, source, n) != 0 ||
	    d->path[n] != '\0') {
		if (keep_source_dir(d, source, n, w) < 0)
			return -1;
	} else
		memcpy(w->at, d->at, strlen(d->at) + 1);
	return walk_component(d->fd, name, flags, w);
}

/* F's input, opened with FLAGS (O_RDONLY to read it). */
static int
open_input(struct run *run, const struct file *f, int flags)
{
	struct walk w;
	int fd;

	walk_start(&w);
	if (strcmp(f->source, "-") == 0) {
		if (stdin_closed) {
			errno = EBADF;
			return failed_errno("stdin");
		}
		return STDIN_FILENO;
	}
	if ((fd = open_source(&run->src, f->source, flags, &w)) >= 0)
		return fd;
	return failed_walk(f->source, &w);
}

/* -a: the old content, holes kept, copied in the kernel where it can be. */
static off_t
copy_old(struct file *f, int out)
{
	return f->regular ? copy_regular(f, f->fd, 0, f->st.st_size, out, 0,
	    f->target) : 0;
}

static void
describe_status(const struct file *f, const char *cmd, int status)
{
	if (WIFSIGNALED(status))
		warnx(f->target, "not replaced: %s killed by signal %d", cmd,
		    WTERMSIG(status));
	else
		warnx(f->target, "not replaced: %s exited with status %d",
		    cmd, WEXITSTATUS(status));
}

/* In the child: run the command; if it cannot be, tell the parent why. */
static _Noreturn void
exec_command(int out, int report)
{
	size_t i;
	int e;

	for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		sigaction(fatal[i], &origact[i], NULL);
	sigaction(SIGXFSZ, &origxfsz, NULL);
	sigaction(SIGCHLD, &origchld, NULL);
	sigprocmask(SIG_SETMASK, &cmdmask, NULL);
	if (dup2(out, STDOUT_FILENO) < 0)
		_exit(125);
	execvp(opt.command[0], opt.command);
	e = errno;
	if (write(report, &e, sizeof e) != sizeof e)
		_exit(125);
	_exit(e == ENOENT ? 127 : 126);
}

/* One line for a command that could not be run: 127 not found, else 126. */
static int
exec_failed(struct file *f, pid_t pid, int e)
{
	int status;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child = 0;
	f->status = e == ENOENT ? 127 : 126;
	if (e == ENOENT)
		warnx(f->target, "not replaced: command '%s' not found%s",
		    opt.command[0], *opt.command[0] == '-' ?
		    " (options go before the target)" : "");
	else
		warnx(f->target, "not replaced: command '%s' cannot be run:"
		    " %s", opt.command[0], strerror(e));
	return -1;
}

/* Its status in F's if it failed. */
static int
wait_command(struct file *f, pid_t pid)
{
	siginfo_t info;
	int status, sig;

	/* WNOWAIT: the pid cannot be reused while on_signal may kill it. */
	while (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) < 0)
		if (errno != EINTR)
			return failed(f->target, "cannot wait for %s: %s",
			    opt.command[0], strerror(errno));
	block_signals();
	child = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if ((sig = caught) != 0)
		die_by(sig);
	unblock_signals();
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	describe_status(f, opt.command[0], status);
	f->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
	    WEXITSTATUS(status);
	return -1;
}

static int
cloexec_pipe(int p[2])
{
	return pipe(p) < 0 || fcntl(p[0], F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(p[1], F_SETFD, FD_CLOEXEC) < 0 ? -1 : 0;
}

/*
 * Command mode: the command writes into a pipe that is copied into the
 * temporary file until every writer has closed it, as $(command) reads:
 * a background process of the command cannot write into the file after
 * it is committed.  The pipe's reading end, the command in *CHILD_PID.
 */
static int
start_command(struct file *f, pid_t *child_pid)
{
	pid_t pid;
	ssize_t n;
	int p[2], report[2], e;

	block_signals();
	if (cloexec_pipe(p) < 0 || cloexec_pipe(report) < 0 ||
	    (pid = fork()) < 0) {
		unblock_signals();
		return failed(f->target, "cannot run %s: %s", opt.command[0],
		    strerror(errno));
	}
	if (pid == 0)
		exec_command(p[1], report[1]);
	child = pid;
	unblock_signals();
	/* Holding a writing end ourselves, we would wait for ever.  End of
	   file on the report pipe: the exec succeeded and closed it. */
	if (close(p[1]) < 0 || close(report[1]) < 0 ||
	    (n = xread(report[0], &e, sizeof e)) < 0) {
		failed(f->target, "cannot run %s: %s", opt.command[0],
		    strerror(errno));
		n = -1;
	}
	close(report[0]);
	if (n == sizeof e)
		n = exec_failed(f, pid, e);
	if (n < 0) {
		close(p[0]);
		return -1;
	}
	*child_pid = pid;
	return p[0];
}

/* The command's output into OUT: its size, or -1. */
static off_t
run_command(struct file *f, int out)
{
	off_t size;
	pid_t pid = -1;
	int in;

	if ((in = start_command(f, &pid)) < 0)
		return -1;
	size = copy_fd(f, in, out, opt.command[0]);
	close(in);
	/* A failed copy does not wait for the command: it may never end. */
	if (size < 0 || wait_command(f, pid) < 0)
		return -1;
	return size;
}

static off_t
fill_temp(struct run *run, struct file *f, int fd)
{
	off_t old, added;
	int in;

	if ((old = opt.append ? copy_old(f, fd) : 0) < 0)
		return -1;
	if (opt.command != NULL)
		added = run_command(f, fd);
	else {
		if ((in = f->in = open_input(run, f, O_RDONLY)) < 0)
			return -1;
		added = copy_fd(f, in, fd, input_name(f));
		if (in != STDIN_FILENO)
			close(in);
		f->in = -1;
	}
	if (added < 0)
		return -1;
	if (opt.noempty && added == 0)
		return failed(f->target, "input is empty, not replaced (-E)");
	return old + added;
}

/* -C: is the new file the same as the old one, content and metadata? */
/* -C: the metadata decided for the new file is the old file's. */
static int
meta_unchanged(const struct file *f)
{
	return f->regular && !f->pathonly &&
	    f->meta.mode == (f->st.st_mode & 07777) &&
	    (f->meta.uid == (uid_t)-1 || f->meta.uid == f->st.st_uid) &&
	    (f->meta.gid == (gid_t)-1 || f->meta.gid == f->st.st_gid);
}

/*
 * -C: may a run leave F as it is, so that what only a change needs fails
 * nothing yet (--check warns)?  Not if F is new, if the metadata asked
 * for (-m, -o, -g) differs from its own, or if -a appends something:
 * then a change is certain.
 */
static int
may_stay(const struct file *f)
{
	return opt.ifchanged && f->exists && !f->changes && meta_unchanged(f);
}

static int
unchanged(const struct file *f, int fd, off_t size)
{
	off_t off;
	ssize_t n;

	if (!meta_unchanged(f) || size != f->st.st_size)
		return 0;
	for (off = 0; off < size; off += n) {
		if ((n = xpread(fd, buf, sizeof buf, off)) < 0)
			return failed_errno(f->target);
		if (n == 0 || xpread(f->fd, cmpbuf, n, off) != n)
			return 0;
		if (memcmp(buf, cmpbuf, n) != 0)
			return 0;
	}
	return 1;
}

/*
 * -C, where only the content may change (compares_first): the input IN read
 * and compared with the target as it comes, nothing written.  1 if it ends
 * as the target does (-a: if it is empty); 0 if not: its first *SAME bytes
 * are the target's (-a: none), and the *N read after them are in buf; -1.
 */
static int
compare_input(struct file *f, int in, const char *inname, off_t *same,
    ssize_t *n)
{
#ifdef F_SETPIPE_SZ
	/* A pipe: fewer, larger reads; failing (not a pipe) is harmless. */
	fcntl(in, F_SETPIPE_SZ, 1 << 20);
#endif
	for (*same = 0, *n = 0;; *same += *n) {
		if ((*n = xread(in, buf, sizeof buf)) < 0)
			return failed_errno(inname);
		/* -a: the old content and the input, the same if it is empty. */
		if (*n == 0)
			return opt.append || *same == f->st.st_size;
		if (opt.append || *same >= f->st.st_size ||
		    xpread(f->fd, cmpbuf, *n, *same) != *n ||
		    memcmp(buf, cmpbuf, *n) != 0)
			return 0;
	}
}

/*
 * -C -a: the new file FD from the old content and the N bytes of the input
 * in buf, its offset after them, ready for the rest: their size, or -1.
 */
static off_t
append_changed(struct file *f, int fd, ssize_t n)
{
	off_t old;

	memcpy(cmpbuf, buf, n);		/* copy_old's fallback reads through buf */
	if ((old = copy_old(f, fd)) < 0)
		return -1;
	if (xpwrite(fd, cmpbuf, n, old) < 0 || lseek(fd, old + n, SEEK_SET) < 0)
		return failed_write(f);
	return old + n;
}

/*
 * The new file FD from the target's first SAME bytes (copied in the
 * kernel, a reflink on XFS and btrfs, its holes left holes) and the N of
 * the input in buf, its offset after them, ready for the rest: their
 * size, or -1.
 */
static off_t
write_changed(struct file *f, int fd, off_t same, ssize_t n)
{
	off_t done, filled;

	if (opt.append)
		return append_changed(f, fd, n);
	/* buf first: copy_span's fallback reads through it. */
	if (n > 0 && xpwrite(fd, buf, n, same) < 0)
		return failed_write(f);
	if ((done = copy_data(f, f->fd, 0, same, fd, 0, &filled,
	    f->target)) < 0)
		return -1;
	if (done < same)
		return failed(f->target, "shrank while it was read (-C)");
	/* An input that ends in the target's hole: its zeros up to there. */
	if ((n == 0 && ftruncate(fd, same) < 0) ||
	    lseek(fd, same + n, SEEK_SET) < 0)
		return failed_write(f);
	return same + n;
}

/*
 * -C compares before it writes where the new file can be the old one but
 * for its content: where the metadata asked for is the target's.
 */
static int
compares_first(const struct file *f)
{
	return opt.ifchanged && meta_unchanged(f);
}

/*
 * Steps 2 and 3 under -C (compares_first): the input compared with the
 * target; only where it differs is the temporary file made, from the
 * target's part that is the same and the rest of the input.  1 if the
 * input was the target (nothing written), 0 (*SIZE written), or -1.
 */
static int
fill_if_changed(struct run *run, struct file *f, off_t *size)
{
	const char *inname = opt.command ? opt.command[0] : input_name(f);
	off_t same = 0, rest = 0;
	ssize_t n = 0;
	pid_t pid = -1;
	int in, r;

	*size = 0;
	if ((in = f->in = opt.command ? start_command(f, &pid) :
	    open_input(run, f, O_RDONLY)) < 0)
		return -1;
	if ((r = compare_input(f, in, inname, &same, &n)) == 0 &&
	    ((opt.inplace ? reopen_to_exchange(f) < 0 ||
	    create_exchange_temp(f) < 0 : create_temp(f, &f->newfd) < 0) ||
	    (*size = write_changed(f, f->newfd, same, n)) < 0 ||
	    (rest = copy_fd(f, in, f->newfd, inname)) < 0))
		r = -1;
	if (in > STDIN_FILENO)
		close(in);
	f->in = -1;
	/* A failed copy does not wait for the command: it may never end. */
	if (r < 0 || (pid > 0 && wait_command(f, pid) < 0))
		return -1;
	*size = r == 1 ? f->st.st_size : *size + rest;
	if (opt.noempty && (opt.append ? r == 1 : *size == 0))
		return failed(f->target, "input is empty, not replaced (-E)");
	return r;
}

/* ==== Step 4: metadata, on the descriptor ==== */


static int
failed_xattr(const struct file *f, const char *name)
{
	if (f->pathonly && errno == ENOENT)
		return failed(f->target, "cannot read its attributes: the file"
		    " is not readable and /proc is not mounted");
	if (f->pathonly && errno == EACCES)
		return failed(f->target, "cannot keep attribute %s: %s (the"
		    " file is not readable)", name, strerror(errno));
	if (strcmp(name, "security.capability") == 0 && errno == EPERM)
		return failed(f->target, "cannot keep its file capabilities:"
		    " %s (setting them needs CAP_SETFCAP; setcap -r drops them"
		    " first)", strerror(errno));
	return failed(f->target, "cannot keep attribute %s: %s", name,
	    strerror(errno));
}

/*
 * security.capability: kept, as set-id bits are, unless the owner or group
 * changes, which drops both as chown(2) does (said on stderr, never
 * silently).  security.selinux: the old file's context is kept.
 */
static int
keep_xattr(const struct file *f, const char *name)
{
	if (strncmp(name, "user.", 5) == 0 ||
	    strcmp(name, "system.posix_acl_access") == 0 ||
	    strcmp(name, "security.selinux") == 0)
		return 1;
	if (strcmp(name, "security.capability") != 0)
		return 0;
	if (f->meta.uid == f->st.st_uid && f->meta.gid == f->st.st_gid)
		return 1;
	warnx(f->target, "its file capabilities are dropped, as the owner or"
	    " group changes (as chown(2) drops them)");
	return 0;
}

#ifdef HAVE_XATTR
/* The old file's attribute NAME onto TO, if it has it. */
static int
copy_xattr(const struct file *f, const char *name, int to)
{
	ssize_t len;
	char *val;
	int r = 0;

	/* ENOTSUP: the old file's file system has no attributes (sshfs). */
	if ((len = old_xattr(f, name, NULL, 0)) < 0)
		return errno == ENODATA || errno == ENOTSUP ? 0 :
		    failed_xattr(f, name);
	val = xmalloc(len + 1);
	if ((len = old_xattr(f, name, val, len)) < 0)
		r = failed_xattr(f, name);
	else {
		if (strcmp(name, "system.posix_acl_access") == 0)
			acl_apply_mode((unsigned char *)val, len,
			    f->meta.mode);
		if (fsetxattr(to, name, val, len, 0) < 0 && (errno != ENOTSUP ||
		    strncmp(name, "security.", 9) == 0))
			r = failed_xattr(f, name);
	}
	free(val);
	return r;
}
#endif

/* The ACL FD got from its directory's default, which open(2) gave it. */
static int
drop_inherited_acl(const struct file *f, int fd)
{
#ifdef HAVE_XATTR
	if (fremovexattr(fd, "system.posix_acl_access") < 0 &&
	    errno != ENODATA && errno != ENOTSUP)
		return failed(f->target, "cannot remove the inherited ACL: %s",
		    strerror(errno));
#else
	(void)f;
	(void)fd;
#endif
	return 0;
}

/*
 * The POSIX ACL, user.* attributes, file capabilities (not if NOCAPS) and
 * SELinux context of the old file, and nothing else: an ACL the temporary
 * file inherited from the directory's default goes.
 */
static int
copy_xattrs(const struct file *f, int to, int nocaps)
{
#ifdef HAVE_XATTR
	ssize_t n;
	char *list, *name;
	int r = 0;

	if (drop_inherited_acl(f, to) < 0)
		return -1;
	if ((n = old_xattr(f, NULL, NULL, 0)) <= 0)
		return n < 0 && errno != ENOTSUP ? failed_xattr(f, "list") : 0;
	list = xmalloc(n);
	if ((n = old_xattr(f, NULL, list, n)) < 0)
		r = failed_xattr(f, "list");
	for (name = list; r == 0 && name < list + n;
	    name += strlen(name) + 1)
		if (keep_xattr(f, name) && !(nocaps &&
		    strcmp(name, "security.capability") == 0))
			r = copy_xattr(f, name, to);
	free(list);
	return r;
#else
	(void)f;
	(void)to;
	(void)nocaps;
	return 0;
#endif
}

/* chown(2) or chmod(2) refused as the file system sets none (fusefat). */
static int
sets_no_metadata(int e)
{
	return e == ENOSYS || e == EOPNOTSUPP || e == ENOTSUP;
}

/*
 * A file system without Unix modes (NTFS, exFAT, vfat) gives every file the
 * mount's mode: a new file gets it, as open(2) gives it; a mode asked for
 * with -m, or an old file's, that it cannot keep is named as its doing.
 */
static int mount_of(int, char *, size_t, char *, size_t);

static int
failed_modeless(const struct file *f, const struct stat *st)
{
	char type[64] = "?", opts[256];

	mount_of(f->dirfd, type, sizeof type, opts, sizeof opts);
	return failed(f->target, "cannot set mode %04o: this file system (%s)"
	    " made it %04o; it does not keep Unix modes",
	    (unsigned)f->meta.mode, type, (unsigned)(st->st_mode & 07777));
}

/* The kernel may refuse a bit (set-group-ID outside the group): say so. */
static int
set_mode(const struct file *f, int fd, mode_t mode)
{
	struct stat st;

	/* A file system that sets no modes: what it gives may be right. */
	if (fchmod(fd, mode) < 0 && !sets_no_metadata(errno))
		return failed(f->target, "cannot set mode: %s",
		    strerror(errno));
	if (fstat(fd, &st) < 0)
		return failed_errno(f->target);
	if ((st.st_mode & 07777) == mode)
		return 0;
	if (!(mode & S_ISGID) || (st.st_mode & S_ISGID)) {
		if (!f->regular && opt.mode == NULL)
			return 0;	/* what open(2) gives */
		return failed_modeless(f, &st);
	}
	return failed(f->target, "cannot set mode %04o: the system made it"
	    " %04o, as set-group-ID needs membership of the file's group (use"
	    " -m to choose a mode)", (unsigned)mode,
	    (unsigned)(st.st_mode & 07777));
}

/* Is GID the caller's group or one of its supplementary groups? */
static int
in_groups(gid_t gid)
{
	int n = getgroups(0, NULL), i, r = gid == getegid();
	gid_t *v;

	if (r || n <= 0 || (v = malloc((size_t)n * sizeof *v)) == NULL)
		return r;
	n = getgroups(n, v);
	for (i = 0; i < n && !r; i++)
		r = v[i] == gid;
	free(v);
	return r;
}

/*
 * The caller's capabilities (/proc/self/status' CapEff): CAP_CHOWN,
 * CAP_FOWNER.  Where they cannot be read, root is taken to have them.
 */
enum { CAP_CHOWN_BIT = 1, CAP_FOWNER_BIT = 8 };

static int
capabilities(void)
{
	unsigned long long caps;
	char *line = NULL;
	size_t cap = 0;
	int r = geteuid() == 0 ? CAP_CHOWN_BIT | CAP_FOWNER_BIT : 0;
	FILE *fp;

	if ((fp = fopen("/proc/self/status", "re")) == NULL)
		return r;
	while (getline(&line, &cap, fp) > 0)
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			/* capability(7): CAP_CHOWN 0, CAP_FOWNER 3 */
			r = (caps & 1 ? CAP_CHOWN_BIT : 0) |
			    (caps & 8 ? CAP_FOWNER_BIT : 0);
			break;
		}
	free(line);
	fclose(fp);
	return r;
}

/*
 * Can F's new file be given its owner and group, as chown(2) decides?
 * With CAP_CHOWN, any; without, its own user only (the caller's, which
 * made it), and one of the caller's groups.
 */
static int
give_user(const struct file *f)
{
	return f->meta.uid == (uid_t)-1 || f->meta.uid == geteuid();
}

static int
give_group(const struct file *f)
{
	return f->meta.gid == (gid_t)-1 || in_groups(f->meta.gid);
}

static int
can_give_owner(const struct run *run, const struct file *f)
{
	return run->anyowner || (give_user(f) && give_group(f));
}

/*
 * The owner and group of F's new file cannot be given (errno E): what -o
 * or -g asked for is named as asked; else the old file's, which are kept.
 */
static int
failed_owner(const struct file *f, int e)
{
	char who[128], type[64] = "?", opts[256];
	int capable = (capabilities() & CAP_CHOWN_BIT) != 0;

	if (e == EPERM && capable) {
		mount_of(f->dirfd, type, sizeof type, opts, sizeof opts);
		return failed(f->target, "cannot set owner and group: %s (this"
		    " file system, %s, refused it)", strerror(e), type);
	}
	if (e == EPERM && opt.uid != (uid_t)-1 && !give_user(f)) {
		id_name(0, f->meta.uid, who, sizeof who);
		return failed(f->target, "cannot give it to %s, as -o asks: %s;"
		    " only a process with CAP_CHOWN gives a file to another"
		    " user", who, strerror(e));
	}
	if (e == EPERM && opt.gid != (gid_t)-1 && !give_group(f)) {
		id_name(1, f->meta.gid, who, sizeof who);
		return failed(f->target, "cannot give it group %s, as -g asks:"
		    " %s; without CAP_CHOWN a process gives only a group it is"
		    " in", who, strerror(e));
	}
	if (e == EPERM && f->regular)
		return failed(f->target, "cannot keep owner %lu and group %lu:"
		    " %s (%suse -o and -g to choose them)",
		    (unsigned long)f->meta.uid, (unsigned long)f->meta.gid,
		    strerror(e), geteuid() == 0 ? "this root process has no"
		    " CAP_CHOWN; " : "");
	return failed(f->target, "cannot set owner and group: %s",
	    strerror(e));
}

/*
 * FD to UID and GID.  A file system that sets no owners (fusefat: ENOSYS)
 * fails nothing where the file has them already.
 */
static int
set_owner(const struct file *f, int fd, uid_t uid, gid_t gid)
{
	char type[64] = "?", opts[256];
	struct stat st;
	int e;

	if (fchown(fd, uid, gid) == 0)
		return 0;
	if (!sets_no_metadata(e = errno) || fstat(fd, &st) < 0)
		return failed_owner(f, e);
	if ((uid == (uid_t)-1 || st.st_uid == uid) &&
	    (gid == (gid_t)-1 || st.st_gid == gid))
		return 0;
	mount_of(f->dirfd, type, sizeof type, opts, sizeof opts);
	return failed(f->target, "cannot set %s %lu: this file system (%s)"
	    " gives every file %lu:%lu; it does not keep Unix owners",
	    uid != (uid_t)-1 && st.st_uid != uid ? "owner" : "group",
	    uid != (uid_t)-1 && st.st_uid != uid ? (unsigned long)uid :
	    (unsigned long)gid, type, (unsigned long)st.st_uid,
	    (unsigned long)st.st_gid);
}

/*
 * The mode F's new file may have before it is given away to another user:
 * no set-ID bits, and no more for the group and others than for the owner,
 * so that the owner-to-be, through its group or as another while the
 * caller owns the file, never gets more than the final file gives it.
 */
static mode_t
mode_before_away(mode_t mode)
{
	mode_t u = (mode >> 6) & 7;

	return (mode & 01700) | (mode & (u << 3)) | (mode & u);
}

/*
 * Is F's new file given away (root's run on another user's file), and is
 * its mode one that can only be set once it is the owner's: set-ID bits,
 * which chown(2) clears, or an owner with less than the group or others?
 * That chmod needs CAP_FOWNER.
 */
static int
mode_after_away(const struct run *run, const struct file *f)
{
	return f->meta.uid != (uid_t)-1 && f->meta.uid != run->euid &&
	    mode_before_away(f->meta.mode) != f->meta.mode;
}

static int
failed_mode_after_away(const struct file *f)
{
	char who[128];

	id_name(0, f->meta.uid, who, sizeof who);
	return failed(f->target, "cannot set mode %04o once the new file is"
	    " %s's: %s (this root process has no CAP_FOWNER, which set-ID bits"
	    " or an owner with fewer rights than others need)",
	    (unsigned)f->meta.mode, who, strerror(EPERM));
}

/*
 * Step 4: the group, attributes, then mode.  A file that goes to another
 * user (root's run on another's file) is given away last, so that what
 * only its owner or CAP_FOWNER may set is set while the caller owns it;
 * chown(2) clears file capabilities, which follow it.  A mode that can
 * only be set after (mode_after_away) is, with the attributes, as the
 * owner's file; before, the file never gives anyone more than the final
 * one will (mode_before_away).
 */
static int
apply_metadata(const struct run *run, const struct file *f, int fd)
{
	int away = f->meta.uid != (uid_t)-1 && f->meta.uid != run->euid;
	mode_t before = mode_before_away(f->meta.mode);

	if ((f->meta.gid != (gid_t)-1 || (f->meta.uid != (uid_t)-1 &&
	    !away)) && set_owner(f, fd, away ? (uid_t)-1 : f->meta.uid,
	    f->meta.gid) < 0)
		return -1;
	if (mode_after_away(run, f)) {
		if (!run->fowner)
			return failed_mode_after_away(f);
		/* 0600 from its creation gives the owner-to-be rw at most */
		if (drop_inherited_acl(f, fd) < 0 || ((before & 0600) !=
		    0600 && set_mode(f, fd, before) < 0) ||
		    set_owner(f, fd, f->meta.uid, (gid_t)-1) < 0)
			return -1;
		return (f->regular && copy_xattrs(f, fd, 0) < 0) ||
		    set_mode(f, fd, f->meta.mode) < 0 ? -1 : 0;
	}
	if ((f->regular && copy_xattrs(f, fd, away) < 0) ||
	    set_mode(f, fd, f->meta.mode) < 0)
		return -1;
	if (!away)
		return 0;
	if (set_owner(f, fd, f->meta.uid, (gid_t)-1) < 0)
		return -1;
#ifdef HAVE_XATTR
	if (f->regular && f->meta.uid == f->st.st_uid &&
	    f->meta.gid == f->st.st_gid)
		return copy_xattr(f, "security.capability", fd);
#endif
	return 0;
}

/* ==== Step 5: the flush plan ==== */

/*
 * Step 5: the data on the device before the rename.
 *
 * The flush plan: what each (file system, mount options) pair gets.  A
 * cheaper sequence than the one safe everywhere (fsync each new file before
 * its rename, fsync its directory after) is used only where the block-level
 * crash test (tests/blockcrash, one profile per row) proves it, with every
 * one of the mount's super options in the row's list (an option ending in
 * '=' takes any value).  Anything else, an option not listed included, gets
 * the safe sequence.
 *
 *	PLAN_ORDERED	the rename's journal commit flushes the device cache
 *			first, so data written and waited for
 *			(sync_file_range) is on the disk before the name is:
 *			ext4 with a journal, XFS.  Not journal_async_commit
 *			(the commit block goes out without a flush first), not
 *			btrfs (its directory fsync logs the name, not the data).
 *	PLAN_SYNCFS	syncfs(2) writes and flushes every file, so a batch
 *			makes one per file system, not one per file.
 *	PLAN_NOJOURNAL	ext2, ext3 and ext4 without a journal, whatever the
 *			options: the old file stays linked until the renames
 *			are on the disk (FL_KEEP_OLD); a batch makes one syncfs
 *			before its renames and one after where its targets are
 *			in several directories (PLAN_SYNCFS; block level:
 *			profiles ext2 and ext4-nojournal, batch scenarios).
 *	PLAN_FUSE	no row: a FUSE server may not pass syncfs or a
 *			directory's fsync on, but does a file's; the renamed
 *			file is flushed after its rename too.  One that serves
 *			another file system's files (fuse_plan) gets
 *			PLAN_NOJOURNAL too: that one may have none, so the old
 *			file stays linked, where the server makes hard links
 *			(block level: profiles ext2-bindfs, ext2-sshfs, the
 *			same over ext4 without one).
 *	PLAN_NODIRSYNC	a FUSE server not known to pass a directory's fsync
 *			on (fuse_plan): after the renames,
 *			sync(2) writes the directories below, and the renamed
 *			file's flush after it flushes the disk's cache (bindfs
 *			over ext2: without it the name could be lost, and the
 *			new one was not on the disk after exit).
 *	PLAN_WHITEOUT	fuse-overlayfs: a name removed leaves a whiteout, so
 *			FL_KEEP_OLD's link has one name a target (link_old).
 *	PLAN_GUESS	an overlay whose upper directory is out of sight
 *			(overlay_plan): PLAN_NOJOURNAL, as what holds it may
 *			have no journal, but a link a full disk refuses
 *			goes (no_links).
 *	PLAN_FILELOG	one file: the fsync of a renamed file logs its data
 *			and its new name in one log commit (btrfs's log tree),
 *			so the data is only waited for before the rename, and
 *			the file is flushed after it instead of its directory.
 *			Not with -b (TARGET~ is named in the directory only),
 *			not in a batch (a flush per file; syncfs is one).
 */
enum { PLAN_SAFE = 0, PLAN_ORDERED = 1, PLAN_SYNCFS = 2, PLAN_FUSE = 4,
    PLAN_NOJOURNAL = 8, PLAN_FILELOG = 16, PLAN_NODIRSYNC = 32,
    PLAN_WHITEOUT = 64, PLAN_GUESS = 128 };

/*
 * The flushes of one file, from its plan (plan_flushes, struct file's
 * flushes).  A changed file, before its rename: FL_WAIT or FL_FSYNC, or
 * (a batch) FL_START and FL_SYNCFS.  After it: FL_DIR, FL_FILE_AFTER.
 * An unchanged one (-C): FL_OLD, or (a batch) FL_OLD_SYNCFS.
 */
enum {
	FL_WAIT = 1,		/* wait for the data (sync_file_range) */
	FL_FSYNC = 2,		/* fsync the new file */
	FL_START = 4,		/* start its write-back, */
	FL_SYNCFS = 8,		/* ... then one syncfs before the renames */
	FL_DIR = 16,		/* after the rename, flush the directory */
	FL_FILE_AFTER = 32,	/* ... and/or the renamed file */
	FL_KEEPFD = 64,		/* ... through the descriptor written with */
	FL_KEEP_OLD = 128,	/* old file linked till the directory flush */
	FL_BYFS = 256,		/* a batch: several directories of its file
				   system flushed by one syncfs */
	FL_OLD = 512,		/* unchanged: fsync it and its directory */
	FL_OLD_SYNCFS = 1024,	/* ... or one syncfs before the renames */
	FL_SYNC = 2048		/* the directory's fsync not passed on:
				   sync(2) too, before FL_FILE_AFTER */
};

/* What struct file's bit fields hold. */
_Static_assert(FL_SYNC < 1 << 12 && PLAN_GUESS < 1 << 8 &&
    REPLACED < 1 << 3 && FLUSH_UNCHANGED < 1 << 2, "struct file's bit fields");

static const struct fsplan {
	const char *type;		/* as /proc/self/mountinfo names it */
	int	 plan;
	const char *options;		/* the super options proven with it */
} fsplans[] = {
	{ "ext4", PLAN_ORDERED | PLAN_SYNCFS, "rw ro errors= commit= "
	    "data=ordered data=writeback data=journal noauto_da_alloc "
	    "nodelalloc nodioread_nolock" },
	{ "ext3", PLAN_ORDERED | PLAN_SYNCFS, "rw ro errors= commit= "
	    "data=ordered" },
	{ "xfs", PLAN_ORDERED | PLAN_SYNCFS, "rw ro attr2 inode64 logbufs= "
	    "logbsize= noquota" },
	{ "btrfs", PLAN_SYNCFS | PLAN_FILELOG, "rw ro ssd discard=async nodiscard "
	    "space_cache=v2 subvolid= subvol=" },
};

/* Is every comma-separated option of OPTS one of the words of LIST? */
static int
options_proven(const char *opts, const char *list)
{
	const char *w, *end;
	size_t n, k;

	for (; *opts != '\0'; opts += n + (opts[n] == ',')) {
		n = strcspn(opts, ",");
		for (w = list; *w != '\0'; w = end + (*end == ' ')) {
			end = w + strcspn(w, " ");
			k = end - w;
			if (k > 0 && (w[k - 1] == '=' ? k <= n : k == n) &&
			    strncmp(opts, w, k) == 0)
				break;
		}
		if (*w == '\0')
			return 0;
	}
	return 1;
}

#if defined(HAVE_SYNC_FILE_RANGE) && defined(HAVE_EXT4_MAGIC)
/* ext2, ext3 and ext4 share a driver; sysfs tells whether there is a journal. */
static int
ext4_journaled(int fd)
{
	char link[PATH_MAX], path[PATH_MAX + 64], *name;
	struct stat st;
	ssize_t n;
	int sfd;

	if (fstat(fd, &st) < 0)
		return -1;
	snprintf(path, sizeof path, "/sys/dev/block/%u:%u",
	    major(st.st_dev), minor(st.st_dev));
	if ((n = readlink(path, link, sizeof link - 1)) < 0)
		return -1;
	link[n] = '\0';
	name = strrchr(link, '/') != NULL ? strrchr(link, '/') + 1 : link;
	snprintf(path, sizeof path, "/sys/fs/ext4/%s/journal_task", name);
	if ((sfd = xopenat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0)) < 0)
		return -1;
	n = xread(sfd, link, sizeof link);
	close(sfd);
	if (n <= 0)
		return -1;
	return link[0] != '<';		/* "<none>": no journal */
}
#endif

/*
 * The mount ID of FD: from statx, else from /proc/self/fdinfo (Linux 3.15,
 * any libc: musl has no STATX_MNT_ID).  0 if neither says.
 */
static unsigned long long
mount_id(int fd)
{
	unsigned long long id = 0;
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *fp;

#ifdef STATX_MNT_ID
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 &&
	    (sx.stx_mask & STATX_MNT_ID))
		return sx.stx_mnt_id;
#endif
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	if ((fp = fopen(path, "re")) == NULL)
		return 0;
	while (id == 0 && getline(&line, &cap, fp) > 0)
		if (sscanf(line, "mnt_id: %llu", &id) != 1)
			id = 0;
	free(line);
	fclose(fp);
	return id;
}

/*
 * The mount of FD in /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT
 * OPTS [TAGS] - TYPE SOURCE SUPEROPTS".  By mount ID, else by device (every
 * mount of one device shares its super options; a btrfs subvolume's device
 * is not its mount's, so it is then not found and gets the safe plan).
 */
static int
mount_of(int fd, char *type, size_t tn, char *opts, size_t on)
{
	unsigned long long id = mount_id(fd);
	unsigned int maj, min;
	char *line = NULL, *sep, fmt[64];
	size_t cap = 0;
	struct stat st;
	int found = 0;
	FILE *fp;

	if (fstat(fd, &st) < 0)
		return 0;
	if ((fp = fopen("/proc/self/mountinfo", "re")) == NULL)
		return 0;
	snprintf(fmt, sizeof fmt, "%%%zus %%*s %%%zus", tn - 1, on - 1);
	while (!found && getline(&line, &cap, fp) > 0) {
		unsigned long long mid;

		if (sscanf(line, "%llu %*u %u:%u", &mid, &maj, &min) != 3 ||
		    (sep = strstr(line, " - ")) == NULL)
			continue;
		found = (id != 0 ? mid == id : makedev(maj, min) == st.st_dev)
		    && sscanf(sep + 3, fmt, type, opts) == 2;
	}
	free(line);
	fclose(fp);
	return found;
}

/* Is WORD one of the comma-separated options of OPTS? */
static int
has_option(const char *opts, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = opts; (p = strstr(p, word)) != NULL; p += n)
		if ((p == opts || p[-1] == ',') &&
		    (p[n] == '\0' || p[n] == ','))
			return 1;
	return 0;
}

static int fs_plan(int, int);

/*
 * overlayfs: its new files and names are in its upper directory (OPTS'
 * upperdir=, as given to mount(2): mountinfo's octal escapes undone, then
 * the backslashes overlayfs itself takes away), on a file system of its
 * own.  Without a journal there, the old file stays linked (block level:
 * without it a crash lost the target's name).  Where the upper directory
 * cannot be found (a relative path, a path cut short, another mount
 * namespace, as in a container, an overlay over an overlay) what holds it
 * cannot be known: the link too, as that is safe over any file system
 * (PLAN_GUESS).
 */
static int
overlay_plan(const char *opts, int depth)
{
	char path[PATH_MAX], *p = path;
	const char *o = opts;
	int fd, plan, cut;

	while ((o = strstr(o, "upperdir=")) != NULL && o != opts && o[-1] != ',')
		o++;
	if (o == NULL || o[9] != '/' || depth > 0)
		return PLAN_NOJOURNAL | PLAN_GUESS;
	for (o += 9; *o != '\0' && *o != ',' && p < path + sizeof path - 1; p++)
		if (o[0] == '\\' && o[1] >= '0' && o[1] <= '3' && o[2] >= '0' &&
		    o[2] <= '7' && o[3] >= '0' && o[3] <= '7') {
			*p = (o[1] - '0') << 6 | (o[2] - '0') << 3 | (o[3] - '0');
			o += 4;
		} else
			*p = *o++;
	*p = '\0';
	cut = *o != '\0' && *o != ',';
	for (p = path, o = path; *o != '\0'; o++)	/* ovl_unescape */
		if (*o != '\\' || *++o != '\0')
			*p++ = *o;
		else
			break;
	*p = '\0';
	if (cut || (fd = open(path, O_SEARCH_DIR | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		return PLAN_NOJOURNAL | PLAN_GUESS;
	plan = fs_plan(fd, depth + 1);
	close(fd);
	/* A batch's syncfs through overlayfs is not proven: a flush a file. */
	return plan & PLAN_NOJOURNAL ? plan & (PLAN_NOJOURNAL | PLAN_GUESS) :
	    PLAN_SAFE;
}

/*
 * FUSE.  A server on a block device of its own (fuseblk: exfat-fuse,
 * ntfs-3g) is the file system: a flush a file (block level: a kept link
 * made ntfs-3g's directory unreadable in 2 of 214 states).  Any other
 * (fuse, fuse.NAME: bindfs, sshfs) serves what another file system holds,
 * which it does not say, and which may have no journal: PLAN_NOJOURNAL,
 * and PLAN_NODIRSYNC, as it may not pass a directory's fsync on.
 * fuse-overlayfs passes it on (seen with strace; block level, profiles
 * ext2-fuse-overlayfs and ext4-nojournal-fuse-overlayfs: old or new
 * without sync(2)), and leaves a whiteout for each name removed in a
 * directory of its lower layer: PLAN_WHITEOUT (link_old).
 */
static int
fuse_plan(const char *type)
{
	if (strcmp(type, "fuseblk") == 0)
		return PLAN_FUSE;
	if (strcmp(type, "fuse.fuse-overlayfs") == 0)
		return PLAN_FUSE | PLAN_NOJOURNAL | PLAN_WHITEOUT;
	return PLAN_FUSE | PLAN_NOJOURNAL | PLAN_NODIRSYNC;
}

/*
 * The plan for the file system FD is on, from its type and super options
 * (DEPTH: layers looked through).  Without a journal (ext2, or ext3/ext4
 * whose sysfs says "<none>") the old file stays linked whatever the
 * options: that is the safe sequence and one link more, never less.
 */
static int
fs_plan(int fd, int depth)
{
	char type[64], opts[8192];
	int journal = 1, no = 0;
	size_t i;

	if (!mount_of(fd, type, sizeof type, opts, sizeof opts))
		return PLAN_SAFE;
	if (strncmp(type, "fuse", 4) == 0)
		return fuse_plan(type);
	if (strcmp(type, "overlay") == 0 && !has_option(opts, "volatile"))
		return strlen(opts) < sizeof opts - 1 ?
		    overlay_plan(opts, depth) : PLAN_NOJOURNAL | PLAN_GUESS;
#if defined(HAVE_SYNC_FILE_RANGE) && defined(HAVE_EXT4_MAGIC)
	if (strncmp(type, "ext", 3) == 0)
		journal = ext4_journaled(fd);
#endif
	if (strcmp(type, "ext2") == 0 || journal == 0)
		return PLAN_NOJOURNAL | PLAN_SYNCFS;
	if (journal < 0)
		return PLAN_SAFE;
#if !defined(HAVE_SYNC_FILE_RANGE) || !defined(HAVE_EXT4_MAGIC)
	no = PLAN_ORDERED | PLAN_FILELOG;	/* no data wait: fsync */
#endif
	for (i = 0; i < sizeof fsplans / sizeof fsplans[0]; i++)
		if (strcmp(type, fsplans[i].type) == 0 &&
		    options_proven(opts, fsplans[i].options))
			return fsplans[i].plan & ~no;
	return PLAN_SAFE;
}

/*
 * PLAN_ORDERED: the data, written and waited for, is enough: the directory
 * flush after the rename commits the new inode and its name in one journal
 * commit (with --no-sync, the next commit does).  PLAN_FILELOG: the same,
 * with the file's flush after the rename.  Elsewhere: fsync.
 */
static int
flush_data(int fd, int flushes)
{
#ifdef HAVE_SYNC_FILE_RANGE
	if (flushes & FL_WAIT) {
		if (sync_range(fd, 0, 0, SYNC_RANGE_WAIT) == 0)
			return 0;
		if (errno != ENOSYS)
			return -1;
	}
#else
	(void)flushes;
#endif
	return flush_fd(fd);
}

/* Step 5 for F's new file FD. */
static int
flush_new(const struct file *f, int fd)
{
	if (flush_data(fd, f->flushes) < 0)
		return failed(f->target, "cannot flush to disk: %s",
		    strerror(errno));
	return 0;
}

/*
 * The first half of step 5 in a batch's pipeline (flush_later): the new
 * file's write-back started, to be waited for a few files later.  An error
 * is a lost write, as in write_behind.
 */
static int
start_flush(const struct file *f, int fd)
{
#ifdef HAVE_SYNC_FILE_RANGE
	if (sync_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0 &&
	    errno != ENOSYS)
		return failed(f->target, "cannot flush to disk: %s",
		    strerror(errno));
#else
	(void)f;
	(void)fd;
#endif
	return 0;
}

/*
 * F's flushes (FL_*), once its plan and the new file's mode are known: per
 * file where there is one target or syncfs does not report errors
 * (RUN->perfile), else per file system where the plan has it.
 * PLAN_FILELOG only where the target's is the only name to change: one
 * target, no -b.  The flush after the rename is not skipped by --no-sync
 * where there is no journal (or, FUSE, may be none) and an old file was
 * replaced: its hidden link
 * (FL_KEEP_OLD, so that every state holds a complete file under the
 * target's name: tests/blockcrash, profiles ext2 and ext4-nojournal) may go
 * only once the new name is on disk.  The new file's descriptor is kept for
 * FL_FILE_AFTER where there is one target, or where its mode forbids
 * opening it again (a descriptor each would not scale).
 */
static int
plan_flushes(const struct run *run, const struct file *f)
{
	int plan = f->plan, fl = 0;
	int per = run->perfile || !(plan & PLAN_SYNCFS);
	int nojournal = (plan & PLAN_NOJOURNAL) && f->exists;
	int flush = opt.sync || nojournal;

	if (njobs > 1 || opt.backup)
		plan &= ~PLAN_FILELOG;

	if (per || (plan & PLAN_ORDERED))
		fl |= (plan & (PLAN_ORDERED | PLAN_FILELOG)) ? FL_WAIT : FL_FSYNC;
	if (!per && !(plan & PLAN_ORDERED))
		fl |= FL_START | FL_SYNCFS;
	if (flush && !(plan & PLAN_FILELOG))
		fl |= FL_DIR;
	if (flush && (plan & (PLAN_FILELOG | PLAN_FUSE)))
		fl |= FL_FILE_AFTER;
	if ((fl & FL_FILE_AFTER) &&
	    (njobs == 1 || !(f->meta.mode & (S_IRUSR | S_IWUSR))))
		fl |= FL_KEEPFD;
	if (nojournal && !opt.backup)
		fl |= FL_KEEP_OLD;
	if (flush && (plan & PLAN_NODIRSYNC))
		fl |= FL_SYNC;
	if (!per)
		fl |= FL_BYFS;
	if (opt.sync)
		fl |= per ? FL_OLD : FL_OLD_SYNCFS;
	return fl;
}

/* ==== Before the first rename: the checks ==== */

/*
 * Before the rename: what would make it fail is looked for while nothing is
 * written where that can be known (before a command runs), and in any case
 * before the first rename of a batch, so that a failure during the renames
 * is one that nothing could foresee.
 */

/*
 * chattr's +i and +a on FD forbid renaming over the file (and linking it,
 * and, on a directory, any rename in it): the flag, in words.  Where the
 * flags cannot be read (an O_PATH descriptor), the rename will tell.
 */
static const char *
chattr_refusal(int fd)
{
#ifdef HAVE_CHATTR_FLAGS
	int flags;

	if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0)
		return flags & FS_IMMUTABLE_FL ? "immutable (chattr +i)" :
		    flags & FS_APPEND_FL ? "append-only (chattr +a)" : NULL;
#else
	(void)fd;
#endif
	return NULL;
}

/* The same for the regular file NAME of the target's directory. */
static const char *
chattr_refusal_at(const struct file *f, const char *name)
{
	int fd = xopenat(f->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC, 0);
	const char *why = chattr_refusal(fd);

	if (fd >= 0)
		close(fd);
	return why;
}

/* Is NAME, in the target's directory, a mount point (a bind-mounted file)? */
static int
mount_point(const struct file *f, const char *name)
{
#ifdef HAVE_STATX_MOUNT_ROOT
	struct statx sx;

	return statx(f->dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE,
	    &sx) == 0 && (sx.stx_attributes_mask & sx.stx_attributes &
	    STATX_ATTR_MOUNT_ROOT) != 0;
#else
	(void)f;
	(void)name;
	return 0;
#endif
}

/* A directory that chattr closed: nothing can be created or renamed in it. */
static int
check_dir(const struct file *f)
{
	const char *why = chattr_refusal(f->dirfd);

	if (why != NULL)
		return failed(f->target, "directory %s is %s; cannot be %s",
		    f->dirpath, why, f->exists ? "replaced" : "created");
	return 0;
}

/*
 * The sticky bit (as on /tmp): does it keep the caller from renaming over,
 * or removing, a file of OWNER in directory DIRFD?  Only the file's owner,
 * the directory's, or a caller with CAP_FOWNER may (the kernel's
 * check_sticky; CAP_FOWNER is the caller's to ask, as it reads /proc).
 * Where DIRFD cannot be looked at, the rename itself tells.
 */
static int
sticky_keeps(int dirfd, uid_t owner)
{
	struct stat d;

	return owner != geteuid() && fstat(dirfd, &d) == 0 &&
	    (d.st_mode & S_ISVTX) && d.st_uid != geteuid();
}

/*
 * -b: TARGET~ (BAKFINAL), which exists, of OWNER: in a sticky directory that
 * others can write to, replaced only if it is the caller's or the
 * directory owner's, as the sticky bit lets only those rename over it (root
 * could; it does not remove another user's file there either).  In any
 * sticky directory, the kernel's rule (sticky_keeps; CAP_FOWNER asked only
 * then): the rename over it would fail after the target was replaced.
 */
static int
planted_backup(const struct file *f, const char *bakfinal, uid_t owner)
{
	char *file;
	int r;

	if ((r = planted(f, owner, S_IWOTH)) < 0)
		return r;
	if (r == 0 && (!sticky_keeps(f->dirfd, owner) ||
	    (capabilities() & CAP_FOWNER_BIT)))
		return 0;
	if (r == 0)
		return failed(f->target, "cannot make backup: the sticky"
		    " directory lets only its owner or the file's rename over"
		    " %s: %s", bakfinal, strerror(EPERM));
	file = join(f->dirpath, bakfinal);
	failed_planted(file, "replacing a file", owner, f->dirpath);
	free(file);
	return -1;
}

/*
 * -b: TARGET~ must fit the directory's NAME_MAX and, if it exists, be what
 * a rename can replace.  Returns that NAME_MAX, 0 if TARGET~ already is
 * the old file, or -1.
 */
static long
check_backup_name(const struct file *f)
{
	char bakfinal[NAME_MAX + 2];	/* TARGET~ */
	long max = name_max(f);
	const char *why;
	struct stat st;

	if (snprintf(bakfinal, sizeof bakfinal, "%s%s", f->name,
	    opt.suffix) > max)
		return failed(f->target, "cannot make backup: %s",
		    strerror(ENAMETOOLONG));
	if (fstatat(f->dirfd, bakfinal, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return max;
	if (S_ISDIR(st.st_mode))
		return failed(f->target, "cannot make backup %s: %s", bakfinal,
		    strerror(EISDIR));
	if (mount_point(f, bakfinal))
		return failed(f->target, "cannot make backup %s: it is a mount"
		    " point", bakfinal);
	if (S_ISREG(st.st_mode) &&
	    (why = chattr_refusal_at(f, bakfinal)) != NULL)
		return failed(f->target, "cannot make backup %s: it is %s",
		    bakfinal, why);
	if (st.st_dev == f->st.st_dev && st.st_ino == f->st.st_ino)
		return 0;
	return planted_backup(f, bakfinal, st.st_uid) == 0 ? max : -1;
}

/*
 * Without a journal (ext2, ext4 without one) the block writes of a rename
 * may reach the disk in any order: freed old inode first, new name
 * later, and fsck removes a name that points to a free inode.  The old file
 * stays linked under a hidden name until the directory is flushed, so that
 * every state holds a complete file under the target's name (block level:
 * tests/blockcrash, profiles ext2 and ext4-nojournal): FL_KEEP_OLD.
 *
 * -b: before the rename, a hidden hard link keeps the old file; after it, the
 * link is renamed over TARGET~.  A run that fails before the rename removes
 * the link, so an existing backup is only ever replaced by a finished run.
 * Without -b, the same link where FL_KEEP_OLD asks for it, removed with the
 * litter once the directory is flushed.
 */
/* exFAT and vfat have no hard links; protected_hardlinks refuses some. */
static int
failed_nolink(const struct file *f)
{
	char type[64] = "?", opts[256];
	int e = errno;

	mount_of(f->dirfd, type, sizeof type, opts, sizeof opts);
	return failed(f->target, "cannot make backup: -b needs a hard link to"
	    " the old file, which this file system (%s) refused: %s", type,
	    strerror(e));
}

/* -b's link to the old file cannot be made (errno says why). */
static int
failed_link(const struct file *f)
{
	/* Same directory: only a mount can be in between. */
	if (errno == EXDEV)
		return failed(f->target, "is a mount point and cannot be"
		    " replaced: %s", strerror(errno));
	if (errno == EPERM || errno == ENOTSUP || errno == EOPNOTSUPP)
		return failed_nolink(f);
	return failed(f->target, "cannot make backup: %s", strerror(errno));
}

/* The hidden link's name in F->bakname. */
static int
name_backup_link(struct file *f, long max)
{
	if (hidden_buffer(&f->bakname, f, opt.suffix) < 0)
		return -1;
	return hidden_name(f->bakname, f->name, opt.suffix, max);
}

/*
 * -b where there are no hard links (exFAT, vfat): found before the command
 * runs or the input is read, by making the link and removing it at once.
 */
static int
probe_link(struct file *f, long max)
{
	if (name_backup_link(f, max) < 0)
		return -1;
	if (linkat(f->dirfd, f->name, f->dirfd, f->bakname, 0) < 0) {
		f->bakname[0] = '\0';
		if (errno != ENOENT)	/* ENOENT: as in link_backup */
			return failed_link(f);
		return 0;
	}
	/* Not removed: it is litter, removed on the way out. */
	if (unlinkat(f->dirfd, f->bakname, 0) < 0)
		return failed(f->target, "cannot make backup: %s",
		    strerror(errno));
	f->bakname[0] = '\0';
	return 0;
}

/* Does F's old file get a second name before the rename (-b, FL_KEEP_OLD)? */
static int
needs_link(const struct file *f)
{
	return f->exists && (opt.backup || (f->flushes & FL_KEEP_OLD));
}

/*
 * A FUSE server that makes no hard links (exFAT, vfat: EPERM), or refuses
 * this one (protected_hardlinks, LINK_MAX): what holds its data is not
 * known to need the link, so F goes on without it, with the plain
 * sequence.  An I/O error or a full disk fails as elsewhere, but on an
 * overlay whose upper directory is out of sight (PLAN_GUESS): there a full
 * disk refuses the copy of a file still in a lower layer that the link
 * makes first, and such a file needs no link (a lost new name shows it).
 */
static int
no_links(struct file *f)
{
	int full = errno == ENOSPC || errno == EDQUOT;

	if (!(f->plan & PLAN_GUESS ? full : (f->plan & PLAN_FUSE) &&
	    (errno == EPERM || errno == ENOSYS || errno == ENOTSUP ||
	    errno == EOPNOTSUPP || errno == EMLINK)))
		return 0;
	f->flushes &= ~FL_KEEP_OLD;
	return 1;
}

/*
 * FL_KEEP_OLD's link cannot be made (errno says why: EIO, ENOSPC, EMLINK,
 * EPERM from protected_hardlinks): without it a crash can lose the name on
 * this file system, so nothing is replaced.
 */
static int
failed_keep_old(const struct file *f)
{
	char type[64] = "?", opts[256];
	int e = errno;

	mount_of(f->dirfd, type, sizeof type, opts, sizeof opts);
	return failed(f->target, "cannot keep the old file linked until the"
	    " directory is on disk, which this file system (%s) needs so that"
	    " a crash cannot lose the name: %s", f->plan & PLAN_FUSE ?
	    "FUSE, over one that may have no journal" :
	    strcmp(type, "overlay") == 0 ? "overlayfs, over one that may have"
	    " no journal" : "no journal", strerror(e));
}

/*
 * Would FL_KEEP_OLD's link of F's old file be refused?  Found before the
 * input is read, and by --check, where fs.protected_hardlinks refuses it
 * (EPERM), as the kernel's may_linkat decides for a caller without
 * CAP_FOWNER: its own file, or a regular one it may read and write that
 * is neither set-user-ID nor executable set-group-ID.  LINK_MAX (EMLINK;
 * fpathconf only guesses it, and a batch may link one file twice), an
 * I/O error or a full disk only the link itself tells; with -C, only a
 * change needs the link.  Through FUSE a refused link is no failure
 * (no_links): F goes on without it, and --check says so.
 */
static int
check_keep_old(const struct run *run, struct file *f)
{
	struct stat st;
	mode_t m;

	if (!(f->flushes & FL_KEEP_OLD) || !f->exists || opt.backup ||
	    !run->linkrules ||
	    fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;	/* gone: nothing to keep */
	m = st.st_mode;
	if (st.st_uid == geteuid() || (S_ISREG(m) && !(m & S_ISUID) &&
	    (m & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
	    faccessat(f->dirfd, f->name, R_OK | W_OK,
	    AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0))
		return 0;
	errno = EPERM;
	if (no_links(f))
		return 0;
	if (may_stay(f)) {	/* -C may not need it */
		warnx(f->target, "a run fails unless nothing changes (-C):"
		    " cannot keep the old file linked: %s", strerror(errno));
		return 0;
	}
	return failed_keep_old(f);
}

/*
 * A target the sticky bit keeps the caller from renaming over (sticky_keeps):
 * the rename would fail, and a link made to keep the old file could not be
 * removed.  Found before the input is read, and by --check; with -C, only
 * a change needs the rename.
 */
static int
check_sticky(const struct run *run, const struct file *f)
{
	if (!f->exists || opt.inplace || run->fowner ||
	    !sticky_keeps(f->dirfd, f->st.st_uid))
		return 0;
	errno = EPERM;
	if (may_stay(f)) {
		warnx(f->target, "a run fails unless nothing changes (-C): the"
		    " sticky directory lets only its owner or the file's rename"
		    " over it: %s", strerror(errno));
		return 0;
	}
	return failed(f->target, "cannot be replaced: the sticky directory"
	    " lets only its owner or the file's rename over it: %s",
	    strerror(errno));
}

/*
 * fuse-overlayfs leaves a whiteout in its upper directory for each name
 * removed in a directory of its lower layer, though the name was never
 * there (PLAN_WHITEOUT): FL_KEEP_OLD's link is ".NAME.ponywrite-old"
 * there, made over its own whiteout, one a target however often it is
 * replaced.  A random name where that one is taken (another run's, or left
 * by a crash), or may be another target's (check_duplicates).  Signals
 * are blocked till F->bakname (hidden_size) says which: the handler must
 * not remove another run's link.
 */
static int
link_old(struct file *f, long max)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int r, e;

	if (opt.backup || !(f->plan & PLAN_WHITEOUT) || jobs[f->dir].randomold)
		return linkat(f->dirfd, f->name, f->dirfd, f->bakname, 0);
	tagged_name(name, f->name, "ponywrite-old", max, 1);
	block_signals();
	if ((r = linkat(f->dirfd, f->name, f->dirfd, name, 0)) == 0) {
		if (fstatat(f->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_dev == f->st.st_dev && st.st_ino == f->st.st_ino) {
			memcpy(f->bakname, name, strlen(name) + 1);
			f->bakfixed = 1;
		} else {	/* another run replaced the target */
			unlinkat(f->dirfd, name, 0);
			r = -1;
			errno = EEXIST;
		}
	}
	e = errno;
	unblock_signals();
	errno = e;
	if (r < 0 && errno == EEXIST)
		return linkat(f->dirfd, f->name, f->dirfd, f->bakname, 0);
	return r;
}

static int
link_backup(struct file *f)
{
	long max;
	int tries;

	if (!needs_link(f))
		return 0;
	if (!opt.backup)
		max = name_max(f);
	else if ((max = check_backup_name(f)) <= 0)
		return (int)max;	/* 0: it already is the old file */
	if (name_backup_link(f, max) < 0)
		return -1;
	/* ENOENT: another run replaced the target; back up what is there now. */
	for (tries = 0; (opt.inplace ? link_fd(f, f->newfd, f->bakname) :
	    link_old(f, max)) < 0; tries++)
		if (errno != ENOENT || tries == 100 || opt.inplace) {
			f->bakname[0] = '\0';
			if (!opt.backup && (errno == ENOENT || no_links(f)))
				return 0;	/* no old file left to keep */
			return opt.backup ? failed_link(f) : failed_keep_old(f);
		}
	return 0;
}

/*
 * Why F, which exists, cannot be replaced, in WHY (N bytes): a mount point,
 * or immutable or append-only (chattr).  1 if it cannot, 0 if it can.
 */
static int
replace_refusal(const struct file *f, char *why, size_t n)
{
	const char *flag;

	if (!opt.inplace && mount_point(f, f->name))
		snprintf(why, n, "is a mount point and cannot be replaced: %s",
		    strerror(EBUSY));
	else if ((flag = chattr_refusal(f->fd)) != NULL)
		snprintf(why, n, "is %s; cannot be replaced", flag);
	else
		return 0;
	return 1;
}

/*
 * The target: a mount point cannot be renamed over, nor a file with chattr
 * +i or +a; with BACKUP, -b's name is checked too, and that the file system
 * has hard links.
 */
static int
check_replaceable(struct file *f, int backup)
{
	char why[128];
	long max;

	if (!f->exists)
		return 0;
	if (replace_refusal(f, why, sizeof why))
		return failed(f->target, "%s", why);
	if (!backup || !opt.backup || (max = check_backup_name(f)) == 0)
		return 0;
	return max < 0 ? -1 : probe_link(f, max);
}

/* ==== Steps 6 and 7: the renames and the flushes after them ==== */

static int
rename_backup(struct file *f)
{
	char bakfinal[NAME_MAX + 2];	/* TARGET~ */
	struct stat st;

	if (f->bakname == NULL || f->bakname[0] == '\0' || !opt.backup)
		return 0;
	snprintf(bakfinal, sizeof bakfinal, "%s%s", f->name, opt.suffix);
	if (renameat(f->dirfd, f->bakname, f->dirfd, bakfinal) < 0) {
		warnx(f->target, "replaced, but the previous version could not"
		    " be renamed to %s: %s; it is kept as %s/%s", bakfinal,
		    strerror(errno), f->dirpath, f->bakname);
		f->bakname[0] = '\0';
		return -1;
	}
	/* Already another name of the same file: rename(2) did nothing. */
	if (fstatat(f->dirfd, f->bakname, &st, AT_SYMLINK_NOFOLLOW) == 0)
		unlinkat(f->dirfd, f->bakname, 0);
	f->bakname[0] = '\0';
	return 0;
}

/*
 * Rename the temporary file TMP over the target, and -b's link to TARGET~:
 * 0, 1 if the target was replaced but not the backup, -1 if the target was
 * not replaced.
 */
static int
rename_over(struct file *f, char *tmp)
{
	if (renameat(f->dirfd, tmp, f->dirfd, f->name) < 0) {
		if (errno == EBUSY)
			return failed(f->target, "is a mount point and cannot"
			    " be replaced: %s", strerror(errno));
		return failed_errno(f->target);
	}
	tmp[0] = '\0';
	return rename_backup(f) < 0 ? 1 : 0;
}

/*
 * A rename made durable by the renamed file's flush (FL_FILE_AFTER): on
 * btrfs, one target's (PLAN_FILELOG); on FUSE, every one's, as the server
 * may not pass the directory's flush on (its fsync of the file commits the
 * rename on the file system underneath).  Through FD if it was kept
 * (FL_KEEPFD), else opened again by NAME.  FD is closed.
 */
static int
flush_named(int dirfd, const char *name, int fd)
{
	int r, e;

	if (fd < 0)
		fd = xopenat(dirfd, name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0 && errno == EACCES)
		fd = xopenat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	r = flush_fd(fd);
	e = errno;
	close(fd);
	errno = e;
	return r;
}


/*
 * The directory flush failed, so the new name may not be on disk: the old
 * file stays linked under its hidden name (a crash may still need it), and
 * the message says where.
 */
static void
keep_old_link(const char *target, const char *dirpath, char *name)
{
	if (opt.backup || name == NULL || name[0] == '\0')
		return;
	warnx(target, "the old content stays linked as %s/%s", dirpath, name);
	name[0] = '\0';
}

/* --print-changed: the target's name on stdout, once it has changed. */
static int
print_changed(const char *target, int status)
{
	if (printf("%s%c", target, opt.null ? '\0' : '\n') < 0 ||
	    fflush(stdout) != 0) {
		warnx(target, "replaced, but its name could not be written"
		    " to stdout: %s", strerror(errno));
		return opt.command != NULL ? 125 : 3;
	}
	return status;
}

/* ==== The run: every target, one or many ==== */

/*
 * The run: every target goes through the steps above; no temporary file is
 * renamed before all of them are safe (step 5 done for every one), and the
 * flushes of a batch of several targets are made once per file system, not
 * once per file:
 *
 *	1. resolve_job		each target's directory, opened before writing
 *	2-4. prepare_job	fill each temporary file; where the journal
 *				orders data (flush_data), wait for it, elsewhere
 *				start its write-back
 *	5. flush_new_files	elsewhere, one syncfs per file system
 *	6. rename_job		rename each one over its target
 *	7. flush_dirs		one flush per file system (its directory, or
 *				syncfs if its targets are in several)
 *
 * A failure before step 6 replaces nothing.  A step that fails returns to
 * the loop, which goes on with the next target, so that each failure is
 * named; the temporary files are then all removed.
 */

/*
 * syncfs(2) reports write-back errors since Linux 5.8; before that, only a
 * flush of each file can tell that its data reached the disk.
 */
static int
syncfs_reports(void)
{
#ifdef HAVE_SYNCFS
	struct utsname u;
	int major, minor;

	return uname(&u) == 0 && sscanf(u.release, "%d.%d", &major,
	    &minor) == 2 && (major > 5 || (major == 5 && minor >= 8));
#else
	return 0;
#endif
}

static int
flush_fs(int fd)
{
#ifdef HAVE_SYNCFS
	int r;

	while ((r = syncfs(fd)) < 0 && errno == EINTR)
		;
	return r;
#else
	return flush_fd(fd);
#endif
}

/*
 * syncfs(2) for J's file system.  Without a journal (PLAN_NOJOURNAL) the
 * kernel's syncfs flushes the device's cache before it writes the inodes,
 * bitmaps and directories held in the block device's cache (->sync_fs, then
 * sync_blockdev), so the fsync of J's directory follows: its flush covers
 * them (block level, ext4 without a journal, a batch of 100 files over 10
 * directories: a target zero-filled in 5 of 141 crash states without it).
 */
static int
flush_fs_of(const struct file *j)
{
	if (flush_fs(j->dirfd) < 0)
		return -1;
	return (j->plan & PLAN_NOJOURNAL) ? flush_fd(j->dirfd) : 0;
}

/*
 * The descriptors a target's steps keep open, closed; not -l's lock, held
 * until exit, nor the target --in-place exchanges into.  (A FUSE server
 * hides a file still open when it is renamed over.)
 */
static void
drop_inputs(struct file *f)
{
	if (f->fd >= 0 && !opt.lock && !opt.inplace) {
		close(f->fd);
		f->fd = -1;
	}
	if (f->in > STDIN_FILENO)
		close(f->in);
	f->in = -1;
}

static void
drop_job(struct file *f)
{
	drop_inputs(f);
	if (f->newfd >= 0)
		close(f->newfd);
	f->newfd = -1;
}

/* Step 1; the targets of one directory share one descriptor of it. */
/*
 * The slot of directory (DEV, INO) in RUN's dirtab: so that N targets find
 * their directories' first jobs in N steps, not N²/2 (issue 23).
 */
static size_t *
dir_slot(struct run *run, dev_t dev, ino_t ino)
{
	size_t mask = run->dirtabsize - 1, h, *s;

	h = (size_t)(((unsigned long long)ino * 0x9e3779b97f4a7c15ull) ^
	    (unsigned long long)dev);
	for (h &= mask;; h = (h + 1) & mask) {
		s = &run->dirtab[h];
		if (*s == 0 || (jobs[*s - 1].dev == dev &&
		    jobs[*s - 1].ino == ino))
			return s;
	}
}

static void
make_dirtab(struct run *run, size_t size)
{
	run->dirtabsize = size;
	run->dirtab = xcalloc(run->dirtabsize, sizeof *run->dirtab);
}

/*
 * RUN's dirtab, twice the size, once it is half full: its directories
 * hashed again.  It grows with the directories, not the targets.
 */
static void
grow_dirtab(struct run *run)
{
	size_t *old = run->dirtab, n = run->dirtabsize, i;

	make_dirtab(run, 2 * n);
	for (i = 0; i < n; i++)
		if (old[i] != 0)
			*dir_slot(run, jobs[old[i] - 1].dev,
			    jobs[old[i] - 1].ino) = old[i];
	free(old);
}

/* J's directory, if another target has it already: its descriptor. */
static int
share_dir(struct run *run, struct file *j)
{
	struct stat dir;
	size_t *slot;

	if (fstat(j->dirfd, &dir) < 0)
		return failed_errno(j->dirpath);
	j->dev = dir.st_dev;
	j->ino = dir.st_ino;
	if (*(slot = dir_slot(run, j->dev, j->ino)) != 0) {
		close(j->dirfd);
		j->dir = *slot - 1;
		j->dirfd = -1;		/* borrowed when needed */
		if (strcmp(j->dirpath, jobs[j->dir].dirpath) == 0) {
			free(j->dirpath);	/* one copy per directory */
			j->dirpath = jobs[j->dir].dirpath;
		}
	} else {
		*slot = j->dir + 1;
		if (2 * ++run->ndirs > run->dirtabsize)
			grow_dirtab(run);
	}
	return 0;
}

/* Are the targets A and B named in one directory, as given? */
static int
same_dir_named(const char *a, const char *b)
{
	size_t n = (size_t)(last_name(a) - a);

	return n == (size_t)(last_name(b) - b) && memcmp(a, b, n) == 0;
}

/*
 * Step 1 for J, and its file system's flush plan.  A directory that the
 * target before could not open fails J unsaid: -t with 10,000 sources and
 * a missing directory says so once, as cp does.
 */
static int
resolve_job(struct run *run, struct file *j)
{
	struct stat dir;

	if (j > jobs && j[-1].dirfailed && same_dir_named(j[-1].target,
	    j->target))
		j->dirfailed = 1;
	if (j->dirfailed || resolve_target(j) < 0)
		return -1;
	j->dir = j - jobs;
	if (j->makedirs) {	/* --check -p: not a directory to share */
		if (fstat(j->dirfd, &dir) < 0)	/* share_missing_dirs */
			return failed_errno(j->dirpath);
		j->dev = dir.st_dev;
		j->ino = dir.st_ino;
		j->plan = fs_plan(j->dirfd, 0);
		j->resolved = 1;
		return 0;
	}
	/* One target has no directory to share (and needs no fstat). */
	if (njobs > 1 && share_dir(run, j) < 0)
		return -1;
	if (j->dir != (size_t)(j - jobs)) {
		j->plan = jobs[j->dir].plan;
		j->resolved = 1;
		return 0;
	}
	if (j > jobs && j[-1].state != FAILED && j[-1].dev == j->dev)
		j->plan = j[-1].plan;	/* one file system, one plan */
	else
		j->plan = fs_plan(j->dirfd, 0);
	make_room(run);
	add_open_dir(run, j);
	j->resolved = 1;
	return 0;
}

/*
 * Two targets in one place: found by sorting them, each target of the run
 * but those that may share a place (their hash does) left out first, so
 * that what is sorted is a few, not a pointer a target (issue 23).
 */

/* A place, DIR and NAME (case folded: FOLD), hashed to one of BITS. */
static size_t
place_bit(size_t dir, const char *name, int fold, size_t bits)
{
	unsigned long long h = (unsigned long long)dir * 0x9e3779b97f4a7c15ull;

	for (; *name != '\0'; name++)
		h = (h ^ (unsigned char)(fold ? tolower((unsigned char)*name) :
		    *name)) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29) & (bits - 1);
}

/* J's -b backup, TARGET~, hashed as place_bit. */
static size_t
backup_bit(const struct file *j, int fold, size_t bits)
{
	char name[2 * NAME_MAX + 2];

	snprintf(name, sizeof name, "%s%s", j->name, opt.suffix);
	return place_bit(j->dir, name, fold, bits);
}

/* Has J a place, step 1 done (in --check, even if a later step failed)? */
static int
has_place(const struct file *j)
{
	return j->resolved;
}

/* Has J a place in its directory once the files are filled? */
static int
placed(const struct file *j)
{
	return j->state == READY || j->state == UNCHANGED;
}

static int
bit_is_set(const unsigned char *map, size_t k)
{
	return map[k / 8] & 1 << k % 8;
}

static void
set_bit(unsigned char *map, size_t k)
{
	map[k / 8] |= 1 << k % 8;
}

/* Is J, given the places hashed twice, one that may share its place? */
static int
may_share(const struct file *j, const unsigned char *twice, int fold,
    size_t bits)
{
	return bit_is_set(twice, place_bit(j->dir, j->name, fold, bits)) ||
	    (opt.backup && bit_is_set(twice, backup_bit(j, fold, bits)));
}

/*
 * The targets that IN takes whose place (case folded: FOLD) may be
 * another's, or with -b another's backup: in *V, allocated; how many.
 */
static size_t
candidates(struct file ***v, int (*in)(const struct file *), int fold)
{
	size_t bits = 64, i, k, n = 0;
	unsigned char *seen, *twice;

	while (bits < 8 * njobs)
		bits *= 2;
	seen = xcalloc(2, bits / 8);
	twice = seen + bits / 8;
	for (i = 0; i < njobs; i++)
		if (in(&jobs[i])) {
			k = place_bit(jobs[i].dir, jobs[i].name, fold, bits);
			if (bit_is_set(seen, k))
				set_bit(twice, k);
			set_bit(seen, k);
		}
	for (i = 0; opt.backup && i < njobs; i++)
		if (in(&jobs[i]) &&
		    bit_is_set(seen, k = backup_bit(&jobs[i], fold, bits)))
			set_bit(twice, k);
	for (i = 0; i < njobs; i++)
		n += in(&jobs[i]) && may_share(&jobs[i], twice, fold, bits);
	*v = xmalloc((n > 0 ? n : 1) * sizeof **v);
	for (i = 0, n = 0; i < njobs; i++)
		if (in(&jobs[i]) && may_share(&jobs[i], twice, fold, bits))
			(*v)[n++] = &jobs[i];
	free(seen);
	return n;
}

static int
by_place(const void *a, const void *b)
{
	const struct file *x = *(struct file *const *)a;
	const struct file *y = *(struct file *const *)b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Is NAME one link_old may give an old file (".NAME.ponywrite-old")?  A
 * target so named would take that link's place before the directory is
 * flushed: in its directory, kept links get random names.
 */
static int
kept_link_name(const char *name)
{
	size_t n = strlen(name), t = strlen(".ponywrite-old");

	return n > t + 1 && name[0] == '.' &&
	    strcmp(name + n - t, ".ponywrite-old") == 0;
}

/*
 * -b: a target that is another's TARGET~ would be renamed over twice, and
 * one of its two new versions lost.  V holds the N targets, sorted.
 */
static int
check_backup_names(struct file **v, size_t n)
{
	char name[2 * NAME_MAX + 2];
	struct file key, *k = &key, **hit;
	size_t i;

	for (i = 0; opt.backup && i < n; i++) {
		snprintf(name, sizeof name, "%s%s", v[i]->name, opt.suffix);
		key.dir = v[i]->dir;
		key.name = name;
		if ((hit = bsearch(&k, v, n, sizeof *v, by_place)) == NULL)
			continue;
		warnx((*hit)->target, "is also the backup name of %s (-b); a"
		    " target cannot be another target's backup", v[i]->target);
		return -1;
	}
	return 0;
}

static int
by_folded_place(const void *a, const void *b)
{
	const struct file *x = *(struct file *const *)a;
	const struct file *y = *(struct file *const *)b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return strcasecmp(x->name, y->name);
}

/* NAME, its ASCII letters' case swapped, in OTHER: 0, or -1: no letter. */
static int
swap_case(const char *name, char other[NAME_MAX + 1])
{
	int letters = 0;
	size_t i;

	for (i = 0; i < NAME_MAX && name[i] != '\0'; i++) {
		letters |= isalpha((unsigned char)name[i]);
		other[i] = isupper((unsigned char)name[i]) ?
		    tolower((unsigned char)name[i]) :
		    toupper((unsigned char)name[i]);
	}
	other[i] = '\0';
	return letters && name[i] == '\0' ? 0 : -1;
}

/* Which of NAME (1) and OTHER (2) readdir lists in directory FD; -1. */
static int
listed(int fd, const char *name, const char *other)
{
	struct dirent *e;
	DIR *d;
	int r = 0;

	if ((fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	/* cppcheck-suppress readdirCalled ; one thread; readdir_r is obsolete */
	while (r != 3 && (e = readdir(d)) != NULL)
		r |= (strcmp(e->d_name, name) == 0) |
		    (strcmp(e->d_name, other) == 0) << 1;
	closedir(d);
	return r;
}

/*
 * Does directory FD find NAME's file under NAME with the case of its
 * letters swapped?  1, 0, or -1 if NAME cannot tell (not there, no
 * letter).  Found under a name that readdir does not list, it is one file
 * (exfat-fuse gives the two names different inode numbers, so comparing
 * inodes cannot tell); listed under both, it is two.
 */
static int
folds_name(int fd, const char *name)
{
	char other[NAME_MAX + 1];
	struct stat st;
	int l;

	if (swap_case(name, other) < 0 ||
	    fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (fstatat(fd, other, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	return (l = listed(fd, name, other)) < 0 ? -1 : l != 3;
}

/*
 * Does directory FD ignore case (exFAT, vfat, NTFS with ignore_case)?
 * Asked of NAMES (N of them), then of its entries, then of those of the
 * directories above it on its file system: 1, 0, or -1 if none tells
 * (an empty file system).  Nothing is written: --check asks it too.
 */
static int
dir_folds(int fd, const char *const *names, size_t n)
{
	struct stat st, up;
	struct dirent *e;
	DIR *d;
	int r = -1, level;
	size_t i;

	for (i = 0; r < 0 && i < n; i++)
		r = folds_name(fd, names[i]);
	if (r >= 0 || (fd = openat(fd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		return r;
	for (level = 0; r < 0 && fd >= 0 && level < 64; level++) {
		if (fstat(fd, &st) < 0 || (d = fdopendir(fd)) == NULL) {
			close(fd);
			break;
		}
		/* cppcheck-suppress readdirCalled ; as above */
		while (r < 0 && (e = readdir(d)) != NULL)
			r = folds_name(dirfd(d), e->d_name);
		fd = openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		closedir(d);
		if (fd >= 0 && (fstat(fd, &up) < 0 || up.st_dev != st.st_dev ||
		    up.st_ino == st.st_ino)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return r;
}

/*
 * Does J's directory ignore case?  Asked of it with J's temporary file,
 * if it exists now: is it found under its name with the case of each
 * letter swapped?
 */
static int
folds_case(const struct file *j)
{
	char other[NAME_MAX + 1];
	struct stat st;

	return swap_case(j->tmpname, other) == 0 &&
	    fstatat(j->dirfd, other, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * Does J's directory ignore case?  dir_folds, asked of J's, K's and BAK's
 * names first.
 */
static int
ask_folding(struct run *run, struct file *j, struct file *k, const char *bak)
{
	const char *names[3] = { j->name, k->name, bak };
	char *p, *slash;
	int fd, r;

	if (!j->makedirs)
		return use_dir(run, j) < 0 ? -1 :
		    dir_folds(j->dirfd, names, bak != NULL ? 3 : 2);
	/* --check -p: asked of the first of its directories that exists */
	if ((p = strdup(j->dirpath)) == NULL)
		return -1;
	while ((fd = open(*p != '\0' ? p : "/", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 && (slash = strrchr(p, '/')) != NULL)
		*slash = '\0';
	if (fd < 0)
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(p);
	r = fd >= 0 ? dir_folds(fd, NULL, 0) : -1;
	if (fd >= 0)
		close(fd);
	return r;
}

/* ask_folding, once a directory: a readdir may be long. */
static int
ignores_case(struct run *run, struct file *j, struct file *k, const char *bak)
{
	struct file *d = &jobs[j->dir];

	if (d->folding == 0)
		d->folding = ask_folding(run, j, k, bak) > 0 ? 1 : 2;
	return d->folding == 1;
}

/*
 * Are targets J and K, whose names (or with -b, J's backup name BAK and K's
 * name) differ only in case, one file, their directory ignoring case?
 * Told by a temporary file if one exists (after step 5), else by
 * ignores_case; where nothing tells (an empty file system), they are two.
 */
static int
one_file(struct run *run, struct file *j, struct file *k, const char *bak)
{
	if (k->state == READY)
		return use_dir(run, k) == 0 && folds_case(k);
	if (j->state == READY)
		return use_dir(run, j) == 0 && folds_case(j);
	return ignores_case(run, j, k, bak);
}

/*
 * Where a directory ignores case, two names that differ only in the case
 * of ASCII letters are one file: two targets so named are one given twice,
 * and so is, with -b, a target and another's backup name.  Among the
 * targets IN takes: 0, or -1 (said): a usage error.
 */
static int
check_folded(struct run *run, int (*in)(const struct file *))
{
	char bak[2 * NAME_MAX + 2];
	struct file **v, key, *k = &key, **hit;
	size_t i, n = candidates(&v, in, 1);
	int r = 0;

	qsort(v, n, sizeof *v, by_folded_place);
	for (i = 1; r == 0 && i < n; i++)
		if (by_folded_place(&v[i - 1], &v[i]) == 0 &&
		    strcmp(v[i - 1]->name, v[i]->name) != 0 &&
		    one_file(run, v[i - 1], v[i], NULL)) {
			warnx(v[i]->target, "the same file as %s on this file"
			    " system, which ignores case; each target can be"
			    " given once", v[i - 1]->target);
			r = -1;
		}
	for (i = 0; r == 0 && opt.backup && i < n; i++) {
		snprintf(bak, sizeof bak, "%s%s", v[i]->name, opt.suffix);
		key.dir = v[i]->dir;
		key.name = bak;
		if ((hit = bsearch(&k, v, n, sizeof *v, by_folded_place)) ==
		    NULL || strcmp((*hit)->name, bak) == 0 ||
		    !one_file(run, v[i], *hit, bak))
			continue;
		warnx((*hit)->target, "is also the backup name of %s (-b) on"
		    " this file system, which ignores case; a target cannot"
		    " be another target's backup", v[i]->target);
		r = -1;
	}
	free(v);
	return r;
}

/* A target and a string it is compared by: its path or its directory's. */
struct keyed {
	char		*key;
	struct file	*job;
};

static int
by_folded_key(const void *a, const void *b)
{
	return strcasecmp(((const struct keyed *)a)->key,
	    ((const struct keyed *)b)->key);
}

/* J's directory as the kernel names it (/proc/self/fd), "/", J's name. */
static char *
kernel_path(struct run *run, struct file *j)
{
	char proc[64], dir[PATH_MAX], *key;
	ssize_t n;

	if (use_dir(run, j) < 0)
		return NULL;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", j->dirfd);
	if ((n = readlink(proc, dir, sizeof dir - 1)) < 0)
		return NULL;
	dir[n] = '\0';
	key = xmalloc((size_t)n + strlen(j->name) + 2);
	sprintf(key, "%s/%s", dir, j->name);
	return key;
}

/*
 * Where directories ignore case, D/a and d/a are one file, in a directory
 * that exfat-fuse gives two inode numbers: on a FUSE file system, targets
 * whose paths, as the kernel names their directories (however they were
 * spelled), differ only in case, in two directories, are one given twice.
 * 0, or -1 (said).
 */
static int
check_folded_paths(struct run *run)
{
	struct keyed *v;
	size_t i, n = 0;
	int r = 0;

	for (i = 0; i < njobs; i++)
		n += jobs[i].resolved && !jobs[i].makedirs &&
		    (jobs[i].plan & PLAN_FUSE);
	if (n < 2)
		return 0;
	v = xmalloc(n * sizeof *v);
	for (i = 0, n = 0; i < njobs; i++)
		if (jobs[i].resolved && !jobs[i].makedirs &&
		    (jobs[i].plan & PLAN_FUSE) &&
		    (v[n].key = kernel_path(run, &jobs[i])) != NULL)
			v[n++].job = &jobs[i];
	qsort(v, n, sizeof *v, by_folded_key);
	for (i = 1; r == 0 && i < n; i++)
		if (by_folded_key(&v[i - 1], &v[i]) == 0 &&
		    v[i - 1].job->dir != v[i].job->dir &&
		    v[i - 1].job->dev == v[i].job->dev &&
		    ignores_case(run, v[i - 1].job, v[i].job, NULL)) {
			warnx(v[i].job->target, "the same file as %s on this"
			    " file system, which ignores case; each target can"
			    " be given once", v[i - 1].job->target);
			r = -1;
		}
	for (i = 0; i < n; i++)
		free(v[i].key);
	free(v);
	return r;
}

/*
 * A target given twice, or as another's backup, under one name or, where
 * the directory ignores case, two: a usage error, -1.
 */
static int
check_duplicates(struct run *run)
{
	struct file **v;
	size_t i, n = candidates(&v, has_place, 0);
	int r = 0;

	qsort(v, n, sizeof *v, by_place);
	for (i = 1; r == 0 && i < n; i++)
		if (by_place(&v[i - 1], &v[i]) == 0) {
			if (strcmp(v[i]->target, v[i - 1]->target) == 0)
				warnx(v[i]->target, "given twice; each target"
				    " can be given once");
			else
				warnx(v[i]->target, "the same target as %s;"
				    " each target can be given once",
				    v[i - 1]->target);
			r = -1;
		}
	if (r == 0)
		r = check_backup_names(v, n);
	free(v);
	for (i = 0; i < njobs; i++)
		if (has_place(&jobs[i]) && kept_link_name(jobs[i].name))
			jobs[jobs[i].dir].randomold = 1;
	return r < 0 || check_folded(run, has_place) < 0 ? -1 :
	    check_folded_paths(run);
}

/* Step 1 too: a directory that chattr closed fails each of its targets. */
static int
check_job_dir(struct run *run, struct file *j)
{
	/* Its first target's check stands for the others, unless it failed. */
	if (j->dir != (size_t)(j - jobs) && jobs[j->dir].state != FAILED)
		return 0;
	return use_dir(run, j) < 0 ? -1 : check_dir(j);
}

/*
 * -C found J unchanged: its temporary file goes; the old content, which may
 * never have reached the disk (written with --no-sync, or by a program that
 * did not flush), is flushed, as exit 0 promises that it is there.
 */
static int
keep_unchanged(struct file *j)
{
	j->state = UNCHANGED;
	block_signals();
	unlink_litter(j->dirfd, j->dirpath, j->tmpname, "temporary file", 1);
	unblock_signals();
	if (!(j->flushes & FL_OLD))
		return 0;
	if (flush_fd(j->fd) < 0)
		return failed(j->target, "unchanged, but cannot flush it to"
		    " disk: %s", strerror(errno));
	jobs[j->dir].flushdir |= FLUSH_UNCHANGED;
	return 0;
}

/*
 * Does J's new file, in a batch, wait for its flush (FL_WAIT, FL_FSYNC) in
 * a pipeline: its write-back started now, the flush finished FLUSH_DEPTH
 * files later (finish_flushes), its descriptor open till then?  Then the
 * disk writes many files at once, not one after the other.  Not a file
 * kept open anyway (FL_KEEPFD) or locked once flushed (-l).
 */
static int
flush_later(const struct run *run, const struct file *j)
{
	return run->depth > 0 && (j->flushes & (FL_WAIT | FL_FSYNC)) &&
	    !(j->flushes & FL_KEEPFD) && !opt.lock;
}

/* J's new file closed: 0, or -1 (said). */
static int
close_new(struct file *j)
{
	int fd = j->newfd;

	j->newfd = -1;
	return fd >= 0 && close(fd) < 0 ? failed_errno(j->target) : 0;
}

/*
 * Steps 4 and 5 for J's new file, which then waits for its rename: READY.
 * Where the journal orders data, waiting for it is enough; elsewhere its
 * write-back is started now, and syncfs reports any error (FL_START).
 */
static int
make_ready(struct run *run, struct file *j)
{
	int later = flush_later(run, j);

	if ((opt.ifchanged && check_replaceable(j, run->single) < 0) ||
	    (!opt.inplace && apply_metadata(run, j, j->newfd) < 0) ||
	    name_new(j, j->newfd) < 0 ||
	    (later && start_flush(j, j->newfd) < 0) ||
	    (!later && (j->flushes & (FL_WAIT | FL_FSYNC)) &&
	    flush_new(j, j->newfd) < 0) ||
	    (opt.lock && !opt.inplace && lock_new_file(j, j->newfd) < 0))
		return -1;
	run->nflushing += later;
#ifdef HAVE_SYNC_FILE_RANGE
	if (j->flushes & FL_START)
		sync_file_range(j->newfd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
	j->state = READY;
	/* Flushed again after the rename (FL_FILE_AFTER), through this
	   descriptor or opened by name. */
	if (j->flushes & FL_KEEPFD) {
		j->keptfd = j->newfd;
		j->newfd = -1;
		run->held++;
	}
	return 0;
}

/*
 * Steps 2 to 5; the new file waits, closed, under its temporary name.  What
 * can fail is found before the input is read where it can be known (-C
 * first needs to know what changes); the one-file form also makes -b's link
 * once (probe_link), as its input (a command, stdin) can be read only once.
 * What a failure leaves, abandon removes.
 */
static int
prepare_job(struct run *run, struct file *j)
{
	off_t size;
	int same;

	if ((opt.lock ? lock_target(j) : open_target(j)) < 0 ||
	    (opt.inplace && check_in_place(j) < 0))
		return -1;
	if ((!opt.ifchanged && check_replaceable(j, run->single) < 0) ||
	    decide_metadata(j, run->umask) < 0)
		return -1;
	/*
	 * --in-place: no flush of the new file before the exchange, which
	 * writes both files' data and waits for it, as the journal orders it
	 * (PLAN_ORDERED; tests/blockcrash, profile xfs-exchange, --no-sync
	 * too); -C's flush of the old.
	 */
	j->flushes = !opt.inplace ? plan_flushes(run, j) :
	    opt.sync ? FL_OLD : 0;
	if (compares_first(j))
		same = fill_if_changed(run, j, &size);
	else if ((opt.inplace ? create_exchange_temp(j) :
	    create_temp(j, &j->newfd)) < 0 ||
	    (!opt.ifchanged && (check_sticky(run, j) < 0 ||
	    check_keep_old(run, j) < 0)) ||
	    (size = fill_temp(run, j, j->newfd)) < 0)
		same = -1;
	else
		same = opt.ifchanged ? unchanged(j, j->newfd, size) : 0;
	if (same < 0 || (same ? keep_unchanged(j) : make_ready(run, j)) < 0)
		return -1;
	drop_inputs(j);
	/* --in-place's new file, unnamed, lives as long as it is open. */
	return j->state == READY && (flush_later(run, j) || opt.inplace) ? 0 :
	    close_new(j);
}

/*
 * What needs a syncfs before the renames: a new file whose data the journal
 * does not order, and an unchanged file that -C promises is on the disk.
 */
static int
needs_syncfs(const struct file *j)
{
	return (j->state == READY && (j->flushes & FL_SYNCFS)) ||
	    (j->state == UNCHANGED && (j->flushes & FL_OLD_SYNCFS));
}

/*
 * Per file system (a batch touches a few): how many directories to flush,
 * and the first job that has one.  fs_index finds DEV in (*FS)[0..*N),
 * adding it with FIRST if it is new (*FS grown as needed).
 */
struct fsdirs {
	/* cppcheck-suppress unusedStructMember ; fs_index's (*fs)[k].dev */
	dev_t	dev;
	size_t	dirs, first;
	int	what;			/* FLUSH_* of its directories */
};

static size_t
fs_index(struct fsdirs **fs, size_t *n, dev_t dev, size_t first)
{
	size_t k;

	for (k = 0; k < *n && (*fs)[k].dev != dev; k++)
		;
	if (k == *n) {
		if ((k & (k - 1)) == 0)		/* 0, 1, 2, 4...: full */
			*fs = xrealloc(*fs, (k > 0 ? 2 * k : 1) * sizeof **fs);
		(*fs)[k].dev = dev;
		(*fs)[k].dirs = 0;
		(*fs)[k].first = first;
		(*fs)[k].what = 0;
		(*n)++;
	}
	return k;
}

/* Step 5: every new file durable before the first rename. */
static int
flush_new_files(struct run *run)
{
	struct fsdirs *fs = NULL;
	size_t i, nfs = 0, k;

	for (i = 0; i < njobs; i++) {
		if (!needs_syncfs(&jobs[i]))
			continue;
		k = fs_index(&fs, &nfs, jobs[i].dev, i);
		if (fs[k].first != i)
			continue;	/* its file system is flushed */
		if (use_dir(run, &jobs[i]) < 0 ||
		    flush_fs_of(&jobs[i]) < 0) {
			free(fs);
			return failed(jobs[i].dirpath, "cannot flush the new"
			    " files to disk: %s; nothing replaced",
			    strerror(errno));
		}
	}
	free(fs);
	return 0;
}

/*
 * --in-place -b: the new file, which holds the old content now, gets the
 * old file's owner, attributes and mode (as a new file would: never more
 * open than the old), or, where the caller cannot give the owner, stays
 * the caller's, mode 0600; and the name TARGET~; its directory is flushed.
 */
static int
keep_exchanged(const struct run *run, struct file *j)
{
	int r;

	if (!named(j->bakname))
		return 0;
	if (opt.sync)
		jobs[j->dir].flushdir |= FLUSH_RENAMED;
	if (can_give_owner(run, j))
		r = apply_metadata(run, j, j->newfd);
	else if ((r = drop_inherited_acl(j, j->newfd)) == 0 &&
	    fchmod(j->newfd, 0600) < 0)
		r = failed(j->target, "cannot set mode: %s", strerror(errno));
	return rename_backup(j) < 0 || r < 0 ? -1 : 0;
}

/* Step 6 for one file. */
static int
rename_job(struct run *run, struct file *j)
{
	int r;

	if (opt.inplace) {
		if (exchange(j, 0) < 0)
			return -1;
		j->state = REPLACED;
		if (opt.backup && keep_exchanged(run, j) < 0)
			run->but = run->late;
		close_new(j);	/* holds the old content */
		if (opt.sync && flush_exchanged(j) < 0)
			run->but = run->late;
		return 0;
	}
	if ((r = rename_over(j, j->tmpname)) < 0)
		return -1;
	if (r > 0)
		run->but = run->late;
	j->state = REPLACED;
	if (j->flushes & FL_DIR)
		jobs[j->dir].flushdir |= FLUSH_RENAMED;
	return 0;
}

/*
 * The renamed files whose flush makes their rename durable (FL_FILE_AFTER:
 * btrfs, one target; FUSE), once the directories are done.
 */
static int
flush_renamed_files(struct run *run)
{
	size_t i;
	int status = 0;

	for (i = 0; i < njobs; i++)
		if (jobs[i].state != REPLACED ||
		    !(jobs[i].flushes & FL_FILE_AFTER)) {
			if (jobs[i].keptfd >= 0)
				close(jobs[i].keptfd);
		} else if (use_dir(run, &jobs[i]) < 0 ||
		    flush_named(jobs[i].dirfd, jobs[i].name,
		    jobs[i].keptfd) < 0) {
			warnx(jobs[i].target, "replaced, but flushing it failed:"
			    " %s; the new content may not survive a crash",
			    strerror(errno));
			status = run->late;
		}
	return status;
}

/*
 * The flush of J's directory, or of its file system if WHOLE, failed after
 * the renames: said; the exit status, 1 if no target was replaced (DONE).
 * What it was for (FLUSH_*) says whether targets were replaced there or
 * only found unchanged.
 */
static int
failed_dir_flush(const struct run *run, const struct file *j, int whole,
    int what, size_t done)
{
	const char *e = strerror(errno), *what_dir = whole ?
	    "its file system" : "the directory";
	int renamed = what & FLUSH_RENAMED;

	if (run->single && !renamed)
		failed(j->target, "unchanged, but cannot flush it to disk: %s",
		    e);
	else if (!renamed)
		failed(j->dirpath, "targets unchanged, but cannot flush %s to"
		    " disk: %s", what_dir, e);
	else if (run->single)
		warnx(j->target, "replaced, but flushing directory %s failed:"
		    " %s; the new content may not survive a crash", j->dirpath,
		    e);
	else
		warnx(j->dirpath, "targets replaced, but flushing %s failed:"
		    " %s; the new content may not survive a crash", what_dir, e);
	return renamed || done > 0 ? run->late : opt.failstatus;
}

/*
 * The directories marked (flushdir) flushed: per file system, its one
 * directory, or one syncfs for its several (FL_BYFS).  ONFAIL says what a
 * failed flush means and gives the exit status.
 */
static int
flush_marked_dirs(struct run *run, size_t done, int (*onfail)(const
    struct run *, const struct file *, int, int, size_t))
{
	struct fsdirs *fs = NULL;
	size_t i, k, nfs = 0;
	int status = 0, whole, r;

	for (i = 0; i < njobs; i++)
		if (jobs[i].flushdir) {
			k = fs_index(&fs, &nfs, jobs[i].dev, i);
			fs[k].dirs++;
			fs[k].what |= jobs[i].flushdir;
		}
	for (i = 0; i < njobs; i++) {
		if (!jobs[i].flushdir)
			continue;
		k = fs_index(&fs, &nfs, jobs[i].dev, i);
		whole = (jobs[i].flushes & FL_BYFS) && fs[k].dirs > 1;
		if (whole && fs[k].first != i)
			continue;	/* flushed with the first one */
		if ((r = use_dir(run, &jobs[i])) == 0)
			r = whole ? flush_fs_of(&jobs[i]) :
			    flush_fd(jobs[i].dirfd);
		if (r < 0)
			status = onfail(run, &jobs[i], whole,
			    whole ? fs[k].what : jobs[i].flushdir, done);
	}
	free(fs);
	return status;
}

/*
 * FL_SYNC: a FUSE server that may not pass a directory's fsync on (bindfs,
 * sshfs) leaves the renames below it unwritten: not durable, and the kept
 * links may not go yet.  sync(2) writes every file system's directories,
 * the one below included; the renamed files' flushes after it
 * (flush_renamed_files) pass through the server and flush the disk's cache
 * under them.  It reports no error, and reaches no other machine's disk
 * (sshfs to another host).
 */
static void
sync_below(void)
{
	size_t i;

	for (i = 0; i < njobs; i++)
		if (jobs[i].state == REPLACED && (jobs[i].flushes & FL_SYNC)) {
			sync();
			return;
		}
}

/* The renames durable: per file system, its one directory or a syncfs. */
static int
flush_dirs(struct run *run, size_t done)
{
	int status = flush_marked_dirs(run, done, failed_dir_flush);

	sync_below();
	return flush_renamed_files(run) != 0 ? run->late : status;
}

/* The flush after drop_old_links' unlinks failed: the targets are new. */
static int
failed_unlink_flush(const struct run *run, const struct file *j, int whole,
    int what, size_t done)
{
	(void)what;
	(void)done;
	if (run->single)
		warnx(j->target, "replaced, but flushing directory %s failed:"
		    " %s", j->dirpath, strerror(errno));
	else
		warnx(j->dirpath, "targets replaced, but flushing %s failed:"
		    " %s", whole ? "its file system" : "the directory",
		    strerror(errno));
	return run->late;
}

/*
 * FL_KEEP_OLD's links, once the new names are on disk: removed, and the
 * directories flushed again as after the renames (flush_marked_dirs), so
 * that a crash after exit leaves no litter.
 */
static int
drop_old_links(struct run *run)
{
	size_t i;

	for (i = 0; i < njobs; i++)
		jobs[i].flushdir = 0;
	for (i = 0; !opt.backup && i < njobs; i++)
		if (jobs[i].bakname != NULL && jobs[i].bakname[0] != '\0') {
			unlink_kept_link(use_dir(run, &jobs[i]) == 0 ?
			    jobs[i].dirfd : -1, &jobs[i], 1);
			jobs[jobs[i].dir].flushdir = FLUSH_RENAMED;
		}
	return flush_marked_dirs(run, 0, failed_unlink_flush);
}

/*
 * A target whose step failed (and said why): what it made is removed, what
 * it opened closed.  The others go on, so that every failure is named.
 */
static size_t
abandon(struct file *j)
{
	remove_file_litter(j, 1);
	drop_job(j);
	j->state = FAILED;
	return 1;
}

/* One that failed in resolve_job: its directory is not shared yet. */
static size_t
abandon_resolved(struct file *j)
{
	if (j->dirfd >= 0)
		close(j->dirfd);
	j->dirfd = -1;
	return abandon(j);
}

/*
 * The pipeline's flushes finished, the oldest first, till fewer than its
 * depth are under way (or none: ALL); the new files whose flush fails are
 * abandoned.  How many failed.
 */
static size_t
finish_flushes(struct run *run, int all)
{
	size_t nfailed = 0;
	struct file *j;

	while (run->nflushing > 0 && (all || run->nflushing >= run->depth)) {
		j = &jobs[run->nextflush++];
		if (j->state != READY || j->newfd < 0)
			continue;
		run->nflushing--;
		if (flush_new(j, j->newfd) < 0 || close_new(j) < 0)
			nfailed += abandon(j);
	}
	return nfailed;
}

/* How it ended, for each target; stdout for --print-changed. */
static int
report_jobs(size_t done, size_t left, int status)
{
	size_t i;

	for (i = 0; i < njobs; i++) {
		if (left > 0)
			warnx(jobs[i].target, jobs[i].state == REPLACED ?
			    "replaced" : jobs[i].state == UNCHANGED ?
			    "unchanged" : "not replaced");
		/* Not after a failure (exit 1): only what was done. */
		else if (opt.verbose && status != opt.failstatus)
			warnx(jobs[i].target, jobs[i].state == UNCHANGED ?
			    "unchanged" : jobs[i].exists ? "replaced" :
			    "created");
		if (opt.printchanged && jobs[i].state == REPLACED)
			status = print_changed(jobs[i].target, status);
	}
	if (left > 0) {
		warnx(NULL, "stopped after replacing %zu of %zu targets", done,
		    njobs);
		return 4;
	}
	return status;
}

/*
 * After the files are filled, before the first rename: what can still fail
 * for a target fails it now, while nothing is replaced.
 */
static size_t
prepare_renames(struct run *run)
{
	size_t i, nfailed = 0;

	for (i = 0; i < njobs; i++)
		if (jobs[i].state == READY && needs_link(&jobs[i]) &&
		    (use_dir(run, &jobs[i]) < 0 || link_backup(&jobs[i]) < 0))
			nfailed += abandon(&jobs[i]);
	return nfailed;
}

/*
 * Each resolved target's tmpname, empty, sized for its name: one block
 * for all, not an allocation each (its overhead) (issue 23).  Like each
 * tmpname before, it stays till the exit: the signal handler reads it.
 */
static void
make_temp_names(void)
{
	size_t i, total = 0;
	char *p;

	for (i = 0; i < njobs; i++)
		if (jobs[i].state == TODO)
			total += hidden_size(jobs[i].name, "");
	if (total == 0)
		return;
	p = xcalloc(1, total);
	for (i = 0; i < njobs; i++)
		if (jobs[i].state == TODO) {
			jobs[i].tmpname = p;
			p += hidden_size(jobs[i].name, "");
		}
}

/*
 * Steps 1 to 5 for every target, and what must hold before the first
 * rename: 0, or the exit status of a run that replaces nothing.
 */
static int
prepare_all(struct run *run)
{
	size_t i, nfailed = 0;

	for (i = 0; i < njobs; i++)
		if (resolve_job(run, &jobs[i]) < 0)
			nfailed += abandon_resolved(&jobs[i]);
	make_temp_names();
	if (check_duplicates(run) < 0)
		return 2;
	for (i = 0; i < njobs; i++)
		if (jobs[i].state == TODO && check_job_dir(run, &jobs[i]) < 0)
			nfailed += abandon(&jobs[i]);
	for (i = 0; i < njobs; i++) {
		if (jobs[i].state == TODO && (use_dir(run, &jobs[i]) < 0 ||
		    prepare_job(run, &jobs[i]) < 0))
			nfailed += abandon(&jobs[i]);
		nfailed += finish_flushes(run, 0);
	}
	nfailed += finish_flushes(run, 1);
	if (nfailed == 0)
		nfailed = prepare_renames(run);
	if (nfailed > 0 && run->single)
		return jobs[0].status;
	if (nfailed > 0) {
		failed(NULL, "nothing replaced: %zu of %zu targets failed",
		    nfailed, njobs);
		return opt.failstatus;
	}
	return check_folded(run, placed) < 0 ? 2 : 0;
}

/*
 * The new files flushed (one syncfs per file system), step 6 for every
 * target, then the directories' flushes; the exit status.  Signals stay
 * blocked if nothing was replaced, as they were when that failed.
 */
static int
commit_all(struct run *run)
{
	size_t i, done = 0, left = 0;
	int status = 0;

	if (!run->perfile && flush_new_files(run) < 0)
		return opt.failstatus;
	block_signals();
	for (i = 0; i < njobs; i++)
		if (jobs[i].state == READY && (use_dir(run, &jobs[i]) < 0 ||
		    rename_job(run, &jobs[i]) < 0)) {
			remove_litter(1);
			break;
		}
	for (i = 0; i < njobs; i++) {
		done += jobs[i].state == REPLACED;
		left += jobs[i].state == READY;
	}
	if (left > 0 && done == 0) {
		if (run->single)
			return jobs[0].status;
		failed(NULL, "nothing replaced");
		return opt.failstatus;
	}
	if ((status = flush_dirs(run, done)) != 0) {
		for (i = 0; i < njobs; i++)
			keep_old_link(jobs[i].target, jobs[i].dirpath,
			    jobs[i].bakname);
	} else
		status = drop_old_links(run);
	status = report_jobs(done, left, status != 0 ? status :
	    run->but);
	remove_litter(1);
	unblock_signals();
	return status;
}

/* ==== --check: what a run would do, nothing written ==== */

/*
 * --check: step 1 for each target, what the steps find before they write,
 * and what writing would run into where it can be known without writing:
 * the directory's permissions, the owner, the input, the backup's name.
 * Nothing is created, written, renamed, linked or removed; no lock is
 * taken, no input read, no command run.
 */

/* The caller can create F's temporary file (or, -p, its directories). */
static int
check_writable(const struct file *f)
{
	int e;

	if (faccessat(f->dirfd, ".", W_OK | X_OK, AT_EACCESS) == 0)
		return 0;
	e = errno;
	if (f->makedirs)
		return failed(f->target, "cannot create the directories of %s:"
		    " %s", f->dirpath, strerror(e));
	if (may_stay(f) && compares_first(f) && (e == EROFS || e == EACCES)) {
		/* -C makes one only for a change (fill_if_changed). */
		warnx(f->target, "a run fails unless nothing changes (-C):"
		    " %s: %s", f->dirpath, strerror(e));
		return 0;
	}
	return failed_temp(f, e);
}

/*
 * F's new file made unnamed where it must be (create_temp): the file
 * system is asked, with an unnamed file that goes when it is closed.
 */
static int
check_unnamed(const struct file *f)
{
	int fd;

	if (!f->unnamed)
		return 0;
	if ((fd = open_unnamed(f)) >= 0) {
		close(fd);
		return 0;
	}
	return errno == EROFS || errno == EACCES ? 0 :
	    failed_unnamed(f, errno);
}

/* Would apply_metadata's chown fail (can_give_owner)? */
static int
check_owner(const struct run *run, const struct file *f)
{
	if (can_give_owner(run, f))
		return mode_after_away(run, f) && !run->fowner ?
		    failed_mode_after_away(f) : 0;
	if (may_stay(f)) {	/* as apply_metadata: -C may not need to */
		warnx(f->target, "a run fails unless nothing changes (-C):"
		    " cannot give owner %lu and group %lu: %s",
		    (unsigned long)f->meta.uid, (unsigned long)f->meta.gid,
		    strerror(EPERM));
		return 0;
	}
	return failed_owner(f, EPERM);
}

/*
 * F's input can be opened, as a run opens it; not read.  Standard input
 * and a command are left alone.  It is walked as a run walks it (a link
 * planted in a sticky directory refused) and looked at; a FIFO or a
 * device, which opening could block on or change, is not opened.
 */
static int
check_input(struct run *run, const struct file *f)
{
	struct stat st;
	int fd, r;

	if (opt.command != NULL || strcmp(f->source, "-") == 0)
		return 0;
	if ((fd = open_input(run, f, O_LOOK)) < 0)
		return -1;
	r = fstat(fd, &st);
	close(fd);
	if (r < 0)
		return failed_errno(input_name(f));
	if (S_ISDIR(st.st_mode))
		return failed(input_name(f), "%s", strerror(EISDIR));
	if (!S_ISREG(st.st_mode) || (fd = open_input(run, f, O_RDONLY)) < 0)
		return S_ISREG(st.st_mode) ? -1 : 0;
	close(fd);
	return 0;
}

/*
 * --check -C -a: is F's input a regular file (a source, or standard input
 * redirected from one) with something left to append?  Looked at without
 * a word: check_input says what is wrong with it.  Not one whose size says
 * nothing (a file of /proc or /sys): --check does not read it.
 */
static int
appends(struct run *run, const struct file *f)
{
	struct walk w;
	struct stat st;
	int fd, r;

	if (!opt.append || !opt.ifchanged || opt.command != NULL)
		return 0;
	if (strcmp(f->source, "-") == 0)
		return !stdin_closed && fstat(STDIN_FILENO, &st) == 0 &&
		    S_ISREG(st.st_mode) && !fs_is(STDIN_FILENO, SIZELESS) &&
		    st.st_size > lseek(STDIN_FILENO, 0, SEEK_CUR);
	walk_start(&w);
	if ((fd = open_source(&run->src, f->source, O_LOOK, &w)) < 0)
		return 0;
	r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    !fs_is(fd, SIZELESS);
	close(fd);
	return r;
}

/* -b's name (check_backup_name); with -C a run needs it only for a change. */
static int
check_backup(const struct file *f)
{
	if (!opt.backup || !f->exists || check_backup_name(f) >= 0)
		return 0;
	if (!may_stay(f))
		return -1;
	warnx(f->target, "a run fails unless nothing changes (-C): the"
	    " backup, as said above");
	return 0;
}

/* Steps 1 to 5 for J as far as they can go without writing. */
static int
check_job(struct run *run, struct file *j)
{
	char why[128];

	if (j->makedirs && check_writable(j) < 0) {
		j->resolved = 0;	/* a run fails at step 1, making them, */
		j->dirfailed = 1;	/* and says so once (resolve_job) */
		return -1;
	}
	j->changes = appends(run, j);
	if (open_target(j) < 0 || decide_metadata(j, run->umask) < 0 ||
	    (!may_stay(j) && check_replaceable(j, 0) < 0))
		return -1;
	/* As make_ready: with -C, only a change needs the rename. */
	if (may_stay(j) && replace_refusal(j, why, sizeof why))
		warnx(j->target, "a run fails unless nothing changes (-C): %s",
		    why);
	j->flushes = plan_flushes(run, j);
	if (check_writable(j) < 0 || check_unnamed(j) < 0 ||
	    check_sticky(run, j) < 0 || check_keep_old(run, j) < 0 ||
	    check_owner(run, j) < 0 || check_backup(j) < 0)
		return -1;
	return check_input(run, j);
}

/*
 * What a target's flushes rest on, in the words of docs/guarantees.md:
 * "proven", a row of fsplans, which the block-level test proves;
 * "safe", the sequence safe everywhere, as good as the file system's
 * fsync, not measured here; "fuse" and "server", as good as a FUSE
 * server's or a network server's flushes; "volatile", nothing survives a
 * power cut (tmpfs, ramfs, overlayfs mounted volatile).
 */
static const char *
guarantee_word(int plan, const char *type, const char *opts)
{
	static const char *const net[] = { "nfs", "nfs4", "cifs", "smb3",
	    "9p", "ceph", "afs" };
	size_t i;

	if (strcmp(type, "tmpfs") == 0 || strcmp(type, "ramfs") == 0 ||
	    (strcmp(type, "overlay") == 0 && has_option(opts, "volatile")))
		return "volatile";
	if (plan & PLAN_FUSE)
		return "fuse";
	for (i = 0; i < sizeof net / sizeof net[0]; i++)
		if (strcmp(type, net[i]) == 0)
			return "server";
	return plan & (PLAN_ORDERED | PLAN_SYNCFS | PLAN_FILELOG) &&
	    !(plan & PLAN_NOJOURNAL) ? "proven" : "safe";
}

/*
 * F's flushes (FL_*) and links around its rename, in their order, in
 * words: the data before it; the directory's flush after it (a batch's:
 * its directory's fsync, or one syncfs for its file system's directories
 * where there are several: FL_BYFS), and the renamed file's.
 */
static void
sequence_words(const struct file *f, char *s, size_t n)
{
	int fl = f->flushes, link = needs_link(f);

	snprintf(s, n, "%s%s%srename%s%s%s%s%s", f->makedirs ? "mkdir," : "",
	    fl & FL_SYNCFS ? "syncfs," : fl & FL_FSYNC ? "fsync-new," :
	    fl & FL_WAIT ? "wait-new," : "", link ? "link-old," : "",
	    link && opt.backup ? ",rename-backup" : "",
	    !(fl & FL_DIR) ? "" : fl & FL_BYFS ? ",flush-dirs" : ",fsync-dir",
	    fl & FL_SYNC ? ",sync" : "",
	    fl & FL_FILE_AFTER ? ",fsync-renamed" : "",
	    link && !opt.backup ? ",unlink-old" : "");
}

/* --check: the file system of the line before. */
struct fsname {
	dev_t	 dev;
	int	 known;
	char	 type[64], opts[1024];
};

/*
 * J's line: what a run would do, the new file's mode and owner, the file
 * system, the flushes and what they rest on, the target; separated by
 * tabs, the target last (it may hold one).
 */
static void
print_check(const struct file *j, struct fsname *fs)
{
	char seq[160];
	struct stat st;
	uid_t uid = j->meta.uid;
	gid_t gid = j->meta.gid;

	if (j->state == FAILED || fstat(j->dirfd, &st) < 0) {
		printf("fail\t-\t-\t-\t-\t-\t%s%c", j->target,
		    opt.null ? '\0' : '\n');
		return;
	}
	if (!fs->known || fs->dev != st.st_dev) {
		fs->known = 1;
		fs->dev = st.st_dev;
		if (!mount_of(j->dirfd, fs->type, sizeof fs->type, fs->opts,
		    sizeof fs->opts))
			snprintf(fs->type, sizeof fs->type, "?");
	}
	/* A new file's, as open(2) gives them. */
	if (uid == (uid_t)-1)
		uid = geteuid();
	if (gid == (gid_t)-1)
		gid = (st.st_mode & S_ISGID) != 0 ? st.st_gid : getegid();
	sequence_words(j, seq, sizeof seq);
	printf("%s\t%04o\t%lu:%lu\t%s\t%s\t%s\t%s%c", j->exists ? "replace" :
	    "create", (unsigned)j->meta.mode, (unsigned long)uid,
	    (unsigned long)gid, fs->type, seq,
	    guarantee_word(j->plan, fs->type, fs->opts), j->target,
	    opt.null ? '\0' : '\n');
}

/*
 * Where the directories of PATH that do not exist begin, as a walk that
 * follows links finds it (make_parents stopped there): its length before.
 */
static size_t
missing_part(const char *path)
{
	char name[NAME_MAX + 1];
	size_t n = strspn(path, "/"), end;
	int fd = open(n > 0 ? "/" : ".", O_SEARCH_DIR | O_DIRECTORY |
	    O_CLOEXEC), sub;

	/* A name at a time: a path through links may pass PATH_MAX. */
	while (fd >= 0 && (end = n + strcspn(path + n, "/")) > n &&
	    end - n <= NAME_MAX) {
		memcpy(name, path + n, end - n);
		name[end - n] = '\0';
		sub = openat(fd, name, O_SEARCH_DIR | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		if ((fd = sub) >= 0)
			n = end + strspn(path + end, "/");
	}
	if (fd >= 0)
		close(fd);
	return n;
}

/*
 * J's missing directory as a key: the device and inode of the last that
 * exists, then the names a run makes, "." and "//" dropped and ".." taken
 * back (they will be directories); one above the last that exists stays.
 */
static char *
dir_key(const struct file *j)
{
	const char *p = j->dirpath + missing_part(j->dirpath);
	char *key = xmalloc(strlen(p) + 4 * sizeof(uintmax_t) + 4), *o, *stop;
	size_t n;

	o = stop = key + sprintf(key, "%jx:%jx", (uintmax_t)j->dev,
	    (uintmax_t)j->ino);
	for (; *p != '\0'; p += n + (p[n] == '/')) {
		n = strcspn(p, "/");
		if (n == 0 || (n == 1 && *p == '.'))
			continue;
		if (n == 2 && p[0] == '.' && p[1] == '.' && o > stop)
			while (*--o != '/')	/* back one name */
				;
		else if (n == 2 && p[0] == '.' && p[1] == '.')
			o = stop = o + sprintf(o, "/..");
		else
			o += sprintf(o, "/%.*s", (int)n, p);
	}
	*o = '\0';
	return key;
}

/* By key, then in the order given. */
static int
by_key(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c != 0 ? c : (x->job > y->job) - (x->job < y->job);
}

/*
 * --check -p: the targets of one missing directory, however it is spelled
 * ("n/x", "./n//x", its absolute path), share it, as they will once a run
 * has made it: one place, where two targets are one given twice.
 */
static void
share_missing_dirs(void)
{
	struct keyed *v = xmalloc((njobs > 0 ? njobs : 1) * sizeof *v);
	size_t i, n = 0;

	for (i = 0; i < njobs; i++)
		if (jobs[i].makedirs && jobs[i].resolved) {
			v[n].key = dir_key(&jobs[i]);
			v[n++].job = &jobs[i];
		}
	qsort(v, n, sizeof *v, by_key);
	for (i = 1; i < n; i++)
		if (strcmp(v[i].key, v[i - 1].key) == 0)
			v[i].job->dir = v[i - 1].job->dir;
	for (i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

/*
 * --check, every target in turn, a line each on stdout: the exit status of
 * a run that met what the check found.
 */
static int
check_all(struct run *run)
{
	struct fsname fs = { 0 };
	size_t i, nfailed = 0;
	struct file *j;

	for (i = 0; i < njobs; i++) {
		j = &jobs[i];
		if (resolve_job(run, j) < 0)
			nfailed += abandon_resolved(j);
		else if ((!j->makedirs && check_job_dir(run, j) < 0) ||
		    use_dir(run, j) < 0 || check_job(run, j) < 0)
			nfailed += abandon(j);
		print_check(j, &fs);
		drop_job(j);
		if (j->makedirs && j->dirfd >= 0) {
			close(j->dirfd);
			j->dirfd = -1;
		}
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		failed("stdout", "%s", strerror(errno));
		return opt.failstatus;
	}
	share_missing_dirs();
	if (check_duplicates(run) < 0)
		return 2;
	if (nfailed > 0 && run->single)
		return jobs[0].status;
	if (nfailed > 0) {
		failed(NULL, "a run would replace nothing: %zu of %zu targets"
		    " would fail", nfailed, njobs);
		return opt.failstatus;
	}
	return 0;
}

/* Every form, one file or many; the exit status. */
static int
replace_all(void)
{
	struct run run = { 0 };
	int status = 0, caps;

	run.src.fd = -1;
	umask(run.umask = umask(0));
	run.single = opt.target != NULL;
	run.late = opt.command != NULL ? 125 : 3;
	caps = capabilities();
	run.fowner = (caps & CAP_FOWNER_BIT) != 0;
	run.anyowner = (caps & CAP_CHOWN_BIT) != 0;
	run.euid = geteuid();
	run.linkrules = fs_sysctl("protected_hardlinks", '1') != '0' &&
	    !run.fowner;
	if (run.single) {
		jobs = xcalloc(1, sizeof *jobs);
		add_job(opt.target, opt.input != NULL ? opt.input : "-");
	} else if (opt.batch != NULL && (status = jobs_from_list(&run)) < 0)
		status = opt.failstatus;
	if (status == 0)
		status = check_sources();
	if (status == 0) {
		run.perfile = njobs == 1 || !syncfs_reports();
		make_dirtab(&run, 16);
		make_dir_ring(&run);
		if (opt.check)
			status = check_all(&run);
		else if ((status = prepare_all(&run)) == 0)
			status = commit_all(&run);
	}
	remove_litter(1);
	drop_source_dir(&run.src);
	free(run.dirtab);
	free(run.opendirs);
	free(run.list);
	return status;
}

/* ==== main ==== */

int
main(int argc, char *argv[])
{
	int status;

	if ((status = open_std_fds()) != 0 ||
	    (status = parse_options(argc, argv)) != 0)
		return status < 0 ? close_stdout() : status;
	sigprocmask(SIG_SETMASK, NULL, &origmask);
	cmdmask = origmask;
	setup_signals();
	return replace_all();
}

/*
 * crashstep - ptrace stepper for the ponywrite power-cut simulation.
 *
 * Usage:
 *   crashstep run -m MOUNT -i IMAGE -l LOOPSTAT -o OUTDIR [-b BUSYFILE] [-s]
 *                 [-t SECONDS] -- command [argument ...]
 *   crashstep snap -i IMAGE -l LOOPSTAT -o FILE [-b BUSYFILE]
 *   crashstep copy SRC DST
 *
 * "run" starts the command under ptrace (following forks) and stops every
 * thread of it at the entry and at the exit of each system call that may
 * change the file system mounted at MOUNT (open with O_CREAT/O_TRUNC/
 * O_TMPFILE, write-family calls, splice, copy_file_range, fchmod, fchown,
 * setxattr, fsync, fdatasync, rename, link, mkdir, unlink, close, ...).
 * While the tracee is frozen at such a stop, crashstep waits until the
 * loop device backing MOUNT has no I/O in flight and copies IMAGE (the loop
 * device's backing file) to OUTDIR/state-NNNN.img.  Because background
 * writeback is held off by the caller, that copy is what a power cut at that
 * instant would leave on the disk.
 *
 * Without -b, a stop at which the loop device has completed no write since
 * the previous copy is recorded as a duplicate (the image is byte-identical,
 * nothing is copied).  With -b ("busy"), before each copy crashstep appends
 * a byte to BUSYFILE and fsyncs it, forcing a journal commit as another
 * process on a busy system would (on btrfs, where an fsync only writes the
 * log tree of that file, it also commits the running transaction with
 * BTRFS_IOC_START_SYNC/WAIT_SYNC, as the periodic commit does).  -s thins long runs of the same write-like
 * call on the same file: occurrences 1, 2, 4, 8, 16, ... are stopped at.
 *
 * OUTDIR/manifest gets one line per stop:
 *   STATE<TAB>PHASE<TAB>SYSCALL<TAB>PID<TAB>RET<TAB>DETAIL
 * where STATE is the state number (a duplicate repeats the number of the
 * state it equals) and PHASE is "entry" or "exit".
 *
 * crashstep exits with the command's exit status (128+N if it was killed
 * by signal N), 125 if crashstep itself failed, or 124 if the run took more
 * than -t SECONDS (the traced processes are killed).
 *
 * "snap" takes one such copy now (after the optional busy fsync).
 * "copy" is a sparse file copy (cp --sparse=always).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#define CS_OP_ENTRY 1
#define CS_OP_EXIT 2

/* Kernel ABI of struct ptrace_syscall_info (linux/ptrace.h). */
struct cs_sysinfo {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t stack_pointer;
	union {
		struct {
			uint64_t nr;
			uint64_t args[6];
		} entry;
		struct {
			int64_t rval;
			uint8_t is_error;
		} exit;
		struct {
			uint64_t nr;
			uint64_t args[6];
			uint32_t ret_data;
		} seccomp;
	} u;
};

/* btrfs: commit the running transaction without flushing delalloc data,
 * as the periodic transaction commit does (linux/btrfs.h). */
#define CS_BTRFS_SUPER_MAGIC 0x9123683E
#define CS_BTRFS_IOC_START_SYNC _IOR(0x94, 24, uint64_t)
#define CS_BTRFS_IOC_WAIT_SYNC _IOW(0x94, 22, uint64_t)

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

enum kind {
	K_FD0,      /* fd in arg 0 */
	K_FD2,      /* output fd in arg 2 (splice, copy_file_range) */
	K_OPEN,     /* open(path, flags) */
	K_CREAT,    /* creat(path) */
	K_OPENAT,   /* openat(dirfd, path, flags) */
	K_OPENAT2,  /* openat2(dirfd, path, how) */
	K_PATH0,    /* path in arg 0 */
	K_PATH1,    /* path in arg 1 (link, symlink, rename: new name) */
	K_AT01,     /* dirfd arg 0, path arg 1 */
	K_AT12,     /* dirfd arg 1, path arg 2 (symlinkat) */
	K_AT23,     /* dirfd arg 2, path arg 3 (renameat, linkat: new) */
	K_ALWAYS    /* sync(2) */
};

struct sc {
	long nr;
	const char *name;
	enum kind kind;
	int writelike; /* subject to -s thinning */
};

static const struct sc table[] = {
#ifdef SYS_open
	{SYS_open, "open", K_OPEN, 0},
#endif
#ifdef SYS_creat
	{SYS_creat, "creat", K_CREAT, 0},
#endif
	{SYS_openat, "openat", K_OPENAT, 0},
#ifdef SYS_openat2
	{SYS_openat2, "openat2", K_OPENAT2, 0},
#endif
	{SYS_write, "write", K_FD0, 1},
	{SYS_pwrite64, "pwrite64", K_FD0, 1},
	{SYS_writev, "writev", K_FD0, 1},
	{SYS_pwritev, "pwritev", K_FD0, 1},
#ifdef SYS_pwritev2
	{SYS_pwritev2, "pwritev2", K_FD0, 1},
#endif
	{SYS_splice, "splice", K_FD2, 1},
#ifdef SYS_sendfile
	{SYS_sendfile, "sendfile", K_FD0, 1},
#endif
#ifdef SYS_copy_file_range
	{SYS_copy_file_range, "copy_file_range", K_FD2, 1},
#endif
	{SYS_ftruncate, "ftruncate", K_FD0, 0},
#ifdef SYS_truncate
	{SYS_truncate, "truncate", K_PATH0, 0},
#endif
	{SYS_fallocate, "fallocate", K_FD0, 0},
	{SYS_fchmod, "fchmod", K_FD0, 0},
#ifdef SYS_chmod
	{SYS_chmod, "chmod", K_PATH0, 0},
#endif
	{SYS_fchmodat, "fchmodat", K_AT01, 0},
#ifdef SYS_fchmodat2
	{SYS_fchmodat2, "fchmodat2", K_AT01, 0},
#endif
	{SYS_fchown, "fchown", K_FD0, 0},
#ifdef SYS_chown
	{SYS_chown, "chown", K_PATH0, 0},
#endif
#ifdef SYS_lchown
	{SYS_lchown, "lchown", K_PATH0, 0},
#endif
	{SYS_fchownat, "fchownat", K_AT01, 0},
	{SYS_fsetxattr, "fsetxattr", K_FD0, 0},
	{SYS_setxattr, "setxattr", K_PATH0, 0},
	{SYS_lsetxattr, "lsetxattr", K_PATH0, 0},
	{SYS_fremovexattr, "fremovexattr", K_FD0, 0},
	{SYS_removexattr, "removexattr", K_PATH0, 0},
	{SYS_lremovexattr, "lremovexattr", K_PATH0, 0},
	{SYS_utimensat, "utimensat", K_AT01, 0},
	{SYS_fsync, "fsync", K_FD0, 0},
	{SYS_fdatasync, "fdatasync", K_FD0, 0},
	{SYS_sync_file_range, "sync_file_range", K_FD0, 0},
	{SYS_syncfs, "syncfs", K_FD0, 0},
	{SYS_sync, "sync", K_ALWAYS, 0},
#ifdef SYS_rename
	{SYS_rename, "rename", K_PATH1, 0},
#endif
#ifdef SYS_renameat
	{SYS_renameat, "renameat", K_AT23, 0},
#endif
#ifdef SYS_renameat2
	{SYS_renameat2, "renameat2", K_AT23, 0},
#endif
#ifdef SYS_link
	{SYS_link, "link", K_PATH1, 0},
#endif
	{SYS_linkat, "linkat", K_AT23, 0},
#ifdef SYS_symlink
	{SYS_symlink, "symlink", K_PATH1, 0},
#endif
	{SYS_symlinkat, "symlinkat", K_AT12, 0},
#ifdef SYS_mkdir
	{SYS_mkdir, "mkdir", K_PATH0, 0},
#endif
	{SYS_mkdirat, "mkdirat", K_AT01, 0},
#ifdef SYS_mknod
	{SYS_mknod, "mknod", K_PATH0, 0},
#endif
	{SYS_mknodat, "mknodat", K_AT01, 0},
#ifdef SYS_unlink
	{SYS_unlink, "unlink", K_PATH0, 0},
#endif
	{SYS_unlinkat, "unlinkat", K_AT01, 0},
#ifdef SYS_rmdir
	{SYS_rmdir, "rmdir", K_PATH0, 0},
#endif
	{SYS_ioctl, "ioctl", K_FD0, 0}, /* FICLONE, FS_IOC_SETFLAGS, ... */
	{SYS_close, "close", K_FD0, 0}, /* ext4 auto_da_alloc flushes on close */
};

static const char *prog = "crashstep";

static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(125);
}

/* ---------------------------------------------------------------- loop stat */

struct lstat_s {
	unsigned long long wios, wsec, inflight, dios, dsec;
};

static int read_loopstat(const char *path, struct lstat_s *s)
{
	unsigned long long f[17] = {0};
	FILE *fp = fopen(path, "re");
	int n;
	if (!fp)
		return -1;
	n = fscanf(fp,
		   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		   "%llu %llu %llu %llu %llu %llu",
		   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7],
		   &f[8], &f[9], &f[10], &f[11], &f[12], &f[13], &f[14],
		   &f[15], &f[16]);
	fclose(fp);
	if (n < 11)
		return -1;
	s->wios = f[4];
	s->wsec = f[6];
	s->inflight = f[8];
	s->dios = f[11];
	s->dsec = f[13];
	return 0;
}

static int same_writes(const struct lstat_s *a, const struct lstat_s *b)
{
	return a->wios == b->wios && a->wsec == b->wsec && a->dios == b->dios &&
	       a->dsec == b->dsec;
}

static void msleep(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Wait until the loop device has nothing in flight and its write counters
 * stay unchanged for a few milliseconds. */
static void wait_stable(const char *statpath, struct lstat_s *out)
{
	struct lstat_s a, b;
	int i;
	if (read_loopstat(statpath, &a) == -1)
		die("%s: cannot read", statpath);
	for (i = 0; i < 2000; i++) {
		msleep(2);
		if (read_loopstat(statpath, &b) == -1)
			die("%s: cannot read", statpath);
		if (b.inflight == 0 && a.inflight == 0 && same_writes(&a, &b))
			break;
		a = b;
	}
	*out = b;
}

/* ---------------------------------------------------------------- copying */

static int allzero(const char *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void copy_sparse(const char *src, const char *dst)
{
	static char buf[1 << 20];
	const size_t blk = 4096;
	int in, out;
	struct stat st;
	off_t pos = 0, end, hole;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in == -1)
		die("%s: %s", src, strerror(errno));
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out == -1)
		die("%s: %s", dst, strerror(errno));
	if (fstat(in, &st) == -1)
		die("%s: %s", src, strerror(errno));
	end = st.st_size;
	while (pos < end) {
		off_t d = lseek(in, pos, SEEK_DATA);
		if (d == -1) {
			if (errno == ENXIO)
				break;
			d = pos; /* SEEK_DATA unsupported: read everything */
			hole = end;
		} else {
			hole = lseek(in, d, SEEK_HOLE);
			if (hole == -1)
				hole = end;
		}
		pos = d;
		while (pos < hole) {
			size_t want = sizeof buf;
			ssize_t n, i;
			if ((off_t)want > hole - pos)
				want = (size_t)(hole - pos);
			n = pread(in, buf, want, pos);
			if (n == -1) {
				if (errno == EINTR)
					continue;
				die("%s: %s", src, strerror(errno));
			}
			if (n == 0)
				break;
			for (i = 0; i < n; i += (ssize_t)blk) {
				size_t len = (size_t)(n - i) < blk ? (size_t)(n - i) : blk;
				if (allzero(buf + i, len))
					continue;
				if (pwrite(out, buf + i, len, pos + i) != (ssize_t)len)
					die("%s: %s", dst, strerror(errno));
			}
			pos += n;
		}
	}
	if (ftruncate(out, end) == -1)
		die("%s: %s", dst, strerror(errno));
	if (close(out) == -1)
		die("%s: %s", dst, strerror(errno));
	close(in);
}

static void busy_fsync(const char *busyfile)
{
	int fd = open(busyfile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd == -1)
		die("%s: %s", busyfile, strerror(errno));
	struct statfs sf;
	if (write(fd, "x", 1) != 1 || fsync(fd) == -1)
		die("%s: %s", busyfile, strerror(errno));
	/* On btrfs an fsync only writes the log tree of the fsynced inode;
	 * the journal-commit equivalent is the transaction commit. */
	if (fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == CS_BTRFS_SUPER_MAGIC) {
		uint64_t transid = 0;
		if (ioctl(fd, CS_BTRFS_IOC_START_SYNC, &transid) == -1 ||
		    ioctl(fd, CS_BTRFS_IOC_WAIT_SYNC, &transid) == -1)
			die("%s: btrfs transaction commit: %s", busyfile, strerror(errno));
	}
	close(fd);
}

/* Take a consistent copy of the image: no I/O in flight, and no write
 * completed while copying (otherwise copy again). */
static void snapshot(const char *image, const char *statpath, const char *busy,
		     const char *dst, struct lstat_s *after)
{
	struct lstat_s before, post;
	int tries;
	if (busy)
		busy_fsync(busy);
	for (tries = 0; tries < 20; tries++) {
		wait_stable(statpath, &before);
		copy_sparse(image, dst);
		if (read_loopstat(statpath, &post) == -1)
			die("%s: cannot read", statpath);
		if (post.inflight == 0 && same_writes(&before, &post)) {
			*after = post;
			return;
		}
	}
	die("%s: the image keeps changing; is background writeback held off?",
	    image);
}

/* ---------------------------------------------------------------- tracing */

struct proc {
	pid_t pid;
	int active;
	int started;       /* first stop seen */
	int in_stop;       /* entry was a stop: stop at exit too */
	const struct sc *cur;
	uint64_t cur_fd;
	char detail[PATH_MAX];
	/* -s thinning */
	const struct sc *run_sc;
	uint64_t run_fd;
	unsigned long run_len;
};

static struct proc *procs;
static size_t nprocs;

static struct proc *getproc(pid_t pid)
{
	size_t i;
	for (i = 0; i < nprocs; i++)
		if (procs[i].active && procs[i].pid == pid)
			return &procs[i];
	for (i = 0; i < nprocs; i++)
		if (!procs[i].active)
			break;
	if (i == nprocs) {
		struct proc *np = realloc(procs, (nprocs + 16) * sizeof *np);
		if (!np)
			die("out of memory");
		procs = np;
		memset(procs + nprocs, 0, 16 * sizeof *np);
		nprocs += 16;
	}
	memset(&procs[i], 0, sizeof procs[i]);
	procs[i].pid = pid;
	procs[i].active = 1;
	return &procs[i];
}

static void dropproc(pid_t pid)
{
	size_t i;
	for (i = 0; i < nprocs; i++)
		if (procs[i].active && procs[i].pid == pid)
			procs[i].active = 0;
}

static int read_string(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	struct iovec local = {buf, size - 1}, remote = {(void *)(uintptr_t)addr, size - 1};
	ssize_t n;
	if (!addr)
		return -1;
	/* may stop short at a page end: retry with smaller pieces */
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n <= 0) {
		size_t got = 0;
		while (got < size - 1) {
			size_t chunk = 64;
			if (chunk > size - 1 - got)
				chunk = size - 1 - got;
			local.iov_base = buf + got;
			local.iov_len = chunk;
			remote.iov_base = (void *)(uintptr_t)(addr + got);
			remote.iov_len = chunk;
			n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
			if (n <= 0)
				break;
			got += (size_t)n;
			if (memchr(buf + got - n, '\0', (size_t)n))
				break;
		}
		if (got == 0)
			return -1;
		n = (ssize_t)got;
	}
	buf[n] = '\0';
	if (!memchr(buf, '\0', (size_t)n))
		buf[size - 1] = '\0';
	return 0;
}

static void fd_path(pid_t pid, long fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;
	if (fd == AT_FDCWD)
		snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof link, "/proc/%d/fd/%ld", (int)pid, fd);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
}

static void at_path(pid_t pid, long dirfd, uint64_t addr, char *buf, size_t size)
{
	char p[PATH_MAX], base[PATH_MAX];
	if (read_string(pid, addr, p, sizeof p) == -1) {
		buf[0] = '\0';
		return;
	}
	if (p[0] == '/') {
		snprintf(buf, size, "%s", p);
		return;
	}
	fd_path(pid, dirfd, base, sizeof base);
	if (snprintf(buf, size, "%s/%s", base, p) >= (int)size)
		buf[size - 1] = '\0'; /* truncated: prefix test still works */
}

static const char *mountp;
static size_t mountlen;

static int under_mount(const char *path)
{
	return strncmp(path, mountp, mountlen) == 0 &&
	       (path[mountlen] == '/' || path[mountlen] == '\0' ||
		path[mountlen] == ' ');
}

static const struct sc *lookup(uint64_t nr)
{
	size_t i;
	for (i = 0; i < sizeof table / sizeof table[0]; i++)
		if ((uint64_t)table[i].nr == nr)
			return &table[i];
	return NULL;
}

/* Decide whether this syscall entry may change the file system under test;
 * fill p->detail. */
static int interesting(pid_t pid, const struct sc *s, const uint64_t *a,
		       struct proc *p)
{
	unsigned long long flags = 0;
	int isopen = 0;
	p->cur_fd = (uint64_t)-1;
	switch (s->kind) {
	case K_FD0:
		p->cur_fd = a[0];
		fd_path(pid, (long)(int)a[0], p->detail, sizeof p->detail);
		break;
	case K_FD2:
		p->cur_fd = a[2];
		fd_path(pid, (long)(int)a[2], p->detail, sizeof p->detail);
		break;
	case K_OPEN:
		flags = a[1];
		isopen = 1;
		at_path(pid, AT_FDCWD, a[0], p->detail, sizeof p->detail);
		break;
	case K_CREAT:
		flags = O_CREAT;
		isopen = 1;
		at_path(pid, AT_FDCWD, a[0], p->detail, sizeof p->detail);
		break;
	case K_OPENAT:
		flags = a[2];
		isopen = 1;
		at_path(pid, (long)(int)a[0], a[1], p->detail, sizeof p->detail);
		break;
	case K_OPENAT2: {
		struct iovec l = {&flags, sizeof flags}, r = {(void *)(uintptr_t)a[2], sizeof flags};
		if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof flags)
			flags = O_CREAT; /* unknown: be safe */
		isopen = 1;
		at_path(pid, (long)(int)a[0], a[1], p->detail, sizeof p->detail);
		break;
	}
	case K_PATH0:
		at_path(pid, AT_FDCWD, a[0], p->detail, sizeof p->detail);
		break;
	case K_PATH1:
		at_path(pid, AT_FDCWD, a[1], p->detail, sizeof p->detail);
		break;
	case K_AT01:
		at_path(pid, (long)(int)a[0], a[1], p->detail, sizeof p->detail);
		break;
	case K_AT12:
		at_path(pid, (long)(int)a[1], a[2], p->detail, sizeof p->detail);
		break;
	case K_AT23:
		at_path(pid, (long)(int)a[2], a[3], p->detail, sizeof p->detail);
		break;
	case K_ALWAYS:
		snprintf(p->detail, sizeof p->detail, "-");
		return 1;
	}
	if (isopen && !(flags & (O_CREAT | O_TRUNC)) &&
	    (flags & O_TMPFILE) != O_TMPFILE)
		return 0;
	return under_mount(p->detail);
}

struct runopts {
	const char *image, *statpath, *outdir, *busy;
	int thin;
	unsigned timeout;
};

static FILE *manifest;
static unsigned state_no;
static struct lstat_s last_copied;
static int have_last;
/* The last stop was a syscall exit and no interesting syscall has started
 * since: the file system has not been changed by the program since then. */
static int after_exit;

static void take_state(const struct runopts *o, const char *phase,
		       const struct proc *p, long long ret)
{
	struct lstat_s now;
	char dst[PATH_MAX];
	int is_exit = strcmp(phase, "exit") == 0;
	int unchanged = after_exit && !is_exit;
	after_exit = is_exit;
	if (o->busy && unchanged && have_last) {
		/* Busy: a second commit of the same in-memory state gives the
		 * same crash state; record it as a duplicate. */
		fprintf(manifest, "%04u\t%s\t%s\t%d\t%lld\t%s\n", state_no,
			phase, p->cur->name, (int)p->pid, ret, p->detail);
		fflush(manifest);
		return;
	}
	if (!o->busy) {
		wait_stable(o->statpath, &now);
		if (have_last && same_writes(&now, &last_copied)) {
			fprintf(manifest, "%04u\t%s\t%s\t%d\t%lld\t%s\n", state_no,
				phase, p->cur->name, (int)p->pid, ret, p->detail);
			fflush(manifest);
			return;
		}
	}
	state_no++;
	snprintf(dst, sizeof dst, "%s/state-%04u.img", o->outdir, state_no);
	snapshot(o->image, o->statpath, o->busy, dst, &last_copied);
	have_last = 1;
	fprintf(manifest, "%04u\t%s\t%s\t%d\t%lld\t%s\n", state_no, phase,
		p->cur->name, (int)p->pid, ret, p->detail);
	fflush(manifest);
}

static pid_t child_pid;

static void on_alarm(int sig)
{
	static const char msg[] = "crashstep: timed out; killing the traced processes\n";
	(void)sig;
	if (write(2, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
	_exit(124); /* PTRACE_O_EXITKILL kills every other tracee */
}

static void kill_child(void)
{
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
}

static int do_run(const struct runopts *o, char **argv)
{
	pid_t pid;
	int status, main_status = -1;
	char mpath[PATH_MAX];
	long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK |
		    PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
		    PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;

	snprintf(mpath, sizeof mpath, "%s/manifest", o->outdir);
	manifest = fopen(mpath, "we");
	if (!manifest)
		die("%s: %s", mpath, strerror(errno));

	pid = fork();
	if (pid == -1)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1)
			_exit(125);
		raise(SIGSTOP);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s: %s\n", prog, argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	atexit(kill_child);
	if (o->timeout) {
		signal(SIGALRM, on_alarm);
		alarm(o->timeout);
	}
	if (waitpid(pid, &status, __WALL) == -1 || !WIFSTOPPED(status))
		die("child did not stop");
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)opts) == -1)
		die("PTRACE_SETOPTIONS: %s", strerror(errno));
	getproc(pid)->started = 1;
	if (ptrace(PTRACE_SYSCALL, pid, NULL, NULL) == -1)
		die("PTRACE_SYSCALL: %s", strerror(errno));

	for (;;) {
		int sig = 0;
		pid_t w = waitpid(-1, &status, __WALL);
		if (w == -1) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			die("waitpid: %s", strerror(errno));
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (w == pid) {
				main_status = status;
				child_pid = 0;
			}
			dropproc(w);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (WSTOPSIG(status) == SIGSTOP && !(status >> 16) &&
		    !getproc(w)->started) {
			/* initial stop of a newly traced child */
			getproc(w)->started = 1;
			ptrace(PTRACE_SYSCALL, w, NULL, NULL);
			continue;
		}
		getproc(w)->started = 1;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			struct cs_sysinfo si;
			struct proc *p = getproc(w);
			memset(&si, 0, sizeof si);
			if (ptrace(PTRACE_GET_SYSCALL_INFO, w, (void *)sizeof si, &si) > 0) {
				if (si.op == CS_OP_ENTRY) {
					const struct sc *s = lookup(si.u.entry.nr);
					p->in_stop = 0;
					if (s && interesting(w, s, si.u.entry.args, p)) {
						int stop = 1;
						p->cur = s;
						if (s->writelike && p->run_sc == s &&
						    p->run_fd == p->cur_fd) {
							p->run_len++;
						} else {
							p->run_sc = s;
							p->run_fd = p->cur_fd;
							p->run_len = 1;
						}
						if (o->thin && s->writelike && p->run_len > 2 &&
						    (p->run_len & (p->run_len - 1)) != 0)
							stop = 0;
						if (!stop)
							after_exit = 0;
						if (stop) {
							take_state(o, "entry", p, 0);
							p->in_stop = 1;
						}
					}
				} else if (si.op == CS_OP_EXIT && p->in_stop) {
					p->in_stop = 0;
					take_state(o, "exit", p, si.u.exit.rval);
				}
			}
		} else if (status >> 16) {
			/* fork/clone/exec event stop: nothing to deliver */
		} else {
			sig = WSTOPSIG(status);
			if (sig == SIGTRAP)
				sig = 0;
		}
		ptrace(PTRACE_SYSCALL, w, NULL, (void *)(long)sig);
	}
	fclose(manifest);
	if (main_status == -1)
		return 125;
	if (WIFEXITED(main_status))
		return WEXITSTATUS(main_status);
	return 128 + WTERMSIG(main_status);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s run -m MOUNT -i IMAGE -l LOOPSTAT -o OUTDIR [-b BUSYFILE] [-s] [-t SECONDS] -- CMD [ARG...]\n"
		"       %s snap -i IMAGE -l LOOPSTAT -o FILE [-b BUSYFILE]\n"
		"       %s copy SRC DST\n",
		prog, prog, prog);
	exit(125);
}

int main(int argc, char **argv)
{
	struct runopts o;
	const char *mode;
	int c;

	memset(&o, 0, sizeof o);
	if (argc < 2)
		usage();
	mode = argv[1];
	if (strcmp(mode, "copy") == 0) {
		if (argc != 4)
			usage();
		copy_sparse(argv[2], argv[3]);
		return 0;
	}
	optind = 2;
	while ((c = getopt(argc, argv, "+m:i:l:o:b:st:")) != -1) {
		switch (c) {
		case 'm': mountp = optarg; break;
		case 'i': o.image = optarg; break;
		case 'l': o.statpath = optarg; break;
		case 'o': o.outdir = optarg; break;
		case 'b': o.busy = optarg; break;
		case 's': o.thin = 1; break;
		case 't': o.timeout = (unsigned)strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (!o.image || !o.statpath || !o.outdir)
		usage();
	if (strcmp(mode, "snap") == 0) {
		struct lstat_s after;
		snapshot(o.image, o.statpath, o.busy, o.outdir, &after);
		return 0;
	}
	if (strcmp(mode, "run") != 0 || !mountp || optind >= argc)
		usage();
	mountlen = strlen(mountp);
	while (mountlen > 1 && mountp[mountlen - 1] == '/')
		mountlen--;
	signal(SIGPIPE, SIG_IGN);
	return do_run(&o, argv + optind);
}

/* SPDX-License-Identifier: ISC */
/*
 * recorder: a FUSE file system that exposes one disk image, /disk, and logs
 * every write and flush a loop device on it receives.
 *
 * A loop device whose backing file is /disk turns each block write into a
 * FUSE WRITE and each cache flush (REQ_PREFLUSH, and the flush the block
 * layer makes of a FUA write) into a FUSE FSYNC.  The file is opened with
 * direct_io, so no FUSE page cache sits between the loop device and this
 * process, and the daemon is single-threaded, so the log holds the requests
 * in the order they completed.  Writes go through to the image at once.
 *
 * Log: a sequence of records, each a struct record followed by len bytes
 * (the data of a write, the name of a mark).  Types: W write, F flush,
 * Z zeroed range (discard or write-zeroes: len is the range, no data),
 * M mark, E a write refused with EIO, X a flush refused with EIO.
 *
 * Control: write a line to /ctl.
 *   mark NAME          append a mark record
 *   fail-write N       the Nth write from now fails with EIO (0: none)
 *   fail-fsync N       the Nth flush from now fails with EIO (0: none)
 *   flush-latency D    sleep D (2ms, 500us, 1s) in each flush
 * Reading /ctl gives the counters: "writes N bytes N flushes N errors N".
 *
 * Usage: recorder [--flush-latency=D] [--fail-write=N] [--fail-fsync=N]
 *                 --log=FILE IMAGE MOUNTPOINT
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECORD_MAGIC 0x50525931u /* "1YRP" */

struct record {
	uint32_t magic;
	uint32_t type;
	uint64_t seq;
	uint64_t off;
	uint64_t len;
};

static struct {
	int image;		/* the backing image */
	off_t size;
	FILE *log;
	uint64_t seq;
	uint64_t writes, bytes, flushes, errors;
	uint64_t fail_write, fail_fsync;	/* countdowns, 0 = off */
	long flush_latency_ns;
} rec;

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static void
log_record(uint32_t type, uint64_t off, uint64_t len, const void *data)
{
	struct record r = { RECORD_MAGIC, type, ++rec.seq, off, len };

	if (fwrite(&r, sizeof r, 1, rec.log) != 1 ||
	    (data != NULL && len > 0 && fwrite(data, len, 1, rec.log) != 1))
		die("recorder: log");
}

static int
parse_duration(const char *s, long *ns)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (strcmp(end, "") == 0 || strcmp(end, "ms") == 0)
		v *= 1e6;
	else if (strcmp(end, "us") == 0)
		v *= 1e3;
	else if (strcmp(end, "s") == 0)
		v *= 1e9;
	else if (strcmp(end, "ns") != 0)
		return -1;
	*ns = (long)v;
	return 0;
}

/* True if this request is the one a countdown was set to fail. */
static int
countdown(uint64_t *n)
{
	if (*n == 0)
		return 0;
	return --*n == 0;
}

static int
rec_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof *st);
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (strcmp(path, "/disk") == 0) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = rec.size;
		st->st_blocks = rec.size / 512;
	} else if (strcmp(path, "/ctl") == 0) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = 0;
	} else
		return -ENOENT;
	return 0;
}

static int
rec_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
    struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "disk", NULL, 0, 0);
	fill(buf, "ctl", NULL, 0, 0);
	return 0;
}

static int
rec_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/disk") != 0 && strcmp(path, "/ctl") != 0)
		return -ENOENT;
	fi->direct_io = 1;	/* no page cache: every write reaches us */
	return 0;
}

static int
rec_read(const char *path, char *buf, size_t n, off_t off,
    struct fuse_file_info *fi)
{
	ssize_t r;
	int len;

	(void)fi;
	if (strcmp(path, "/ctl") == 0) {
		char text[160];

		len = snprintf(text, sizeof text,
		    "writes %" PRIu64 " bytes %" PRIu64 " flushes %" PRIu64
		    " errors %" PRIu64 "\n",
		    rec.writes, rec.bytes, rec.flushes, rec.errors);
		if (off >= len)
			return 0;
		if ((size_t)(len - off) < n)
			n = len - off;
		memcpy(buf, text + off, n);
		return n;
	}
	r = pread(rec.image, buf, n, off);
	return r < 0 ? -errno : (int)r;
}

static int
control(const char *buf, size_t n)
{
	char line[256], *arg;
	unsigned long long v;

	if (n >= sizeof line)
		return -EINVAL;
	memcpy(line, buf, n);
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	arg = strchr(line, ' ');
	if (arg == NULL)
		return -EINVAL;
	*arg++ = '\0';
	if (strcmp(line, "mark") == 0) {
		log_record('M', 0, strlen(arg), arg);
		if (fflush(rec.log) != 0)
			die("recorder: log");
	} else if (strcmp(line, "flush-latency") == 0) {
		if (parse_duration(arg, &rec.flush_latency_ns) != 0)
			return -EINVAL;
	} else if (sscanf(arg, "%llu", &v) != 1) {
		return -EINVAL;
	} else if (strcmp(line, "fail-write") == 0) {
		rec.fail_write = v;
	} else if (strcmp(line, "fail-fsync") == 0) {
		rec.fail_fsync = v;
	} else
		return -EINVAL;
	return n;
}

static int
rec_write(const char *path, const char *buf, size_t n, off_t off,
    struct fuse_file_info *fi)
{
	ssize_t w;

	(void)fi;
	if (strcmp(path, "/ctl") == 0)
		return control(buf, n);
	if (off < 0 || off + (off_t)n > rec.size)
		return -ENOSPC;
	if (countdown(&rec.fail_write)) {
		rec.errors++;
		log_record('E', off, n, NULL);
		return -EIO;
	}
	w = pwrite(rec.image, buf, n, off);
	if (w < 0)
		return -errno;
	rec.writes++;
	rec.bytes += w;
	log_record('W', off, w, buf);
	return w;
}

static int
rec_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct timespec ts;

	(void)datasync;
	(void)fi;
	if (strcmp(path, "/disk") != 0)
		return 0;
	if (countdown(&rec.fail_fsync)) {
		rec.errors++;
		log_record('X', 0, 0, NULL);
		return -EIO;
	}
	if (rec.flush_latency_ns > 0) {
		ts.tv_sec = rec.flush_latency_ns / 1000000000L;
		ts.tv_nsec = rec.flush_latency_ns % 1000000000L;
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	rec.flushes++;
	log_record('F', 0, 0, NULL);
	if (fflush(rec.log) != 0)
		die("recorder: log");
	return 0;
}

/* Discard and write-zeroes arrive as fallocate; the range reads as zeroes. */
static int
rec_fallocate(const char *path, int mode, off_t off, off_t len,
    struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/disk") != 0)
		return -EOPNOTSUPP;
	if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)))
		return 0;	/* preallocation: the image is fully sized */
	if (off < 0 || off + len > rec.size)
		return -EINVAL;
	if (fallocate(rec.image, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    off, len) != 0)
		return -errno;
	rec.writes++;
	log_record('Z', off, len, NULL);
	return 0;
}

static int
rec_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/ctl") == 0)
		return 0;
	return size == rec.size ? 0 : -EPERM;
}

static int
rec_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;
}

static const struct fuse_operations rec_ops = {
	.getattr = rec_getattr,
	.readdir = rec_readdir,
	.open = rec_open,
	.read = rec_read,
	.write = rec_write,
	.fsync = rec_fsync,
	.fallocate = rec_fallocate,
	.truncate = rec_truncate,
	.flush = rec_flush,
};

static void
usage(void)
{
	fprintf(stderr, "usage: recorder [--flush-latency=D] [--fail-write=N] "
	    "[--fail-fsync=N] --log=FILE IMAGE MOUNTPOINT\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	const char *logpath = NULL, *image = NULL, *mnt = NULL;
	char *fargv[8];
	int i, fargc = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "--log=", 6) == 0)
			logpath = a + 6;
		else if (strncmp(a, "--flush-latency=", 16) == 0) {
			if (parse_duration(a + 16, &rec.flush_latency_ns) != 0)
				usage();
		} else if (strncmp(a, "--fail-write=", 13) == 0)
			rec.fail_write = strtoull(a + 13, NULL, 10);
		else if (strncmp(a, "--fail-fsync=", 13) == 0)
			rec.fail_fsync = strtoull(a + 13, NULL, 10);
		else if (a[0] == '-')
			usage();
		else if (image == NULL)
			image = a;
		else if (mnt == NULL)
			mnt = a;
		else
			usage();
	}
	if (logpath == NULL || image == NULL || mnt == NULL)
		usage();
	if ((rec.image = open(image, O_RDWR | O_CLOEXEC)) < 0)
		die(image);
	if ((rec.size = lseek(rec.image, 0, SEEK_END)) < 0)
		die(image);
	if ((rec.log = fopen(logpath, "we")) == NULL)
		die(logpath);
	fargv[fargc++] = argv[0];
	fargv[fargc++] = "-f";		/* foreground: the caller holds our pid */
	fargv[fargc++] = "-s";		/* one thread: the log is in order */
	fargv[fargc++] = "-o";
	fargv[fargc++] = "fsname=ponyrec,subtype=ponyrec,auto_unmount";
	fargv[fargc++] = (char *)mnt;
	fargv[fargc] = NULL;
	i = fuse_main(fargc, fargv, &rec_ops, NULL);
	if (fclose(rec.log) != 0)
		die(logpath);
	return i;
}

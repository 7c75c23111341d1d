/*
 * floor: the least a crash-safe file replacement can do on Linux, used by
 * bench/run as the reference ("floor") for ponywrite.
 *
 *   floor [--no-sync] TARGET < content
 *
 * open TEMP (O_CREAT|O_EXCL) in TARGET's directory -> copy stdin into it ->
 * fdatasync(TEMP) -> rename(TEMP, TARGET) -> open + fsync(directory).
 * --no-sync skips only the directory open + fsync.
 * No metadata handling, no symlink resolution, no signal handling: it is a
 * yardstick, not a tool.  On failure before the rename TEMP is removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];

static void die(const char *what, const char *tmp)
{
	int e = errno;

	if (tmp)
		unlink(tmp);
	fprintf(stderr, "floor: %s: %s\n", what, strerror(e));
	exit(1);
}

int main(int argc, char **argv)
{
	int nosync = 0, fd, dfd;
	const char *target, *slash;
	char dir[4096], tmp[4096];
	size_t dlen;

	if (argc == 3 && strcmp(argv[1], "--no-sync") == 0)
		nosync = 1;
	else if (argc != 2) {
		fprintf(stderr, "usage: floor [--no-sync] target < content\n");
		return 2;
	}
	target = argv[argc - 1];
	slash = strrchr(target, '/');
	if (slash) {
		dlen = (size_t)(slash - target) + 1;
		if (dlen >= sizeof dir)
			return 2;
		memcpy(dir, target, dlen);
		dir[dlen] = '\0';
	} else {
		strcpy(dir, ".");
		dlen = 0;
	}
	if (snprintf(tmp, sizeof tmp, "%.*s.%s.floor%ld", (int)dlen, target,
		     slash ? slash + 1 : target, (long)getpid()) >= (int)sizeof tmp)
		return 2;

	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		die(tmp, NULL);
	for (;;) {
		ssize_t n = read(0, buf, sizeof buf), off = 0;

		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("stdin", tmp);
		}
		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				die(tmp, tmp);
			}
			off += w;
		}
	}
	if (fdatasync(fd) != 0)
		die(tmp, tmp);
	if (rename(tmp, target) != 0)
		die(target, tmp);
	if (!nosync) {
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd) != 0)
			die(dir, NULL);
	}
	return 0;
}

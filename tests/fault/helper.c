/*
 * Command for ponywrite's command mode in the fault tests: writes a fixed
 * 20000-byte payload to stdout with write(2) alone, so that its system
 * calls barely overlap with ponywrite's own.  EINTR and short writes are
 * continued; any other write error exits 7.
 */
#include <errno.h>
#include <unistd.h>

int
main(void)
{
	static char buf[20000];
	size_t i, off;
	ssize_t n;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
	for (off = 0; off < sizeof(buf); off += (size_t)n) {
		n = write(1, buf + off, sizeof(buf) - off);
		if (n < 0 && errno == EINTR)
			n = 0;
		else if (n < 0)
			return 7;
	}
	return 0;
}

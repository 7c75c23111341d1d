/* SPDX-License-Identifier: ISC */
/*
 * libFuzzer harness for ponywrite's argument parsers: parse_mode (octal and
 * symbolic chmod modes), parse_number, hidden_name and parse_options.
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined fuzz_mode.c
 *
 * ponywrite.c is included whole, its main() renamed, so that its static
 * functions are reachable.  parse_options returns its status (2 for a
 * usage error, -1 after --help and --version); the one exit left on its way,
 * fail()'s on out of memory, is turned into a longjmp back here, so that it
 * runs in-process all the same.  User and group names are looked up
 * in a fixed table, not in NSS, so that runs are fast and repeatable.
 *
 * Each input is used four ways:
 *	mode	the bytes up to the first NUL, applied to several base modes
 *		and umasks, checked against an independent model of chmod(1)
 *	number	the same string through parse_number, checked against a
 *		decimal reparse
 *	name	hidden_name(first piece, second piece or "~")
 *	argv	the NUL-separated pieces as ponywrite's arguments
 * A property that does not hold calls abort(), which libFuzzer reports as a
 * crash and saves the input.
 *
 * -DSTRICT_CHMOD_GRAMMAR also fails on modes that chmod(1) rejects but
 * ponywrite accepts ("u+gw": a copied class followed by permission letters).
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <sys/types.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static jmp_buf exit_jump;
static int exit_status;
static FILE *devnull;

static _Noreturn void
fuzz_exit(int status)
{
	exit_status = status;
	longjmp(exit_jump, 1);
}

/* close_stdout must not close the stream the next run writes to. */
static int
fuzz_fclose(FILE *fp)
{
	return fflush(fp) != 0 || ferror(fp) ? EOF : 0;
}

static struct passwd *
fuzz_getpwnam(const char *name)
{
	static struct passwd pw;

	if (strcmp(name, "root") == 0)
		pw.pw_uid = 0;
	else if (strcmp(name, "nobody") == 0)
		pw.pw_uid = 65534;
	else
		return NULL;
	return &pw;
}

static struct group *
fuzz_getgrnam(const char *name)
{
	static struct group gr;

	if (strcmp(name, "root") == 0)
		gr.gr_gid = 0;
	else if (strcmp(name, "nogroup") == 0)
		gr.gr_gid = 65534;
	else
		return NULL;
	return &gr;
}

#define main		ponywrite_main
#define exit		fuzz_exit
#define fclose		fuzz_fclose
#define getpwnam	fuzz_getpwnam
#define getgrnam	fuzz_getgrnam
#define puts(s)		fprintf(stdout, "%s\n", (s))
#undef stdout
#define stdout		devnull
#undef stderr
#define stderr		devnull
#include "../../ponywrite.c"
#undef stdout
#undef stderr
#undef exit
#undef fclose
#undef puts

#define MAXARGS		32
#define MAXLEN		4096

/* ponywrite's option state as it is before parse_options. */
static __typeof__(opt) opt_initial;

static _Noreturn void
broken(const char *what, const char *input)
{
	fprintf(stderr, "fuzz_mode: property broken: %s\ninput: \"", what);
	for (; *input != '\0'; input++)
		fprintf(stderr, isprint((unsigned char)*input) ? "%c" :
		    "\\x%02x", (unsigned char)*input);
	fprintf(stderr, "\"\n");
	abort();
}

/*
 * The model: chmod(1) as POSIX specifies the grammar and GNU coreutils
 * applies it.  Written apart from parse_mode, on purpose differently.
 * Returns -1 for an invalid mode, 0 for a valid one, 1 for a mode that is
 * valid only if a copied class ("u") may be followed by permission letters.
 */
static int
model_who(int c)
{
	switch (c) {
	case 'u': return S_ISUID | S_IRWXU;
	case 'g': return S_ISGID | S_IRWXG;
	case 'o': return S_ISVTX | S_IRWXO;
	case 'a': return 07777;
	}
	return 0;
}

static mode_t
model_copy(mode_t m, int c)
{
	mode_t rwx = c == 'u' ? (m & S_IRWXU) >> 6 : c == 'g' ?
	    (m & S_IRWXG) >> 3 : m & S_IRWXO;

	return rwx << 6 | rwx << 3 | rwx;
}

static int
model_mode(const char *s, mode_t base, mode_t umask, mode_t *res)
{
	mode_t m = base, who, affected, perm;
	unsigned long octal = 0;
	const char *p;
	int lenient = 0, copied, op;

	if (*s >= '0' && *s <= '9') {
		for (p = s; *p != '\0'; p++) {
			if (*p < '0' || *p > '7')
				return -1;
			octal = octal * 8 + (unsigned long)(*p - '0');
			if (octal > 07777)
				return -1;
		}
		*res = (mode_t)octal;
		return 0;
	}
	for (;;) {
		for (who = 0; model_who(*s) != 0; s++)
			who |= (mode_t)model_who(*s);
		affected = who != 0 ? who : 07777 & ~umask;
		if (*s != '+' && *s != '-' && *s != '=')
			return -1;
		while (*s == '+' || *s == '-' || *s == '=') {
			op = *s++;
			perm = 0;
			copied = 0;
			if (*s == 'u' || *s == 'g' || *s == 'o') {
				perm = model_copy(m, *s++);
				copied = 1;
			}
			for (; *s != '\0' && strchr("rwxXst", *s) != NULL; s++) {
				lenient |= copied;
				switch (*s) {
				case 'r': perm |= 0444; break;
				case 'w': perm |= 0222; break;
				case 'x': perm |= 0111; break;
				case 'X': perm |= m & 0111 ? 0111 : 0; break;
				case 's': perm |= S_ISUID | S_ISGID; break;
				case 't': perm |= S_ISVTX; break;
				}
			}
			perm &= affected;
			if (op == '+')
				m |= perm;
			else if (op == '-')
				m &= ~perm;
			else
				m = (m & ~(who != 0 ? who : 07777)) | perm;
		}
		if (*s == '\0')
			break;
		if (*s++ != ',')
			return -1;
	}
	*res = m;
	return lenient;
}

static const mode_t bases[] = { 0, 0644, 0755, 0600, 04755, 07777, 01777 };
static const mode_t umasks[] = { 0, 022, 077, 027, 0777 };

static void
check_mode(const char *s, mode_t seed)
{
	mode_t got, want, check, base;
	size_t i, j;
	int valid, r, model;
	char again[16];

	/* parse_options validates with base 0 and umask 0; decide_metadata
	 * then ignores the result, so validity must not depend on them. */
	valid = parse_mode(s, 0, 0, &check) == 0;
	for (i = 0; i <= sizeof bases / sizeof bases[0]; i++) {
		base = i < sizeof bases / sizeof bases[0] ? bases[i] :
		    seed & 07777;
		for (j = 0; j < sizeof umasks / sizeof umasks[0]; j++) {
			got = 0177777;
			r = parse_mode(s, base, umasks[j], &got);
			if ((r == 0) != valid)
				broken("validity depends on base or umask", s);
			model = model_mode(s, base, umasks[j], &want);
			if (model == -1 && r == 0)
				broken("accepted a mode chmod(1) rejects", s);
#ifdef STRICT_CHMOD_GRAMMAR
			if (model == 1 && r == 0)
				broken("accepted a copied class followed by"
				    " permissions", s);
#endif
			if (model == 0 && r != 0)
				broken("rejected a mode chmod(1) accepts", s);
			if (r != 0)
				continue;
			if (got > 07777)
				broken("result above 07777", s);
			if (got != want)
				broken("result differs from chmod(1)", s);
		}
	}
	if (!valid)
		return;
	/* An octal mode stands for itself, and "%o" of it reads back. */
	if (*s >= '0' && *s <= '7') {
		snprintf(again, sizeof again, "%o", (unsigned)check);
		if (parse_mode(again, 0755, 022, &got) != 0 || got != check)
			broken("octal does not round-trip", s);
		if (check != (mode_t)strtoul(s, NULL, 8))
			broken("octal value differs from strtoul", s);
	}
}

static void
check_fixed_modes(void)
{
	static const struct {
		const char *mode;
		mode_t base, umask, want;
	} cases[] = {
		{ "0644", 0, 022, 0644 },	{ "u+x", 0644, 022, 0744 },
		{ "go-w", 0666, 0, 0644 },	{ "a=r", 0777, 022, 0444 },
		{ "g=u", 0640, 022, 0660 },	{ "u+s,o+t", 0755, 022, 05755 },
		{ "+X", 0644, 022, 0644 },	{ "+X", 0744, 022, 0755 },
		{ "+x", 0644, 022, 0755 },	{ "+w", 0644, 022, 0644 },
		{ "=r", 0777, 022, 0444 },	{ "a=", 07777, 0, 0 },
		{ "=", 0644, 022, 0 },		{ "u=rwx,go=", 0644, 0, 0700 },
		{ "o=u", 0640, 022, 0646 },	{ "u-s", 04755, 022, 0755 },
		{ "7777", 0, 0, 07777 },	{ "0", 0777, 0, 0 },
	};
	static const char *invalid[] = {
		"", "8", "0648", "17777", "u", "ugo", "u+x,", ",u+x", "u+x,,g+w",
		"x", "u!x", "+q", " 644", "644 ", "0x1ff", "-0", "u=go", "a+r x",
		"99999999999999999999999",
	};
	mode_t m;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (parse_mode(cases[i].mode, cases[i].base, cases[i].umask,
		    &m) != 0 || m != cases[i].want)
			broken("known mode gives the wrong result",
			    cases[i].mode);
	for (i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
		if (parse_mode(invalid[i], 0644, 022, &m) == 0)
			broken("known invalid mode accepted", invalid[i]);
	/* "a=" clears everything, whatever the base. */
	for (m = 0; m <= 07777; m++) {
		mode_t r;

		if (parse_mode("a=", m, 022, &r) != 0 || r != 0)
			broken("a= does not give 0", "a=");
	}
}

static void
check_number(const char *s)
{
	unsigned long n;
	char again[32];
	const char *digits;
	int r;

	r = parse_number(s, &n);
	for (digits = s; *digits >= '0' && *digits <= '9'; digits++)
		;
	if (r == 0 && (*digits != '\0' || digits == s))
		broken("parse_number accepted a non-number", s);
	if (*digits == '\0' && digits != s && digits - s < 19 && r != 0)
		broken("parse_number rejected a short number", s);
	if (r != 0)
		return;
	while (s[0] == '0' && s[1] != '\0')
		s++;
	snprintf(again, sizeof again, "%lu", n);
	if (strcmp(again, s) != 0)
		broken("parse_number does not round-trip", s);
}

static int
in_set(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* hidden_name for a directory whose NAME_MAX is MAX */
static void
check_hidden_max(const char *name, const char *suffix, long max)
{
	char dst[NAME_MAX + 1 + 64], whole[2 * MAXLEN + 2];
	size_t len, keep, i;

	memset(dst, 'Z', sizeof dst);
	hidden_name(dst, name, suffix, max);
	len = strlen(dst);
	if (len > NAME_MAX || (long)len > max)
		broken("hidden name longer than the directory's NAME_MAX", name);
	for (i = len + 1; i < sizeof dst; i++)
		if (dst[i] != 'Z')
			broken("hidden_name wrote past NAME_MAX + 1", name);
	if (dst[0] != '.' || len < RANDOM_LEN + 2 ||
	    dst[len - RANDOM_LEN - 1] != '.')
		broken("hidden name is not .NAME.RANDOM", name);
	for (i = len - RANDOM_LEN; i < len; i++)
		if (!in_set(dst[i]))
			broken("random part has a character outside the set",
			    name);
	snprintf(whole, sizeof whole, "%s%s", name, suffix);
	keep = strlen(whole);
	if (keep > (size_t)max - RANDOM_LEN - 2) {
		keep = (size_t)max - RANDOM_LEN - 2;
		while (keep > 0 && (whole[keep] & 0xc0) == 0x80)
			keep--;		/* never inside a UTF-8 character */
	}
	if (len != keep + RANDOM_LEN + 2 ||
	    memcmp(dst + 1, whole, keep) != 0)
		broken("hidden name does not start with the target's name",
		    name);
	if (strchr(whole, '/') == NULL && strchr(dst, '/') != NULL)
		broken("hidden name has a slash", name);
	if (strcmp(dst, ".") == 0 || strcmp(dst, "..") == 0)
		broken("hidden name is . or ..", name);
}

/* NAME_MAX, and a short one (fuse-overlayfs has 251, others less) */
static void
check_hidden(const char *name, const char *suffix)
{
	check_hidden_max(name, suffix, NAME_MAX);
	check_hidden_max(name, suffix, 40);
}

/* Is ARG an option whose value is the next argument ("-m", "--mode")? */
static int
takes_argument(const char *arg)
{
	static const char *const longs[] = { "--batch", "--group", "--input",
	    "--mode", "--owner", "--suffix", "--target-directory", "--wait" };
	size_t i, n;

	if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0') {
		for (arg++; *arg != '\0'; arg++)
			if (strchr("gimoStw", *arg) != NULL)
				return arg[1] == '\0';
		return 0;
	}
	for (i = 0; i < sizeof longs / sizeof longs[0]; i++) {
		n = strlen(arg);
		/* getopt_long takes unambiguous abbreviations too. */
		if (n > 2 && strchr(arg, '=') == NULL &&
		    strncmp(longs[i], arg, n) == 0)
			return 1;
	}
	return 0;
}

/* -t and --batch: the options they refuse, and their targets. */
static void
check_many(void)
{
	size_t i;

	if (opt.targetdir != NULL && opt.batch != NULL)
		broken("-t together with --batch", opt.batch);
	if (opt.append || opt.input != NULL || opt.lock || opt.wait >= 0 ||
	    opt.command != NULL)
		broken("an option the many-files forms refuse let through",
		    opt.targetdir != NULL ? opt.targetdir : opt.batch);
	if (opt.targetdir != NULL && njobs == 0)
		broken("-t without a source let through", opt.targetdir);
	if (opt.batch != NULL && njobs != 0)
		broken("--batch read its list while parsing", opt.batch);
	for (i = 0; i < njobs; i++)
		if (strcmp(jobs[i].source, "-") == 0 || *jobs[i].target == '\0')
			broken("a -t target without a name in the directory",
			    jobs[i].source);
}

/* What -t allocated: its targets' names. */
static void
forget_jobs(void)
{
	size_t i;

	for (i = 0; i < njobs; i++)
		free((char *)jobs[i].target);
	free(jobs);
	jobs = NULL;
	njobs = 0;
}

static void
check_options(int argc, char *argv[])
{
	mode_t m;
	int t, r, done = 1;

	opt = opt_initial;
	optind = 0;		/* glibc: start afresh */
	exit_status = -1;
	if (setjmp(exit_jump) != 0)
		r = exit_status;	/* fail(): out of memory */
	else if ((r = parse_options(argc, argv)) < 0)
		r = close_stdout();	/* --help, --version */
	else
		done = r != 0;
	if (done) {
		/* Usage errors are 2; --help and --version 0. */
		if (r != 0 && r != 2)
			broken("parse_options failed with a status other"
			    " than 0 or 2", argc > 1 ? argv[1] : "");
		clearerr(devnull);
		forget_jobs();
		return;
	}
	if (opt.targetdir != NULL || opt.batch != NULL) {
		check_many();
		forget_jobs();
		return;
	}
	for (t = 1; t < argc && argv[t] != opt.target; t++)
		;
	if (t == argc)
		broken("the target is not one of the arguments", argv[1]);
	/* Options stop at the first operand: what follows is the command. */
	if (opt.command != (argv[t + 1] != NULL ? &argv[t + 1] : NULL))
		broken("the command is not all that follows the target",
		    argv[1]);
	if (t > 1 && strcmp(argv[t - 1], "--") != 0 && *argv[t - 1] != '-' &&
	    !takes_argument(argv[t - 2]))
		broken("an operand before the target", argv[t - 1]);
	if (opt.command != NULL && opt.input != NULL)
		broken("-i together with a command", argv[1]);
	if (opt.suffix == NULL || *opt.suffix == '\0' ||
	    strchr(opt.suffix, '/') != NULL)
		broken("invalid suffix let through", argv[1]);
	if (opt.mode != NULL && parse_mode(opt.mode, 0644, 022, &m) != 0)
		broken("invalid mode let through", opt.mode);
	if ((opt.failstatus == 125) != (opt.command != NULL))
		broken("failure status is not 125 exactly in command mode",
		    argv[1]);
}

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((devnull = fopen("/dev/null", "w")) == NULL)
		abort();
	opt_initial = opt;
	check_fixed_modes();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char copy[MAXLEN + 1];
	char *args[MAXARGS + 2], *p;
	mode_t seed = 0;
	int argc;
	size_t i;

	if (size > MAXLEN)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (i = 0; i < size; i++)
		seed = seed * 31 + data[i];

	check_mode(copy, seed);
	check_number(copy);

	/* The NUL-separated pieces: name and suffix, then argv. */
	args[0] = "ponywrite";
	argc = 1;
	for (p = copy; argc <= MAXARGS && p <= copy + size;
	    p += strlen(p) + 1)
		args[argc++] = p;
	args[argc] = NULL;
	check_hidden(args[1], argc > 2 && *args[2] != '\0' ? args[2] : "~");
	check_options(argc, args);
	return 0;
}

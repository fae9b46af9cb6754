/*
 * fuzz.h - what every fuzz target shares (docs/internals/fuzz.md).
 *
 * A target is fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput; its seed
 * corpus is fuzz/corpus/NAME/. The same file is built twice: with clang
 * and libFuzzer over a library instrumented for coverage, ASan and UBSan
 * (`make fuzz`), and with the suite's compiler against the test library
 * plus fuzz/replay.c, which feeds it every corpus file (`make test`). The
 * build force-includes this header, so a target needs no prototypes of
 * its own.
 *
 * A target checks properties, not only "no crash": FUZZ_CHECK aborts with
 * the property and the input shown, which libFuzzer reports as a crash and
 * the replay as a failed test. Targets must be deterministic, must not
 * keep state between inputs that changes the outcome, and start no thread
 * in LLVMFuzzerInitialize (the replay runs each input in a forked child,
 * where such threads would be gone): start them on first use instead.
 */
#ifndef SURECRON_FUZZ_H
#define SURECRON_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * Aborts when cond is false, printing the property (printf format) and
 * the input (printable bytes as is, the rest as \xNN) to stderr.
 */
#define FUZZ_CHECK(cond, data, size, ...)                                    \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "fuzz: property violated (%s:%d): ", \
				__FILE__, __LINE__);                         \
			fprintf(stderr, __VA_ARGS__);                        \
			fuzz_show_input(data, size);                         \
			abort();                                             \
		}                                                            \
	} while (0)

static inline void fuzz_show_input(const uint8_t *data, size_t size)
{
	fprintf(stderr, "\nfuzz: input (%zu bytes): \"", size);
	for (size_t i = 0; i < size && i < 4096; i++) {
		unsigned c = data[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			fputc((int)c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
	fprintf(stderr, "%s\"\n", size > 4096 ? "..." : "");
}

/* A NUL-terminated copy of the input (malloc'd; abort when out of memory,
 * which a fuzzer treats as a finding anyway). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * The scratch file of a target that goes through the config loader: a
 * private folder $TMPDIR/sc-fuzz-TAG-XXXXXX made once (call it from
 * LLVMFuzzerInitialize) and a path surecron.yaml in it; both go at exit.
 * Aborts when the folder cannot be made: the target could check nothing.
 */
#define FUZZ_SCRATCH_MAX 300

struct fuzz_scratch {
	char dir[256];
	char path[FUZZ_SCRATCH_MAX];
};

static inline struct fuzz_scratch *fuzz_scratch(void)
{
	static struct fuzz_scratch s;
	return &s;
}

static inline void fuzz_scratch_cleanup(void)
{
	unlink(fuzz_scratch()->path);
	rmdir(fuzz_scratch()->dir);
}

static inline const char *fuzz_scratch_file(const char *tag)
{
	struct fuzz_scratch *s = fuzz_scratch();
	const char *t = getenv("TMPDIR");

	snprintf(s->dir, sizeof(s->dir), "%s/sc-fuzz-%s-XXXXXX",
		 t && *t ? t : "/tmp", tag);
	if (!mkdtemp(s->dir))
		abort();
	if (snprintf(s->path, sizeof(s->path), "%s/surecron.yaml", s->dir) >=
	    (int)sizeof(s->path))
		abort();
	atexit(fuzz_scratch_cleanup);
	return s->path;
}

#endif

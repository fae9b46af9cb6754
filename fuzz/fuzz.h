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
#ifndef SC_FUZZ_H
#define SC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif

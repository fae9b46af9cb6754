/*
 * replay.c - runs a fuzz target over its committed corpus, for `make test`.
 *
 * Usage: replay_NAME [DIR-or-FILE ...]; with no argument the corpus is
 * $SURECRON_FUZZ_CORPUS, else FUZZ_CORPUS/NAME (the tree's fuzz/corpus,
 * set by the build; NAME is the binary's name after "replay_"). Every file is one test: it
 * is fed to LLVMFuzzerTestOneInput in a forked child (so a crash or a
 * violated property fails that file alone and the others still run),
 * under a time limit of SURECRON_FUZZ_TIMEOUT seconds (30 by default).
 * Output follows cmocka's summary lines, which tests/run.sh counts:
 * "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)...". An empty or
 * missing corpus is a failure: a target without seeds replays nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

#ifndef FUZZ_CORPUS
#define FUZZ_CORPUS "fuzz/corpus"
#endif

/* libFuzzer's optional hook: called once when the target defines it. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

struct tally {
	int passed;
	int failed;
	char failed_names[64][PATH_MAX];
};

static int read_all(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return -1;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *nb = realloc(b, cap);
			if (!nb) {
				free(b);
				fclose(f);
				return -1;
			}
			b = nb;
		}
		size_t r = fread(b + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(b);
		return -1;
	}
	*out = b;
	*len = n;
	return 0;
}

/* Runs one input in a child; true when it returned normally. */
static bool run_one(const char *path, int timeout_s)
{
	uint8_t *data;
	size_t len;

	if (read_all(path, &data, &len) != 0) {
		fprintf(stderr, "replay: cannot read %s: %s\n", path,
			strerror(errno));
		return false;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "replay: fork: %s\n", strerror(errno));
		free(data);
		return false;
	}
	if (pid == 0) {
		alarm((unsigned)timeout_s);
		LLVMFuzzerTestOneInput(data, len);
		fflush(NULL);
		_exit(0);
	}
	free(data);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return false;
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		fprintf(stderr, "replay: %s: %s%s\n", path, strsignal(sig),
			sig == SIGALRM ? " (time limit)" : "");
		return false;
	}
	if (WEXITSTATUS(st) != 0) {
		fprintf(stderr, "replay: %s: exit status %d\n", path,
			WEXITSTATUS(st));
		return false;
	}
	return true;
}

static void one(struct tally *t, const char *path, int timeout_s)
{
	printf("[ RUN      ] %s\n", path);
	if (run_one(path, timeout_s)) {
		printf("[       OK ] %s\n", path);
		t->passed++;
		return;
	}
	printf("[  FAILED  ] %s\n", path);
	if (t->failed < 64)
		snprintf(t->failed_names[t->failed], PATH_MAX, "%s", path);
	t->failed++;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (so runs are comparable). */
static int replay_dir(struct tally *t, const char *dir, int timeout_s)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				abort();
			names = nn;
		}
		names[n] = strdup(e->d_name);
		if (!names[n])
			abort();
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			one(t, path, timeout_s);
			found++;
		}
		free(names[i]);
	}
	free(names);
	return found;
}

int main(int argc, char **argv)
{
	static struct tally t;
	char def[PATH_MAX];
	const char *env = getenv("SURECRON_FUZZ_CORPUS");
	const char *to = getenv("SURECRON_FUZZ_TIMEOUT");
	int timeout_s = to && atoi(to) > 0 ? atoi(to) : 30;
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strncmp(base, "replay_", 7) == 0)
		base += 7;
	snprintf(def, sizeof(def), "%s/%s", FUZZ_CORPUS, base);

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	int n_paths = argc - 1;
	char *const *paths = argv + 1;
	char *one_path[1] = {(char *)(env && *env ? env : def)};
	if (n_paths == 0) {
		n_paths = 1;
		paths = one_path;
	}
	printf("[==========] replaying the %s corpus\n", base);
	for (int i = 0; i < n_paths; i++) {
		struct stat st;
		if (stat(paths[i], &st) == 0 && S_ISREG(st.st_mode)) {
			one(&t, paths[i], timeout_s);
			continue;
		}
		if (replay_dir(&t, paths[i], timeout_s) <= 0) {
			printf("[  FAILED  ] %s: no corpus files\n", paths[i]);
			snprintf(t.failed_names[t.failed < 64 ? t.failed : 63],
				 PATH_MAX, "%s (empty or missing)", paths[i]);
			t.failed++;
		}
	}
	printf("[==========] %d test(s) run.\n", t.passed + t.failed);
	printf("[  PASSED  ] %d test(s).\n", t.passed);
	if (t.failed) {
		printf("[  FAILED  ] %d test(s), listed below:\n", t.failed);
		for (int i = 0; i < t.failed && i < 64; i++)
			printf("[  FAILED  ] %s\n", t.failed_names[i]);
	}
	return t.failed ? 1 : 0;
}

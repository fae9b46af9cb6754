/*
 * main.c - the surecron binary's entry: the reaper's and the launcher's
 * re-entries (src/proc.c), then
 * dispatch through the command table (cli_commands.c).
 *
 * `surecron CMD --help` and `surecron help CMD` print the same text.
 * Unknown commands and options exit 2 with a one-line error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "proc.h"

/* This binary's path, for the reaper. The link's target, not
 * "/proc/self/exe" itself: a program run under a loader (valgrind) has
 * the loader there, and the loader answers the readlink with our path.
 * A binary deleted since it started (an upgrade) keeps the link. */
static const char *self_exe(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0 || (size_t)n >= sizeof(path) - 1)
		return "/proc/self/exe";
	path[n] = '\0';
	if (n > 10 && strcmp(path + n - 10, " (deleted)") == 0)
		return "/proc/self/exe";
	return path;
}

int main(int argc, char **argv)
{
	/* A task's reaper (src/proc.c): this binary again, spawned by
	 * proc_run, so that no run forks the whole daemon. */
	if (argc > 1 && strcmp(argv[1], PROC_REAPER_ARG) == 0)
		return proc_reaper_exec_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], PROC_LAUNCHER_ARG) == 0)
		return proc_launcher_exec_main(argc, argv);
	proc_set_reaper_exe(self_exe());
	if (argc < 2) {
		cli_print_overview(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		cli_print_overview(stdout);
		return EXIT_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
		return cmd_version(1, argv + 1);
	if (name[0] == '-')
		return cli_usage_error(NULL, "unknown option '%s'", name);

	const struct cli_command *c = cli_find(name);
	if (!c)
		return cli_usage_error(NULL, "'%s' is not a surecron command",
				       name);
	if (c->fn != cmd_help && cli_wants_help(argc - 1, argv + 1)) {
		cli_print_help(stdout, c);
		return EXIT_OK;
	}
	return c->fn(argc - 1, argv + 1);
}

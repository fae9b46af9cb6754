/*
 * cmd_help.c - `surecron help [COMMAND]` and `surecron version`: the two
 * commands that describe the binary itself.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return cli_usage_error("help", "help takes at most one command");
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		cli_print_overview(stdout);
		return EXIT_OK;
	}
	const struct cli_command *c = cli_find(argv[1]);
	if (!c)
		return cli_usage_error(NULL, "'%s' is not a surecron command",
				       argv[1]);
	cli_print_help(stdout, c);
	return EXIT_OK;
}

int cmd_version(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		cli_print_help(stdout, cli_find("version"));
		return EXIT_OK;
	}
	if (argc > 1)
		return cli_usage_error("version", "unexpected argument '%s'",
				       argv[1]);
	printf("surecron %s\n", sc_version());
	return EXIT_OK;
}


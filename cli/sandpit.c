/*
 * sandpit: the command line. Sandbox commands (cli/commands.c) talk to the
 * REST API with SANDPIT_URL, SANDPIT_KEY and SANDPIT_CA; the operator's
 * admin commands (cli/operator.c) talk to Redis directly with the server's
 * configuration (-c CONFIG).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "operator.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandpit [--json] COMMAND [ARGS]\n"
		"       sandpit [-c CONFIG] ADMIN-COMMAND [ARGS]\n"
		"       sandpit help COMMAND\n\n"
		"%s\n%s\n"
		"CONFIG defaults to $SANDPIT_CONFIG, then /etc/sandpit/sandpitd.conf.\n"
		"'sandpit COMMAND --help' tells more about one command.\n",
		commands_usage, operator_usage);
}

int main(int argc, char **argv)
{
	const char *path = getenv("SANDPIT_CONFIG");
	int i, json = 0;

	if (!path || !*path)
		path = "/etc/sandpit/sandpitd.conf";
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "sandpit: %s needs a file\n", argv[i]);
				return 2;
			}
			path = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			path = argv[i] + 9;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "sandpit: unknown option '%s'\n\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	argc -= i;
	argv += i;
	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[0], "help") == 0) {
		if (argc < 2) {
			usage(stdout);
			return 0;
		}
		if (commands_help(argv[1], stdout) == 0)
			return 0;
		if (operator_is_command(argv[1])) {
			printf("%s", operator_usage);
			return 0;
		}
		fprintf(stderr, "sandpit: no command '%s'\n", argv[1]);
		return 2;
	}
	if (commands_is_command(argv[0]))
		return commands_main(argc, argv, json);
	if (operator_is_command(argv[0]))
		return operator_main(path, argc, argv);
	fprintf(stderr, "sandpit: no command '%s'\n\n", argv[0]);
	usage(stderr);
	return 2;
}

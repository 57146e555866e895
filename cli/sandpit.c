/*
 * sandpit: the command line. For now the operator's admin commands
 * (cli/operator.c), which talk to Redis directly with the server's
 * configuration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "operator.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: sandpit [-c CONFIG] COMMAND\n\n%s\n"
		   "CONFIG defaults to $SANDPIT_CONFIG, then /etc/sandpit/sandpitd.conf.\n",
		operator_usage);
}

int main(int argc, char **argv)
{
	const char *path = getenv("SANDPIT_CONFIG");
	int opt;

	if (!path || !*path)
		path = "/etc/sandpit/sandpitd.conf";
	while ((opt = getopt(argc, argv, "+c:h")) != -1) {
		if (opt == 'c') {
			path = optarg;
		} else {
			usage(opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || !operator_is_command(argv[0])) {
		usage(stderr);
		return 2;
	}
	return operator_main(path, argc, argv);
}

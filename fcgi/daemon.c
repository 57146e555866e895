/* The daemons' shared main. See daemon.h. */
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/crypto.h"
#include "../common/log.h"

void daemon_logging(const char *name, const struct config *cfg)
{
	enum log_level lv = LOG_INFO;

	log_level_parse(cfg->log_level, &lv);
	log_setup(name, lv, cfg->log_json);
}

int daemon_main(const struct daemon_spec *d, int argc, char **argv)
{
	const char *path = getenv("SANDPIT_CONFIG");
	static struct config cfg;
	char err[1024];
	int test = 0, opt, rc;

	if (!path || !*path)
		path = "/etc/sandpit/sandpitd.conf";
	while ((opt = getopt(argc, argv, "c:th")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 't':
			test = 1;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-c CONFIG] [-t]\n"
				"  -c CONFIG  %s (default $SANDPIT_CONFIG or "
				"/etc/sandpit/sandpitd.conf)\n"
				"  -t         check the configuration and exit\n",
				d->name, d->config_doc);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (crypto_init() < 0) {
		fprintf(stderr, "%s: libsodium failed to initialise\n", d->name);
		return 1;
	}
	if (d->load(path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: configuration error: %s\n", d->name, err);
		return 1;
	}
	if (test) {
		printf("%s: configuration %s OK\n", d->name, path);
		config_wipe(&cfg);
		return 0;
	}
	daemon_logging(d->name, &cfg);
	if (d->prepare && d->prepare(&cfg) < 0) {
		config_wipe(&cfg);
		return 1;
	}
	rc = pm_run(&cfg, d->load, d->worker);
	config_wipe(&cfg);
	return rc;
}

/*
 * The entry point the daemons share (sandpitd, sandpit-stream): options
 * (-c CONFIG, -t), libsodium, the configuration, logging under the
 * program's name, then the process manager.
 */
#ifndef SANDPIT_DAEMON_H
#define SANDPIT_DAEMON_H

#include "pm.h"

struct daemon_spec {
	const char *name;	/* program name, in messages and log lines */
	const char *config_doc; /* how -c is described in the usage text */
	pm_load_fn load;	/* loads (and adapts) a configuration */
	pm_worker_fn worker;
	/* runs once in the master before pm_run; -1 stops start-up (may be NULL) */
	int (*prepare)(const struct config *cfg);
};

/* Parses argv and runs; returns the process exit status. */
int daemon_main(const struct daemon_spec *d, int argc, char **argv);
/* Sets the log gate and format from cfg for the program name. */
void daemon_logging(const char *name, const struct config *cfg);

#endif

/*
 * The operator's admin commands of the sandpit command line: keys, orgs,
 * roles and quotas. They talk to Redis directly with the server's
 * configuration (-c CONFIG), so they work while sandpitd is down.
 */
#ifndef SANDPIT_CLI_OPERATOR_H
#define SANDPIT_CLI_OPERATOR_H

/* True when argv[0] names an admin command group. */
int operator_is_command(const char *group);
/* Runs "GROUP ACTION ..." with the configuration at config_path; returns
 * the process exit status (0 ok, 1 failed, 2 usage). */
int operator_main(const char *config_path, int argc, char **argv);
/* The help text of the admin commands. */
extern const char operator_usage[];

#endif

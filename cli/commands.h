/*
 * The sandbox commands of the sandpit command line: create, list, show,
 * exec, cp, ls, timeout, kill, rm, templates. They talk to the REST API
 * (cli/api.c) with SANDPIT_URL, SANDPIT_KEY and SANDPIT_CA.
 */
#ifndef SANDPIT_CLI_COMMANDS_H
#define SANDPIT_CLI_COMMANDS_H

#include <stdio.h>

/* True when name is a sandbox command. */
int commands_is_command(const char *name);
/* Runs argv[0] with its arguments; json: print the API's JSON. Returns the
 * process exit status (0 ok, 1 failed, 2 usage; exec: the command's). */
int commands_main(int argc, char **argv, int json);
/* Prints the help of one command; returns -1 for an unknown name. */
int commands_help(const char *name, FILE *f);
/* The one-line summaries of every command, for the general help. */
extern const char commands_usage[];

#endif

/*
 * The file commands of sandpit-helper (files.c): stat, ls, cat, put,
 * mkdir, mv, rm, each run as the sandbox's user (issue 16).
 */
#ifndef SANDPIT_HELPER_FILES_H
#define SANDPIT_HELPER_FILES_H

/* Runs the file command op; -1 when op is not one (the caller goes on). */
int files_main(const char *op, int argc, char **argv);

#endif

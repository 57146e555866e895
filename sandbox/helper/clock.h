/*
 * The keeper's clock commands of sandpit-helper (clock.c): sleep and now,
 * so that the programs the keeper runs (sandbox/sh/main.sh, pool.sh,
 * arm.sh) name no program of the image or of a volume, only this
 * read-only helper, by its absolute path (issue 24 D7).
 */
#ifndef SANDPIT_HELPER_CLOCK_H
#define SANDPIT_HELPER_CLOCK_H

/* Runs the clock command op; -1 when op is not one (the caller goes on). */
int clock_main(const char *op, int argc, char **argv);

#endif

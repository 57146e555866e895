/*
 * The fast path's serving mode of sandpit-helper (serve.c, issue 16).
 */
#ifndef SANDPIT_HELPER_SERVE_H
#define SANDPIT_HELPER_SERVE_H

/* The byte serve writes on stdout once it is not dumpable: sandpit sends
 * the secret only after it (fastpath.c, FAST_READY). */
#define SERVE_READY "R"

/* `serve PORT`: reads the sandbox's secret on stdin, listens, detaches;
 * the exit status for the exec that started it. */
int serve_main(int argc, char **argv);

#endif

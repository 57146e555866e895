/*
 * The fast path's serving mode of sandpit-helper (serve.c, issue 16).
 */
#ifndef SANDPIT_HELPER_SERVE_H
#define SANDPIT_HELPER_SERVE_H

/* `serve PORT`: reads the sandbox's secret on stdin, listens, detaches;
 * the exit status for the exec that started it. */
int serve_main(int argc, char **argv);

#endif

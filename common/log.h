/*
 * One logging entry point with a level gate. A line names the failed call
 * and errno where there is one, and carries the current request id. Text
 * lines for development, JSON lines in production. Never log a secret:
 * keys, env values and file content stay out of every line.
 */
#ifndef SANDPIT_LOG_H
#define SANDPIT_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the gate and the format. name is the program name on each line. */
void log_setup(const char *name, enum log_level level, int json);
/* Parses "error|warn|info|debug"; returns -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);
/* Sets the request id carried by later lines (copied; NULL clears it).
 * Not for threads: one id per process (sandpitd's single-threaded
 * workers); sandpit-stream writes its ids into the text instead. */
void log_set_request_id(const char *id);
const char *log_request_id(void);
/* Safe from any thread once log_setup has run: one write(2) per line,
 * the line built on the stack. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern enum log_level log_gate;

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)                                   \
	do {                                            \
		if (log_gate >= LOG_INFO)               \
			log_msg(LOG_INFO, __VA_ARGS__); \
	} while (0)
#define log_debug(...)                                   \
	do {                                             \
		if (log_gate >= LOG_DEBUG)               \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif

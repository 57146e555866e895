/*
 * The command line's REST client: one call to /api/sandbox.<procedure> over
 * libcurl, as the OpenAPI document describes it (queries GET with the input
 * as the query string, mutations POST with a JSON body, x-api-key). The
 * server, key and CA come from SANDPIT_URL, SANDPIT_KEY and SANDPIT_CA.
 * Knows HTTP and JSON, nothing of what the procedures mean.
 */
#ifndef SANDPIT_CLI_API_H
#define SANDPIT_CLI_API_H

#include <json-c/json.h>

struct api;

/* Opens a client from the environment. Returns NULL and writes why into
 * err (cap bytes) when SANDPIT_URL or SANDPIT_KEY is missing. The key is
 * copied and wiped by api_close. */
struct api *api_open(char *err, size_t cap);
void api_close(struct api *a);

/* Calls a procedure: method "GET" or "POST", proc "sandbox.exec". in is
 * borrowed (NULL = no input). On a 2xx answer returns 0 and *out is the
 * parsed JSON (new; caller puts). Otherwise returns -1 with the API's
 * message (or the transport error) in api_error() and the HTTP status in
 * api_status() (0 when the server was not reached). */
int api_call(struct api *a, const char *method, const char *proc, json_object *in,
	     json_object **out);

/* Receives decoded bytes of an answer's leading "stdout" string as they
 * arrive (sandbox.exec streams it while the command runs). */
typedef void (*api_sink)(const char *data, size_t len, void *arg);

/* Like api_call; while the answer arrives, the bytes of a leading
 * {"stdout":"..." member are decoded and passed to sink as they come, and
 * *streamed is set to 1 once any was (the caller then does not print the
 * parsed stdout again). A cut-off answer is an error. */
int api_call_stream(struct api *a, const char *method, const char *proc, json_object *in,
		    api_sink sink, void *arg, int *streamed, json_object **out);
const char *api_error(const struct api *a);
int api_status(const struct api *a);

#endif

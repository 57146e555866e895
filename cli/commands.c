/*
 * The sandbox commands. Each parses its own options, makes one or two API
 * calls through cli/api.c and prints either a short human form or, with
 * --json, the API's answer as it came. exec prints the command's stdout and
 * stderr unchanged on the matching streams and exits with its exit code.
 * cp moves bytes as base64 through writeFile/readFile, so binary files
 * survive. Never prints the API key.
 */
#include "commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "api.h"

#define FILE_MAX 10485760 /* the API's file limit, in both directions */
#define ENV_FILE_MAX 65536

struct command {
	const char *name;
	int (*fn)(struct api *a, int argc, char **argv, int json);
	const char *synopsis;
	const char *help;
};

static const struct command commands[];

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "sandpit %s: ", cmd);
	fprintf(stderr, fmt, arg ? arg : "");
	fprintf(stderr, "\nTry 'sandpit %s --help'.\n", cmd);
	return 2;
}

static int api_fail(struct api *a)
{
	fprintf(stderr, "sandpit: %s\n", api_error(a));
	return 1;
}

static void print_json(json_object *o)
{
	printf("%s\n",
	       json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							 JSON_C_TO_STRING_NOSLASHESCAPE));
}

static const char *jstr(json_object *o, const char *name)
{
	json_object *v;

	if (!json_object_object_get_ex(o, name, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]; advances *i past it. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		*val = NULL;
		return 1;
	}
	*val = argv[++*i];
	return 1;
}

/* A duration in ms: "90000", "90000ms", "90s", "15m", "2h". */
static int parse_duration(const char *s, long long *ms)
{
	char *end;
	double v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	if (*end == '\0' || strcmp(end, "ms") == 0)
		;
	else if (strcmp(end, "s") == 0)
		v *= 1000;
	else if (strcmp(end, "m") == 0)
		v *= 60000;
	else if (strcmp(end, "h") == 0)
		v *= 3600000;
	else
		return -1;
	if (v > 9e15)
		return -1;
	*ms = (long long)v;
	return 0;
}

/* Reads a whole file (or stdin for "-") up to max bytes into b; -1 with
 * errno set, EFBIG when it is larger. */
static int read_local(const char *path, size_t max, struct buf *b)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char chunk[65536];
	size_t n;
	int rc = 0;

	if (!f)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (b->len + n > max) {
			errno = EFBIG;
			rc = -1;
			break;
		}
		if (buf_append(b, chunk, n) < 0) {
			errno = ENOMEM;
			rc = -1;
			break;
		}
	}
	if (rc == 0 && ferror(f)) {
		errno = EIO;
		rc = -1;
	}
	if (f != stdin)
		fclose(f);
	return rc;
}

static int valid_id(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

static json_object *id_input(const char *id)
{
	json_object *in = json_object_new_object();

	json_object_object_add(in, "sandboxId", json_object_new_string(id));
	return in;
}

/* --- create ---------------------------------------------------------------- */

static int cmd_create(struct api *a, int argc, char **argv, int json)
{
	json_object *in = json_object_new_object(), *out = NULL;
	struct buf env;
	const char *v;
	int rc = 2;

	buf_init(&env, ENV_FILE_MAX);
	for (int i = 1; i < argc; i++) {
		long long n;
		if (opt_value(argc, argv, &i, "--template", &v) ||
		    opt_value(argc, argv, &i, "-t", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "template", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--image", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "image", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--name", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "name", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--server", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "serverId", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--cpu", &v)) {
			double d;
			if (!v || parse_double(v, &d) < 0) {
				rc = usage_error("create", "--cpu needs a number of CPUs, e.g. 0.5",
						 NULL);
				goto out;
			}
			json_object_object_add(in, "cpu", json_object_new_double(d));
		} else if (opt_value(argc, argv, &i, "--memory", &v)) {
			if (!v || parse_ll(v, 0, 1LL << 40, &n) < 0) {
				rc = usage_error("create", "--memory needs MiB, e.g. 512", NULL);
				goto out;
			}
			json_object_object_add(in, "memoryMb", json_object_new_int64(n));
		} else if (opt_value(argc, argv, &i, "--pids", &v)) {
			if (!v || parse_ll(v, 0, 1LL << 40, &n) < 0) {
				rc = usage_error("create", "--pids needs a number", NULL);
				goto out;
			}
			json_object_object_add(in, "pidsLimit", json_object_new_int64(n));
		} else if (opt_value(argc, argv, &i, "--timeout", &v)) {
			if (parse_duration(v, &n) < 0) {
				rc = usage_error("create",
						 "--timeout needs a duration: 300000, 90s, 15m, 2h",
						 NULL);
				goto out;
			}
			json_object_object_add(in, "timeoutMs", json_object_new_int64(n));
		} else if (opt_value(argc, argv, &i, "--max-lifetime", &v)) {
			if (parse_duration(v, &n) < 0) {
				rc = usage_error("create",
						 "--max-lifetime needs a duration: 3600000, 1h",
						 NULL);
				goto out;
			}
			json_object_object_add(in, "maxLifetimeMs", json_object_new_int64(n));
		} else if (opt_value(argc, argv, &i, "--network", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "networkMode", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--runtime", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "runtime", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--workdir", &v)) {
			if (!v)
				goto missing;
			json_object_object_add(in, "workdir", json_object_new_string(v));
		} else if (opt_value(argc, argv, &i, "--env", &v) ||
			   opt_value(argc, argv, &i, "-e", &v)) {
			if (!v || !strchr(v, '=')) {
				rc = usage_error("create", "--env needs KEY=VALUE", NULL);
				goto out;
			}
			if (buf_printf(&env, "%s\n", v) < 0) {
				rc = usage_error("create", "the environment is over %s bytes",
						 "65536");
				goto out;
			}
		} else if (opt_value(argc, argv, &i, "--env-file", &v)) {
			if (!v)
				goto missing;
			if (read_local(v, ENV_FILE_MAX, &env) < 0) {
				fprintf(stderr, "sandpit create: %s: %s\n", v, strerror(errno));
				rc = 1;
				goto out;
			}
			if (env.len && env.data[env.len - 1] != '\n' && buf_puts(&env, "\n") < 0) {
				rc = usage_error("create", "the environment is over %s bytes",
						 "65536");
				goto out;
			}
		} else {
			rc = usage_error("create", "unexpected '%s'", argv[i]);
			goto out;
		}
	}
	if (env.len)
		json_object_object_add(in, "envVars",
				       json_object_new_string_len(env.data, (int)env.len));
	if (!json_object_object_get_ex(in, "template", NULL) &&
	    !json_object_object_get_ex(in, "image", NULL)) {
		rc = usage_error("create", "--template NAME or --image IMAGE is required", NULL);
		goto out;
	}
	if (api_call(a, "POST", "sandbox.create", in, &out) < 0) {
		rc = api_fail(a);
		goto out;
	}
	if (json)
		print_json(out);
	else
		printf("%s\n", jstr(out, "sandboxId"));
	rc = 0;
	goto out;
missing:
	rc = usage_error("create", "%s needs a value", argv[argc - 1]);
out:
	buf_wipe(&env);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

/* --- list, show, templates ------------------------------------------------- */

/* s made safe for a terminal: every control character (C0, DEL, C1), the
 * bidirectional controls and the line separators (utf8_cp_unsafe) become
 * \xNN or \uNNNN, and bytes that are not UTF-8 \xNN, so a name cannot move
 * the cursor, rewrite the line or reverse the text. "-" for NULL or "".
 * Returns one of 8 static buffers used in turn (up to 8 in one printf);
 * what does not fit in 16 KiB is left out. */
static const char *or_dash(const char *s)
{
	static char bufs[8][16 * 1024];
	static unsigned next;
	const unsigned char *u = (const unsigned char *)s;
	char *out;
	size_t n, i = 0, o = 0, cap = sizeof(bufs[0]);

	if (!s || !*s)
		return "-";
	out = bufs[next++ % 8];
	n = strlen(s);
	while (i < n && o + 16 < cap) {
		size_t k = utf8_seq_len(u + i, n - i);
		unsigned cp = k ? utf8_cp(u + i, k) : u[i];
		int w;
		if (k && !utf8_cp_unsafe(cp)) {
			memcpy(out + o, u + i, k);
			o += k;
			i += k;
			continue;
		}
		w = snprintf(out + o, cap - o, cp < 0x100 ? "\\x%02X" : "\\u%04X", cp);
		if (w < 0 || (size_t)w >= cap - o)
			break;
		o += (size_t)w;
		i += k ? k : 1;
	}
	out[o] = '\0';
	return out;
}

static int no_args(const char *cmd, int argc, char **argv)
{
	if (argc > 1)
		return usage_error(cmd, "unexpected '%s'", argv[1]);
	return 0;
}

static int cmd_list(struct api *a, int argc, char **argv, int json)
{
	json_object *out;

	if (no_args("list", argc, argv))
		return 2;
	if (api_call(a, "GET", "sandbox.list", NULL, &out) < 0)
		return api_fail(a);
	if (json) {
		print_json(out);
	} else {
		printf("%-24s %-9s %-24s %-20s %s\n", "SANDBOX ID", "STATUS", "TEMPLATE/IMAGE",
		       "NAME", "EXPIRES");
		for (size_t i = 0; i < json_object_array_length(out); i++) {
			json_object *s = json_object_array_get_idx(out, i);
			const char *what = jstr(s, "template");
			printf("%-24s %-9s %-24s %-20s %s\n", or_dash(jstr(s, "sandboxId")),
			       or_dash(jstr(s, "status")), or_dash(what ? what : jstr(s, "image")),
			       or_dash(jstr(s, "name")), or_dash(jstr(s, "expiresAt")));
		}
	}
	json_object_put(out);
	return 0;
}

static int one_id(const char *cmd, int argc, char **argv)
{
	if (argc != 2)
		return usage_error(cmd, argc < 2 ? "a sandbox ID is needed%s" : "unexpected '%s'",
				   argc < 2 ? "" : argv[2]);
	if (!valid_id(argv[1]))
		return usage_error(cmd, "'%s' is not a sandbox ID", argv[1]);
	return 0;
}

static int cmd_show(struct api *a, int argc, char **argv, int json)
{
	json_object *in, *out;
	int rc;

	if (one_id("show", argc, argv))
		return 2;
	in = id_input(argv[1]);
	rc = api_call(a, "GET", "sandbox.one", in, &out);
	json_object_put(in);
	if (rc < 0)
		return api_fail(a);
	if (json) {
		print_json(out);
	} else {
		json_object_object_foreach(out, k, v)
		{
			printf("%-15s %s\n", k, or_dash(v ? json_object_get_string(v) : NULL));
		}
	}
	json_object_put(out);
	return 0;
}

static int cmd_templates(struct api *a, int argc, char **argv, int json)
{
	json_object *out;

	if (no_args("templates", argc, argv))
		return 2;
	if (api_call(a, "GET", "sandbox.templates", NULL, &out) < 0)
		return api_fail(a);
	if (json) {
		print_json(out);
	} else {
		printf("%-10s %-26s %s\n", "TEMPLATE", "IMAGE", "VERSION");
		for (size_t i = 0; i < json_object_array_length(out); i++) {
			json_object *t = json_object_array_get_idx(out, i), *p;
			const char *v = jstr(t, "version");
			int absent = json_object_object_get_ex(t, "imagePresent", &p) &&
				     json_object_is_type(p, json_type_boolean) &&
				     !json_object_get_boolean(p);
			printf("%-10s %-26s %s\n", or_dash(jstr(t, "name")),
			       or_dash(jstr(t, "image")),
			       absent ? "(image not on the local Docker)" : or_dash(v));
		}
	}
	json_object_put(out);
	return 0;
}

/* --- timeout, kill, rm ------------------------------------------------------- */

static int cmd_timeout(struct api *a, int argc, char **argv, int json)
{
	json_object *in, *out;
	long long ms;
	int rc;

	if (argc != 3)
		return usage_error("timeout", "needs a sandbox ID and a duration%s", "");
	if (!valid_id(argv[1]))
		return usage_error("timeout", "'%s' is not a sandbox ID", argv[1]);
	if (parse_duration(argv[2], &ms) < 0)
		return usage_error("timeout", "'%s' is not a duration (300000, 90s, 15m, 2h)",
				   argv[2]);
	in = id_input(argv[1]);
	json_object_object_add(in, "timeoutMs", json_object_new_int64(ms));
	rc = api_call(a, "POST", "sandbox.setTimeout", in, &out);
	json_object_put(in);
	if (rc < 0)
		return api_fail(a);
	if (json)
		print_json(out);
	else
		printf("%s expires at %s\n", argv[1], or_dash(jstr(out, "expiresAt")));
	json_object_put(out);
	return 0;
}

/* kill and rm take several ids; the status is 1 if any failed. */
static int each_id(struct api *a, int argc, char **argv, int json, const char *cmd,
		   const char *proc)
{
	int rc = 0;

	if (argc < 2)
		return usage_error(cmd, "a sandbox ID is needed%s", "");
	for (int i = 1; i < argc; i++)
		if (!valid_id(argv[i]))
			return usage_error(cmd, "'%s' is not a sandbox ID", argv[i]);
	for (int i = 1; i < argc; i++) {
		json_object *in = id_input(argv[i]), *out;
		if (api_call(a, "POST", proc, in, &out) < 0) {
			fprintf(stderr, "sandpit: %s: %s\n", argv[i], api_error(a));
			rc = 1;
		} else {
			if (json)
				print_json(out);
			else
				printf("%s\n", argv[i]);
			json_object_put(out);
		}
		json_object_put(in);
	}
	return rc;
}

static int cmd_kill(struct api *a, int argc, char **argv, int json)
{
	return each_id(a, argc, argv, json, "kill", "sandbox.kill");
}

static int cmd_rm(struct api *a, int argc, char **argv, int json)
{
	return each_id(a, argc, argv, json, "rm", "sandbox.remove");
}

/* --- exec -------------------------------------------------------------------- */

/* Appends s to b quoted for sh (as is when it holds only safe bytes). */
static int sh_quote(struct buf *b, const char *s)
{
	int safe = *s != '\0';

	for (const char *p = s; *p && safe; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_@%+=:,./-", *p))
			safe = 0;
	if (safe)
		return buf_puts(b, s);
	if (buf_puts(b, "'") < 0)
		return -1;
	for (const char *p = s; *p; p++)
		if ((*p == '\'' ? buf_puts(b, "'\\''") : buf_append(b, p, 1)) < 0)
			return -1;
	return buf_puts(b, "'");
}

static int write_all(FILE *f, const char *s, size_t n)
{
	if (n && fwrite(s, 1, n, f) != n)
		return -1;
	return fflush(f);
}

/* exec's stdout as it arrives (the API streams it while the command runs). */
static void exec_sink(const char *data, size_t len, void *arg)
{
	(void)arg;
	write_all(stdout, data, len);
}

/* Sends the CLI's whole stdin (at most FILE_MAX) to a fresh file under
 * /tmp in the sandbox, mode 0600, and writes its name into name (cap). */
static int upload_stdin(struct api *a, const char *id, char *name, size_t cap)
{
	json_object *in = NULL, *out = NULL;
	unsigned char rnd[8];
	struct buf data;
	char *b64 = NULL;
	size_t n;
	int rc = -1;

	buf_init(&data, FILE_MAX);
	if (read_local("-", FILE_MAX, &data) < 0) {
		if (errno == EFBIG)
			fprintf(stderr, "sandpit exec: stdin exceeds the %d byte limit\n",
				FILE_MAX);
		else
			fprintf(stderr, "sandpit exec: stdin: %s\n", strerror(errno));
		goto out;
	}
	randombytes_buf(rnd, sizeof(rnd));
	snprintf(name, cap, "/tmp/.sandpit-stdin-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
		 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	n = sodium_base64_ENCODED_LEN(data.len, sodium_base64_VARIANT_ORIGINAL);
	b64 = malloc(n);
	if (!b64) {
		fprintf(stderr, "sandpit exec: out of memory\n");
		goto out;
	}
	sodium_bin2base64(b64, n, (const unsigned char *)(data.data ? data.data : ""), data.len,
			  sodium_base64_VARIANT_ORIGINAL);
	in = id_input(id);
	json_object_object_add(in, "path", json_object_new_string(name));
	json_object_object_add(in, "encoding", json_object_new_string("base64"));
	json_object_object_add(in, "content", json_object_new_string_len(b64, (int)(n - 1)));
	json_object_object_add(in, "mode", json_object_new_int64(0600));
	if (api_call(a, "POST", "sandbox.writeFile", in, &out) < 0) {
		fprintf(stderr, "sandpit exec: sending stdin: %s\n", api_error(a));
		goto out;
	}
	rc = 0;
out:
	free(b64);
	buf_free(&data);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

static int cmd_exec(struct api *a, int argc, char **argv, int json)
{
	json_object *in = json_object_new_object(), *env = NULL, *out = NULL, *v;
	const char *id = NULL, *val;
	struct buf cmd;
	long long ms;
	int i, rc = 2, with_stdin = 0, streamed = 0;
	char stdin_file[64];

	buf_init(&cmd, 65536);
	for (i = 1; i < argc && !id; i++) {
		if (opt_value(argc, argv, &i, "--cwd", &val) ||
		    opt_value(argc, argv, &i, "-w", &val)) {
			if (!val)
				goto missing;
			json_object_object_add(in, "cwd", json_object_new_string(val));
		} else if (opt_value(argc, argv, &i, "--timeout", &val)) {
			if (parse_duration(val, &ms) < 0) {
				rc = usage_error("exec",
						 "--timeout needs a duration: 60000, 90s, 10m",
						 NULL);
				goto out;
			}
			json_object_object_add(in, "timeoutMs", json_object_new_int64(ms));
		} else if (opt_value(argc, argv, &i, "--env", &val) ||
			   opt_value(argc, argv, &i, "-e", &val)) {
			const char *eq = val ? strchr(val, '=') : NULL;
			char key[256];
			if (!eq || eq == val || (size_t)(eq - val) >= sizeof(key)) {
				rc = usage_error("exec", "--env needs KEY=VALUE", NULL);
				goto out;
			}
			snprintf(key, sizeof(key), "%.*s", (int)(eq - val), val);
			if (!env)
				env = json_object_new_object();
			json_object_object_add(env, key, json_object_new_string(eq + 1));
		} else if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--stdin") == 0 || strcmp(argv[i], "-i") == 0) {
			with_stdin = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			rc = commands_help("exec", stdout);
			goto out;
		} else if (argv[i][0] == '-') {
			rc = usage_error("exec", "unexpected '%s'", argv[i]);
			goto out;
		} else {
			id = argv[i];
		}
	}
	if (!id) {
		rc = usage_error("exec", "usage: sandpit exec [OPTIONS] ID -- COMMAND [ARG...]%s",
				 "");
		goto out;
	}
	if (!valid_id(id)) {
		rc = usage_error("exec", "'%s' is not a sandbox ID", id);
		goto out;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		rc = usage_error("exec", "no command given: sandpit exec ID -- COMMAND [ARG...]%s",
				 "");
		goto out;
	}
	/* -i: stdin goes first, to a file the command then reads as its stdin
	 * (opened, then removed, before the command runs) */
	if (with_stdin) {
		if (upload_stdin(a, id, stdin_file, sizeof(stdin_file)) < 0) {
			rc = 1;
			goto out;
		}
		if (buf_printf(&cmd, "exec 0<%s; rm -f %s; ", stdin_file, stdin_file) < 0)
			goto too_long;
	}
	/* One word is a shell command line as it is; several are an argv. */
	if (i == argc - 1) {
		if (buf_puts(&cmd, argv[i]) < 0)
			goto too_long;
	} else {
		for (int k = i; k < argc; k++)
			if ((k > i && buf_puts(&cmd, " ") < 0) || sh_quote(&cmd, argv[k]) < 0)
				goto too_long;
	}
	json_object_object_add(in, "sandboxId", json_object_new_string(id));
	json_object_object_add(in, "cmd", json_object_new_string_len(cmd.data, (int)cmd.len));
	if (env) {
		json_object_object_add(in, "env", env);
		env = NULL;
	}
	/* stdout is printed as it arrives; stderr comes with the end */
	if (api_call_stream(a, "POST", "sandbox.exec", in, json ? NULL : exec_sink, NULL, &streamed,
			    &out) < 0) {
		rc = api_fail(a);
		goto out;
	}
	if (json) {
		print_json(out);
	} else {
		if (!streamed && json_object_object_get_ex(out, "stdout", &v))
			write_all(stdout, json_object_get_string(v),
				  (size_t)json_object_get_string_len(v));
		if (json_object_object_get_ex(out, "stderr", &v))
			write_all(stderr, json_object_get_string(v),
				  (size_t)json_object_get_string_len(v));
		if (json_object_object_get_ex(out, "timedOut", &v) && json_object_get_boolean(v))
			fprintf(stderr, "sandpit: the command timed out and was killed\n");
		if (json_object_object_get_ex(out, "truncated", &v) && json_object_get_boolean(v))
			fprintf(stderr, "sandpit: the output was cut at 1 MiB per stream\n");
	}
	rc = json_object_object_get_ex(out, "exitCode", &v) ? json_object_get_int(v) & 0xff : 1;
	goto out;
too_long:
	rc = usage_error("exec", "the command is over %s bytes", "65536");
	goto out;
missing:
	rc = usage_error("exec", "%s needs a value", argv[argc - 1]);
out:
	buf_free(&cmd);
	json_object_put(env);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

/* --- cp ----------------------------------------------------------------------- */

/* "ID:/path" → id (cap bytes) and *path; 0 when s is a local path. */
static int remote_spec(const char *s, char *id, size_t cap, const char **path)
{
	const char *colon = strchr(s, ':');
	size_t n;

	if (!colon || colon[1] != '/')
		return 0;
	n = (size_t)(colon - s);
	if (n == 0 || n >= cap)
		return 0;
	memcpy(id, s, n);
	id[n] = '\0';
	if (!valid_id(id))
		return 0;
	*path = colon + 1;
	return 1;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int upload(struct api *a, const char *local, const char *id, const char *rpath,
		  long long mode, int json)
{
	struct buf data, target;
	json_object *in = NULL, *out = NULL;
	struct stat st;
	char *b64 = NULL;
	size_t n;
	int rc = 1;

	buf_init(&data, FILE_MAX);
	buf_init(&target, 8192);
	if (strcmp(local, "-") != 0 && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "sandpit cp: %s is a directory (only files are copied)\n", local);
		goto out;
	}
	if (read_local(local, FILE_MAX, &data) < 0) {
		if (errno == EFBIG)
			fprintf(stderr, "sandpit cp: %s: File exceeds the %d byte limit\n", local,
				FILE_MAX);
		else
			fprintf(stderr, "sandpit cp: %s: %s\n", local, strerror(errno));
		goto out;
	}
	if (mode < 0)
		mode = strcmp(local, "-") != 0 && stat(local, &st) == 0 ? (st.st_mode & 0777)
									: 0644;
	/* "ID:/dir/" puts the file inside dir under its own name */
	if (buf_puts(&target, rpath) < 0 ||
	    (rpath[strlen(rpath) - 1] == '/' &&
	     buf_puts(&target, strcmp(local, "-") ? base_name(local) : "stdin") < 0)) {
		fprintf(stderr, "sandpit cp: the path is too long\n");
		goto out;
	}
	n = sodium_base64_ENCODED_LEN(data.len, sodium_base64_VARIANT_ORIGINAL);
	b64 = malloc(n);
	if (!b64) {
		fprintf(stderr, "sandpit cp: out of memory\n");
		goto out;
	}
	sodium_bin2base64(b64, n, (const unsigned char *)(data.data ? data.data : ""), data.len,
			  sodium_base64_VARIANT_ORIGINAL);
	in = id_input(id);
	json_object_object_add(in, "path", json_object_new_string(target.data));
	json_object_object_add(in, "encoding", json_object_new_string("base64"));
	json_object_object_add(in, "content", json_object_new_string_len(b64, (int)(n - 1)));
	json_object_object_add(in, "mode", json_object_new_int64(mode));
	if (api_call(a, "POST", "sandbox.writeFile", in, &out) < 0) {
		rc = api_fail(a);
		goto out;
	}
	if (json)
		print_json(out);
	rc = 0;
out:
	free(b64);
	buf_free(&data);
	buf_free(&target);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

static int download(struct api *a, const char *id, const char *rpath, const char *local, int json)
{
	json_object *in = id_input(id), *out = NULL, *c;
	unsigned char *bin = NULL;
	struct buf target;
	struct stat st;
	size_t len, got = 0;
	FILE *f = NULL;
	int rc = 1;

	buf_init(&target, 8192);
	json_object_object_add(in, "path", json_object_new_string(rpath));
	json_object_object_add(in, "encoding", json_object_new_string("base64"));
	if (api_call(a, "GET", "sandbox.readFile", in, &out) < 0) {
		rc = api_fail(a);
		goto out;
	}
	if (!json_object_object_get_ex(out, "content", &c)) {
		fprintf(stderr, "sandpit cp: the answer has no content\n");
		goto out;
	}
	len = (size_t)json_object_get_string_len(c);
	bin = malloc(len / 4 * 3 + 4);
	if (!bin || sodium_base642bin(bin, len / 4 * 3 + 4, json_object_get_string(c), len, " \r\n",
				      &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
		fprintf(stderr, "sandpit cp: the answer's content is not base64\n");
		goto out;
	}
	if (buf_puts(&target, local) < 0 ||
	    (strcmp(local, "-") != 0 && stat(local, &st) == 0 && S_ISDIR(st.st_mode) &&
	     buf_printf(&target, "/%s", base_name(rpath)) < 0)) {
		fprintf(stderr, "sandpit cp: the path is too long\n");
		goto out;
	}
	f = strcmp(local, "-") == 0 ? stdout : fopen(target.data, "wb");
	if (!f || (got && fwrite(bin, 1, got, f) != got) || fflush(f) != 0) {
		fprintf(stderr, "sandpit cp: %s: %s\n", target.data, strerror(errno));
		goto out;
	}
	if (json && f != stdout) {
		json_object *r = json_object_new_object();
		json_object_object_add(r, "path", json_object_new_string(rpath));
		json_object_object_add(r, "size", json_object_new_int64((int64_t)got));
		json_object_object_add(r, "local", json_object_new_string(target.data));
		print_json(r);
		json_object_put(r);
	}
	rc = 0;
out:
	if (f && f != stdout && fclose(f) != 0 && rc == 0) {
		fprintf(stderr, "sandpit cp: %s: %s\n", target.data, strerror(errno));
		rc = 1;
	}
	free(bin);
	buf_free(&target);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

static int cmd_cp(struct api *a, int argc, char **argv, int json)
{
	const char *args[2], *sp, *dp, *val;
	char sid[80], did[80];
	long long mode = -1;
	int n = 0, src_remote, dst_remote;

	for (int i = 1; i < argc; i++) {
		if (opt_value(argc, argv, &i, "--mode", &val)) {
			char *end;
			if (!val || !*val)
				return usage_error("cp", "--mode needs an octal mode, e.g. 755",
						   NULL);
			errno = 0;
			mode = strtoll(val, &end, 8);
			if (errno || *end || mode < 0 || mode > 07777)
				return usage_error("cp", "--mode needs an octal mode, e.g. 755",
						   NULL);
		} else if (n < 2 && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
			args[n++] = argv[i];
		} else {
			return usage_error("cp", "unexpected '%s'", argv[i]);
		}
	}
	if (n != 2)
		return usage_error(
			"cp", "usage: sandpit cp LOCAL ID:/PATH  or  sandpit cp ID:/PATH LOCAL%s",
			"");
	src_remote = remote_spec(args[0], sid, sizeof(sid), &sp);
	dst_remote = remote_spec(args[1], did, sizeof(did), &dp);
	if (src_remote == dst_remote)
		return usage_error("cp", "one side must be ID:/PATH and the other a local path%s",
				   "");
	if (dst_remote)
		return upload(a, args[0], did, dp, mode, json);
	return download(a, sid, sp, args[1], json);
}

/* --- ls ------------------------------------------------------------------------ */

static int cmd_ls(struct api *a, int argc, char **argv, int json)
{
	json_object *in, *out, *entries;
	int rc;

	if (argc < 2 || argc > 3)
		return usage_error("ls", "usage: sandpit ls ID [PATH]%s", "");
	if (!valid_id(argv[1]))
		return usage_error("ls", "'%s' is not a sandbox ID", argv[1]);
	in = id_input(argv[1]);
	if (argc == 3)
		json_object_object_add(in, "path", json_object_new_string(argv[2]));
	rc = api_call(a, "GET", "sandbox.listFiles", in, &out);
	json_object_put(in);
	if (rc < 0)
		return api_fail(a);
	if (json) {
		print_json(out);
	} else if (json_object_object_get_ex(out, "entries", &entries)) {
		for (size_t i = 0; i < json_object_array_length(entries); i++) {
			json_object *e = json_object_array_get_idx(entries, i);
			const char *type = or_dash(jstr(e, "type")), *size = jstr(e, "size");
			int dir = strcmp(type, "directory") == 0;
			if (size)
				printf("%-9s %10s %4s %-24s %s%s\n", type, size,
				       or_dash(jstr(e, "mode")), or_dash(jstr(e, "modifiedAt")),
				       or_dash(jstr(e, "name")), dir ? "/" : "");
			else
				printf("%-9s %s%s\n", type, or_dash(jstr(e, "name")),
				       dir ? "/" : "");
		}
	}
	json_object_put(out);
	return 0;
}

/* --- the table ------------------------------------------------------------------ */

static const struct command commands[] = {
	{ "create", cmd_create, "create (--template NAME | --image IMAGE) [OPTIONS]",
	  "Creates a sandbox and prints its id (--json: the whole record).\n"
	  "\n"
	  "  -t, --template NAME     a built-in template (see 'sandpit templates')\n"
	  "      --image IMAGE       a custom image with sh, sleep and date\n"
	  "      --name NAME         a name for people (1..64 characters)\n"
	  "      --cpu CPUS          0.1..64 (default 1)\n"
	  "      --memory MIB        64..262144 (default 512; no swap)\n"
	  "      --pids N            process limit, 16..65536 (default 256)\n"
	  "      --timeout DURATION  inactivity timeout (default 5m; 10s..24h)\n"
	  "      --max-lifetime DURATION\n"
	  "                          hard lifetime (default and maximum 24h)\n"
	  "      --network MODE      isolated (default, no egress) or internet\n"
	  "      --runtime RUNTIME   runc or gvisor (default: the server's default_runtime)\n"
	  "  -e, --env KEY=VALUE     an environment variable (repeatable)\n"
	  "      --env-file FILE     KEY=value lines (a .env file); stored encrypted\n"
	  "      --workdir DIR       working directory (default /home/user)\n"
	  "      --server ID         the server to run on (default: the local one)\n"
	  "\n"
	  "DURATION is milliseconds, or a number with ms, s, m or h: 90s, 15m, 2h.\n"
	  "\n"
	  "  ID=$(sandpit create --template python --name demo --timeout 15m)\n" },
	{ "list", cmd_list, "list",
	  "Lists the organization's sandboxes (killed ones too, for a while).\n" },
	{ "show", cmd_show, "show ID", "Shows one sandbox's record.\n" },
	{ "exec", cmd_exec, "exec [OPTIONS] ID -- COMMAND [ARG...]",
	  "Runs a command in the sandbox and waits for it. Its stdout and stderr are\n"
	  "printed as they are, on stdout and stderr, and sandpit exits with its exit\n"
	  "code (124 when it timed out). Several words are quoted as an argv; a single\n"
	  "word is a shell command line as it is:\n"
	  "\n"
	  "  sandpit exec ID -- ls -la /home/user\n"
	  "  sandpit exec ID -- 'cd /tmp && ls | wc -l'\n"
	  "\n"
	  "  -w, --cwd DIR           working directory (default: the sandbox's workdir)\n"
	  "  -e, --env KEY=VALUE     an environment variable (repeatable)\n"
	  "  -i, --stdin             send this program's stdin (read to its end, at most\n"
	  "                          10 MiB) to the command as its stdin\n"
	  "      --timeout DURATION  kill the command after this (default 60s, max 10m)\n"
	  "\n"
	  "stdout is printed as the command writes it; stderr when it ends. A command\n"
	  "left running in the background with its output open (cmd &) holds the\n"
	  "answer until it exits or 2 s after the command: redirect it (cmd >log 2>&1 &).\n"
	  "\n"
	  "With --json the result object is printed instead (stdout, stderr,\n"
	  "exitCode, timedOut, truncated); the exit code is still the command's.\n" },
	{ "cp", cmd_cp, "cp [--mode OCTAL] LOCAL ID:/PATH | cp ID:/PATH LOCAL",
	  "Copies one file into or out of a sandbox, byte for byte (at most 10 MiB).\n"
	  "LOCAL may be '-' for stdin or stdout. A remote PATH ending in '/' and a\n"
	  "LOCAL directory keep the file's name. Uploads keep the local file's mode\n"
	  "unless --mode is given; the file belongs to the sandbox user.\n"
	  "\n"
	  "  sandpit cp ./data.bin ID:/home/user/data.bin\n"
	  "  sandpit cp ID:/home/user/out.png .\n" },
	{ "ls", cmd_ls, "ls ID [PATH]",
	  "Lists a directory (default: the sandbox's workdir), directories first.\n"
	  "Images whose find has no -printf (busybox) give names only.\n" },
	{ "timeout", cmd_timeout, "timeout ID DURATION",
	  "Sets the inactivity timeout, counted from now (10s..24h).\n" },
	{ "kill", cmd_kill, "kill ID...",
	  "Kills sandboxes; their records stay (status killed) for a while.\n" },
	{ "rm", cmd_rm, "rm ID...", "Kills sandboxes if needed and deletes their records.\n" },
	{ "templates", cmd_templates, "templates",
	  "Lists the built-in templates, their images and the version each image has.\n" },
	{ NULL, NULL, NULL, NULL },
};

const char commands_usage[] =
	"Sandbox commands (talk to the API at $SANDPIT_URL with $SANDPIT_KEY):\n"
	"  create (--template NAME | --image IMAGE) [OPTIONS]\n"
	"                              create a sandbox; prints its id\n"
	"  list                        the organization's sandboxes\n"
	"  show ID                     one sandbox's record\n"
	"  exec [OPTIONS] ID -- CMD... run a command; exits with its exit code\n"
	"  cp LOCAL ID:/PATH           upload a file (binary safe)\n"
	"  cp ID:/PATH LOCAL           download a file\n"
	"  ls ID [PATH]                list a directory\n"
	"  timeout ID DURATION         set the inactivity timeout (90s, 15m, 2h)\n"
	"  kill ID...                  kill sandboxes (records kept)\n"
	"  rm ID...                    kill and delete sandboxes\n"
	"  templates                   the built-in templates\n"
	"\n"
	"  --json                      print the API's JSON answer\n"
	"  SANDPIT_CA                  a CA file to trust for the server's certificate\n";

static const struct command *find(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int commands_is_command(const char *name)
{
	return find(name) != NULL;
}

int commands_help(const char *name, FILE *f)
{
	const struct command *c = find(name);

	if (!c)
		return -1;
	fprintf(f, "usage: sandpit %s\n\n%s", c->synopsis, c->help);
	return 0;
}

int commands_main(int argc, char **argv, int json)
{
	const struct command *c = find(argv[0]);
	struct api *a;
	char err[256];
	int rc, n = 1;

	if (!c)
		return 2;
	/* --json and --help anywhere before a "--"; exec reads its own, as
	 * everything after its ID is the command's */
	for (int i = 1; i < argc && c->fn != cmd_exec; i++) {
		if (strcmp(argv[i], "--") == 0) {
			for (; i < argc; i++)
				argv[n++] = argv[i];
			break;
		}
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return commands_help(c->name, stdout) == 0 ? 0 : 2;
		else
			argv[n++] = argv[i];
	}
	if (c->fn != cmd_exec)
		argc = n;
	a = api_open(err, sizeof(err));
	if (!a) {
		fprintf(stderr, "sandpit %s: %s\n", c->name, err);
		return 2;
	}
	rc = c->fn(a, argc, argv, json);
	api_close(a);
	return rc;
}

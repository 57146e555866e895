/*
 * sandpit against the raw Docker Engine API, measured in one run and
 * interleaved (issue #8). The sandpit side talks HTTPS to nginx with libcurl
 * over ONE kept-alive connection, like a real client; the raw side does the
 * same work with the docker/ client (the same libcurl, over the same
 * socket sandpitd uses). Prints markdown table rows: p50, p95, the p50
 * ratio, the target and whether it is met. bench/bench.sh starts the stack
 * and assembles the whole table.
 *
 *   bench latency            the latency rows
 *   bench warm               create → first exec from a warm pool
 *   bench gvisor RUNTIME     create → first exec and exec round trips under gVisor
 *   bench mem-up N P         creates N small alpine sandboxes (64 MiB of memory
 *                            and of disk) with P processes; prints their ids
 *   bench mem-down P         removes the sandboxes whose ids are on stdin
 *   bench one-id             creates one sandbox, prints its id (for wrk)
 *   bench create-v1          POST /v1/sandboxes beside sandbox.create, interleaved
 *   bench snapshots          createSnapshot of 100 MiB beside docker commit; restore →
 *                            first exec beside a cold create → first exec
 *   bench fastpath [warm]    /v1 exec `true` through the fast path beside raw docker
 *                            exec; with warm, a warm pool's create → first exec
 *   bench transfer           /v1 raw writeFile/readFile of 10 MiB, upload and
 *                            download of 200 MiB, beside the archive API
 *
 * Times are on the wire, on both sides alike: from the request's first
 * byte to the answer's last (the sum over a row's requests). What a client
 * does before and after, building or reading a body (JSON for sandpit, a
 * tar for the archive API), is not counted on either side.
 *
 * Environment: SANDPIT_URL, SANDPIT_KEY, SANDPIT_CA (DIR/env of
 * deploy/stack.sh); DOCKER_HOST (unix:///var/run/docker.sock);
 * BENCH_COLD (30), BENCH_EXEC (200), BENCH_BIG_EXEC (40), BENCH_SMALL_FILE
 * (100), BENCH_BIG_FILE (20), BENCH_GVISOR (10), BENCH_V1_CREATE (30),
 * BENCH_SNAPSHOT (5), BENCH_RESTORE (10), BENCH_TRANSFER (3, of 200 MiB each
 * way): sample counts. The snapshot rows are wall time (a capture runs
 * after its 202; polled every 20 ms).
 * Never leaves a container behind on a normal exit.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/util.h"
#include "docker/docker.h"

#define MIB (1024 * 1024)
#define BIG_EXEC_CMD "head -c 1048576 /dev/zero | tr '\\0' a"

static const char *sp_url, *sp_key, *sp_ca;

/* Time spent in requests (see the top). WIRE(call) counts one call. */
static int64_t wire_us, wire_t0;
static void wire_on(void)
{
	wire_t0 = mono_us();
}
static int wire_off(int rc)
{
	wire_us += mono_us() - wire_t0;
	return rc;
}
#define WIRE(call) (wire_on(), wire_off(call))
static const char *docker_host = "unix:///var/run/docker.sock";
static CURL *sp;    /* the one kept-alive HTTPS connection */
static int sp_soft; /* sp_call answers NULL instead of dying on a non-200 */
static struct docker_client *dk;

/* Server-Timing of the creates, summed per phase (ms). */
static struct {
	char name[16];
	double sum;
	int n;
} st_phase[8];

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench: %s: %s\n", what, msg);
	exit(1);
}

static long long env_n(const char *name, long long def)
{
	const char *v = getenv(name);
	long long n;

	if (!v || !*v)
		return def;
	if (parse_ll(v, 1, 100000, &n) < 0)
		die(name, "must be 1..100000");
	return n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ---- the sandpit side ---------------------------------------------------- */

static size_t on_sp_body(char *p, size_t sz, size_t n, void *arg)
{
	return buf_append(arg, p, sz * n) < 0 ? 0 : sz * n;
}

/* Adds "name;dur=12.3" entries of a Server-Timing header to st_phase. */
static size_t on_sp_header(char *p, size_t sz, size_t n, void *arg)
{
	size_t len = sz * n;
	char line[512], *s, *save = NULL;

	(void)arg;
	if (len < 14 || len >= sizeof(line) || strncasecmp(p, "server-timing:", 14) != 0)
		return len;
	memcpy(line, p + 14, len - 14);
	line[len - 14] = '\0';
	for (s = strtok_r(line, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		char name[16] = "";
		double dur = 0;
		const char *d = strstr(s, "dur=");
		while (*s == ' ')
			s++;
		size_t k = strcspn(s, ";, \r\n");
		if (!d || k == 0 || k >= sizeof(name))
			continue;
		memcpy(name, s, k);
		dur = strtod(d + 4, NULL);
		for (int i = 0; i < 8; i++) {
			if (!st_phase[i].name[0])
				snprintf(st_phase[i].name, sizeof(st_phase[i].name), "%s", name);
			if (strcmp(st_phase[i].name, name) == 0) {
				st_phase[i].sum += dur;
				st_phase[i].n++;
				break;
			}
		}
	}
	return len;
}

/* One API call on the kept-alive connection: GET with query q, or POST with
 * body (a JSON object, not consumed). Returns the parsed answer (new) and
 * dies on anything but 200: a benchmark of failures measures nothing. A
 * proc that starts with '/' is a path of its own (/v1/...; 201 is a
 * success there too). */
static json_object *sp_call(const char *method, const char *proc, const char *q, json_object *body,
			    int timing)
{
	static struct buf out;
	static struct curl_slist *hdrs;
	char url[1024];
	long status = 0;
	CURLcode rc;
	json_object *o;

	if (!hdrs) {
		char h[512];
		snprintf(h, sizeof(h), "x-api-key: %s", sp_key);
		hdrs = curl_slist_append(NULL, h);
		hdrs = curl_slist_append(hdrs, "content-type: application/json");
		hdrs = curl_slist_append(hdrs, "Expect:");
		buf_init(&out, 64 * MIB);
	}
	buf_reset(&out);
	snprintf(url, sizeof(url), "%s%s%s%s%s", sp_url, proc[0] == '/' ? "" : "/api/", proc,
		 q ? "?" : "", q ? q : "");
	curl_easy_setopt(sp, CURLOPT_URL, url);
	curl_easy_setopt(sp, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(sp, CURLOPT_WRITEFUNCTION, on_sp_body);
	curl_easy_setopt(sp, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(sp, CURLOPT_HEADERFUNCTION, timing ? on_sp_header : NULL);
	if (strcmp(method, "POST") == 0) {
		const char *s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
		curl_easy_setopt(sp, CURLOPT_POSTFIELDS, s);
		curl_easy_setopt(sp, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(s));
		rc = (CURLcode)WIRE((int)curl_easy_perform(sp));
	} else {
		curl_easy_setopt(sp, CURLOPT_HTTPGET, 1L);
		rc = (CURLcode)WIRE((int)curl_easy_perform(sp));
	}
	if (rc != CURLE_OK)
		die(proc, curl_easy_strerror(rc));
	curl_easy_getinfo(sp, CURLINFO_RESPONSE_CODE, &status);
	if ((status == 201 || status == 202) && proc[0] == '/')
		status = 200;
	if (status != 200 && sp_soft)
		return NULL;
	if (status != 200) {
		fprintf(stderr, "bench: %s: HTTP %ld: %.300s\n", proc, status,
			out.data ? out.data : "");
		exit(1);
	}
	o = json_tokener_parse(out.data ? out.data : "null");
	if (!o)
		die(proc, "answer is not JSON");
	return o;
}

static void sp_open(void)
{
	sp = curl_easy_init();
	if (!sp)
		die("curl", "init");
	curl_easy_setopt(sp, CURLOPT_CAINFO, sp_ca);
	curl_easy_setopt(sp, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(sp, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(sp, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(sp, CURLOPT_TIMEOUT, 700L);
}

/* sandbox.create; writes the id (new string in *id). */
static void sp_create(const char *extra_json, char **id, int timing)
{
	char body[512];
	json_object *b, *o, *v;

	snprintf(body, sizeof(body), "{\"template\":\"alpine\"%s%s}", extra_json ? "," : "",
		 extra_json ? extra_json : "");
	b = json_tokener_parse(body);
	o = sp_call("POST", "sandbox.create", NULL, b, timing);
	if (!json_object_object_get_ex(o, "sandboxId", &v))
		die("sandbox.create", "no sandboxId");
	*id = strdup(json_object_get_string(v));
	json_object_put(o);
	json_object_put(b);
}

static void sp_id_call(const char *proc, const char *id)
{
	json_object *b = json_object_new_object();
	json_object_object_add(b, "sandboxId", json_object_new_string(id));
	json_object_put(sp_call("POST", proc, NULL, b, 0));
	json_object_put(b);
}

/* sandbox.exec; checks exit 0 and the output length. */
static void sp_exec(const char *id, const char *cmd, size_t want_len)
{
	json_object *b = json_object_new_object(), *o, *v;

	json_object_object_add(b, "sandboxId", json_object_new_string(id));
	json_object_object_add(b, "cmd", json_object_new_string(cmd));
	o = sp_call("POST", "sandbox.exec", NULL, b, 0);
	if (!json_object_object_get_ex(o, "exitCode", &v) || json_object_get_int(v) != 0)
		die("sandbox.exec", json_object_to_json_string(o));
	if (!json_object_object_get_ex(o, "stdout", &v) ||
	    (size_t)json_object_get_string_len(v) != want_len)
		die("sandbox.exec", "unexpected stdout length");
	json_object_put(o);
	json_object_put(b);
}

static void sp_write(const char *id, const char *path, const char *data, size_t len)
{
	json_object *b = json_object_new_object();

	json_object_object_add(b, "sandboxId", json_object_new_string(id));
	json_object_object_add(b, "path", json_object_new_string(path));
	json_object_object_add(b, "content", json_object_new_string_len(data, (int)len));
	json_object_put(sp_call("POST", "sandbox.writeFile", NULL, b, 0));
	json_object_put(b);
}

static void sp_read(const char *id, const char *path, size_t want)
{
	char q[256];
	json_object *o, *v;

	snprintf(q, sizeof(q), "sandboxId=%s&path=%s", id, path);
	o = sp_call("GET", "sandbox.readFile", q, NULL, 0);
	if (!json_object_object_get_ex(o, "content", &v) ||
	    (size_t)json_object_get_string_len(v) != want)
		die("sandbox.readFile", "unexpected length");
	json_object_put(o);
}

/* ---- the raw side ---------------------------------------------------------- */

static void dk_check(int rc, const char *what, const struct sp_err *e)
{
	if (rc < 0)
		die(what, e->msg);
}

/* The ContainerConfig of a sandbox: the same security options sandpit
 * sets (sandbox/spec.c sandbox_container_spec), a plain sleep as the main
 * process. runtime NULL = the daemon's default. New object. */
static json_object *raw_body(const char *image, const char *runtime)
{
	char body[2048];

	snprintf(body, sizeof(body),
		 "{\"Image\":\"%s\",\"Entrypoint\":[],\"Cmd\":[\"sleep\",\"3600\"],"
		 "\"User\":\"1000:1000\",\"WorkingDir\":\"/home/user\",\"Hostname\":\"sandbox\","
		 "\"Env\":[\"HOME=/home/user\"],\"Labels\":{\"sandpit-bench\":\"true\"},"
		 "\"HostConfig\":{\"CapDrop\":[\"ALL\"],\"SecurityOpt\":[\"no-new-privileges\"],"
		 "\"Init\":true,\"NanoCpus\":1000000000,\"Memory\":536870912,"
		 "\"MemorySwap\":536870912,\"PidsLimit\":256,\"AutoRemove\":true,"
		 "\"Privileged\":false,\"CgroupnsMode\":\"private\",\"IpcMode\":\"private\","
		 "\"RestartPolicy\":{\"Name\":\"no\"},\"LogConfig\":{\"Type\":\"json-file\","
		 "\"Config\":{\"max-size\":\"10m\",\"max-file\":\"1\"}},"
		 "\"NetworkMode\":\"sandpit-isolated\"%s%s%s},"
		 "\"NetworkingConfig\":{\"EndpointsConfig\":{\"sandpit-isolated\":{}}}}",
		 image, runtime ? ",\"Runtime\":\"" : "", runtime ? runtime : "",
		 runtime ? "\"" : "");
	return json_tokener_parse(body);
}

static int count_out(void *arg, int stream, const char *data, size_t len)
{
	(void)stream;
	(void)data;
	*(size_t *)arg += len;
	return 0;
}

/* docker exec: create, start attached (output read to the end), inspect. */
static void raw_exec(const char *cid, const char *cmd, size_t want_len)
{
	json_object *b = json_object_new_object(), *c = json_object_new_array();
	char eid[65];
	struct sp_err e;
	size_t got = 0;
	int timed_out = 0, code = -1, running = 0;

	json_object_array_add(c, json_object_new_string("sh"));
	json_object_array_add(c, json_object_new_string("-c"));
	json_object_array_add(c, json_object_new_string(cmd));
	json_object_object_add(b, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(b, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(b, "Cmd", c);
	json_object_object_add(b, "User", json_object_new_string("1000:1000"));
	json_object_object_add(b, "WorkingDir", json_object_new_string("/home/user"));
	dk_check(WIRE(docker_exec_create(dk, cid, b, eid, &e)), "exec create", &e);
	dk_check(WIRE(docker_exec_start(dk, eid, 60000, count_out, NULL, &got, &timed_out, &e)),
		 "exec start", &e);
	dk_check(WIRE(docker_exec_inspect(dk, eid, &code, &running, &e)), "exec inspect", &e);
	if (code != 0 || got != want_len)
		die("raw exec", "bad exit code or output length");
	json_object_put(b);
}

static void raw_create(const char *image, const char *runtime, char cid[65])
{
	json_object *b = raw_body(image, runtime);
	struct sp_err e;

	if (!b)
		die("raw", "container body");
	dk_check(WIRE(docker_container_create(dk, NULL, b, cid, &e)), "container create", &e);
	dk_check(WIRE(docker_container_start(dk, cid, &e)), "container start", &e);
	json_object_put(b);
}

static void raw_remove(const char *cid)
{
	struct sp_err e;
	docker_container_remove(dk, cid, 1, &e); /* AutoRemove may have won: ignore */
}

static void raw_write(const char *cid, const char *name, const char *data, size_t len)
{
	struct docker_tar_entry ent = { name, 0, 0644, 1000, 1000, data, len, 0 };
	struct buf tar;
	struct sp_err e;

	buf_init(&tar, 16 * MIB);
	dk_check(docker_tar_build(&ent, 1, &tar, &e), "tar build", &e);
	dk_check(WIRE(docker_archive_put(dk, cid, "/home/user", tar.data, tar.len, &e)),
		 "archive put", &e);
	buf_free(&tar);
}

static void raw_read(const char *cid, const char *path, size_t want)
{
	struct buf tar, file;
	struct sp_err e;

	buf_init(&tar, 16 * MIB);
	buf_init(&file, 16 * MIB);
	dk_check(WIRE(docker_archive_get(dk, cid, path, &tar, &e)), "archive get", &e);
	dk_check(docker_tar_first_file(tar.data, tar.len, &file, &e), "tar read", &e);
	if (file.len != want)
		die("raw read", "unexpected length");
	buf_free(&tar);
	buf_free(&file);
}

/* ---- rows ------------------------------------------------------------------ */

struct samples {
	int64_t *v;
	int n;
};

static void samples_init(struct samples *s, int n)
{
	s->v = calloc((size_t)n, sizeof(*s->v));
	s->n = 0;
	if (!s->v)
		die("calloc", "out of memory");
}

static double pct(struct samples *s, int p)
{
	int k;

	qsort(s->v, (size_t)s->n, sizeof(*s->v), cmp_i64);
	k = (s->n * p + 99) / 100 - 1; /* nearest rank */
	if (k < 0)
		k = 0;
	return (double)s->v[k] / 1000.0;
}

enum target { T_NONE, T_RATIO, T_RATIO_OR_MS };

/* Prints one row; returns 1 when the target is met (or there is none). */
static int row(const char *what, struct samples *a, struct samples *b, enum target t,
	       double ratio_max, double ms_slack)
{
	double a50 = pct(a, 50), a95 = pct(a, 95), b50 = pct(b, 50), b95 = pct(b, 95);
	double r = a50 / b50;
	int met = 1;
	char tgt[64] = "—";

	if (t == T_RATIO) {
		met = r <= ratio_max;
		snprintf(tgt, sizeof(tgt), "≤ %.2f×", ratio_max);
	} else if (t == T_RATIO_OR_MS) {
		met = r <= ratio_max || a50 - b50 <= ms_slack;
		snprintf(tgt, sizeof(tgt), "≤ %.2f× or +%.0f ms", ratio_max, ms_slack);
	}
	printf("| %s (n=%d) | %.1f | %.1f | %.1f | %.1f | %.2f× (+%.1f ms) | %s | %s |\n", what,
	       a->n, a50, a95, b50, b95, r, a50 - b50, tgt,
	       t == T_NONE ? "—"
	       : met	   ? "✓"
			   : "✗");
	fflush(stdout);
	return met;
}

#define TIMED(s, stmt)                            \
	do {                                      \
		int64_t w0_ = wire_us;            \
		stmt;                             \
		(s)->v[(s)->n++] = wire_us - w0_; \
	} while (0)

static void cold_row(const char *label, int n, const char *sp_extra, const char *runtime,
		     const char *image, enum target t, int with_sp)
{
	struct samples a, b;

	samples_init(&a, n);
	samples_init(&b, n);
	for (int i = -1; i < n; i++) { /* i = -1: one warm-up each, not counted */
		char *id = NULL, cid[65];
		int64_t t0;
		for (int side = 0; side < 2; side++) {
			/* alternate which side goes first */
			if ((side ^ (i & 1)) == 0) {
				if (!with_sp)
					continue;
				t0 = wire_us;
				sp_create(sp_extra, &id, i >= 0 && !runtime);
				sp_exec(id, "true", 0);
				if (i >= 0)
					a.v[a.n++] = wire_us - t0;
			} else {
				t0 = wire_us;
				raw_create(image, runtime, cid);
				raw_exec(cid, "true", 0);
				if (i >= 0)
					b.v[b.n++] = wire_us - t0;
			}
		}
		if (id)
			sp_id_call("sandbox.remove", id);
		raw_remove(cid);
		free(id);
	}
	if (with_sp) {
		row(label, &a, &b, t, 1.10, 0);
	} else {
		double b50 = pct(&b, 50), b95 = pct(&b, 95);
		printf("| %s (n=%d) | n/a | n/a | %.1f | %.1f | n/a (sandpit has no gVisor "
		       "runtime option yet) | — | — |\n",
		       label, b.n, b50, b95);
	}
	free(a.v);
	free(b.v);
}

static void mode_latency(void)
{
	int n_cold = (int)env_n("BENCH_COLD", 30), n_exec = (int)env_n("BENCH_EXEC", 200),
	    n_big = (int)env_n("BENCH_BIG_EXEC", 40), n_small = (int)env_n("BENCH_SMALL_FILE", 100),
	    n_bigf = (int)env_n("BENCH_BIG_FILE", 20);
	struct samples a, b;
	char *id, cid[65], *small, *big;
	const char *image =
		getenv("BENCH_IMAGE") ? getenv("BENCH_IMAGE") : "sandpit-test/busybox:latest";

	cold_row("create → first exec `true`, cold", n_cold, NULL, NULL, image, T_RATIO, 1);
	printf("<!-- server-timing");
	for (int i = 0; i < 8 && st_phase[i].name[0]; i++)
		printf(" %s=%.1fms", st_phase[i].name, st_phase[i].sum / st_phase[i].n);
	printf(" -->\n");

	sp_create(NULL, &id, 0);
	raw_create(image, NULL, cid);
	sp_exec(id, "true", 0); /* warm-up */
	raw_exec(cid, "true", 0);

	samples_init(&a, n_exec);
	samples_init(&b, n_exec);
	for (int i = 0; i < n_exec; i++) {
		if (i & 1) {
			TIMED(&a, sp_exec(id, "true", 0));
			TIMED(&b, raw_exec(cid, "true", 0));
		} else {
			TIMED(&b, raw_exec(cid, "true", 0));
			TIMED(&a, sp_exec(id, "true", 0));
		}
	}
	row("exec `true` round trip", &a, &b, T_RATIO_OR_MS, 1.10, 3.0);

	samples_init(&a, n_big);
	samples_init(&b, n_big);
	for (int i = 0; i < n_big; i++) {
		TIMED(&a, sp_exec(id, BIG_EXEC_CMD, MIB));
		TIMED(&b, raw_exec(cid, BIG_EXEC_CMD, MIB));
	}
	row("exec printing 1 MiB", &a, &b, T_RATIO_OR_MS, 1.10, 3.0);

	small = malloc(1024);
	big = malloc(10 * MIB);
	if (!small || !big)
		die("malloc", "out of memory");
	for (size_t k = 0; k < 10 * MIB; k++)
		big[k] = (char)('a' + k % 26);
	memcpy(small, big, 1024);

	struct {
		const char *label;
		const char *data;
		size_t len;
		int n;
	} files[] = { { "1 KiB", small, 1024, n_small }, { "10 MiB", big, 10 * MIB, n_bigf } };
	for (int f = 0; f < 2; f++) {
		struct samples wa, wb, ra, rb;
		char label[64];
		samples_init(&wa, files[f].n);
		samples_init(&wb, files[f].n);
		samples_init(&ra, files[f].n);
		samples_init(&rb, files[f].n);
		sp_write(id, "/home/user/bench.txt", files[f].data, files[f].len); /* warm-up */
		raw_write(cid, "bench.txt", files[f].data, files[f].len);
		for (int i = 0; i < files[f].n; i++) {
			TIMED(&wa,
			      sp_write(id, "/home/user/bench.txt", files[f].data, files[f].len));
			TIMED(&wb, raw_write(cid, "bench.txt", files[f].data, files[f].len));
			TIMED(&rb, raw_read(cid, "/home/user/bench.txt", files[f].len));
			TIMED(&ra, sp_read(id, "/home/user/bench.txt", files[f].len));
		}
		snprintf(label, sizeof(label), "writeFile %s", files[f].label);
		row(label, &wa, &wb, T_RATIO, 1.15, 0);
		snprintf(label, sizeof(label), "readFile %s", files[f].label);
		row(label, &ra, &rb, T_RATIO, 1.15, 0);
		free(wa.v);
		free(wb.v);
		free(ra.v);
		free(rb.v);
	}
	sp_id_call("sandbox.remove", id);
	raw_remove(cid);
	free(id);
	free(small);
	free(big);
	free(a.v);
	free(b.v);
}

/* The gVisor row: raw runsc when dockerd has such a runtime; the sandpit
 * side when create accepts "runtime":"gvisor". */
static void mode_gvisor(const char *runtime)
{
	int n = (int)env_n("BENCH_GVISOR", 10);
	const char *image =
		getenv("BENCH_IMAGE") ? getenv("BENCH_IMAGE") : "sandpit-test/busybox:latest";
	char label[128];
	json_object *b, *o;
	int with_sp;

	/* does this sandpit take "runtime": "gvisor"? */
	b = json_tokener_parse("{\"template\":\"alpine\",\"runtime\":\"gvisor\"}");
	sp_soft = 1;
	o = sp_call("POST", "sandbox.create", NULL, b, 0);
	sp_soft = 0;
	with_sp = o != NULL;
	if (o) {
		json_object *v;
		if (json_object_object_get_ex(o, "sandboxId", &v))
			sp_id_call("sandbox.remove", json_object_get_string(v));
		json_object_put(o);
	}
	json_object_put(b);
	snprintf(label, sizeof(label), "gVisor (%s): create → first exec `true`", runtime);
	cold_row(label, n, "\"runtime\":\"gvisor\"", runtime, image, T_NONE, with_sp);
	if (with_sp) {
		/* exec round trips on one gVisor sandbox and one runsc container */
		struct samples sa, sb;
		char *id = NULL, cid[65];
		int m = n * 5;
		samples_init(&sa, m);
		samples_init(&sb, m);
		sp_create("\"runtime\":\"gvisor\"", &id, 0);
		raw_create(image, runtime, cid);
		sp_exec(id, "true", 0);
		raw_exec(cid, "true", 0);
		for (int i = 0; i < m; i++) {
			TIMED(&sa, sp_exec(id, "true", 0));
			TIMED(&sb, raw_exec(cid, "true", 0));
		}
		snprintf(label, sizeof(label), "gVisor (%s): exec `true` round trip", runtime);
		row(label, &sa, &sb, T_NONE, 0, 0);
		sp_id_call("sandbox.remove", id);
		raw_remove(cid);
		free(id);
		free(sa.v);
		free(sb.v);
	}
}

/* The warm-pool row: sandpit's create (template alpine, network internet:
 * the pool bench.sh configures) → first exec, beside the raw cold create →
 * first exec, with a pause between samples so the pool is refilled, as it
 * would be between an agent's sessions. Counts the creates that really came
 * from the pool (Server-Timing "pool"). */
static void mode_warm(void)
{
	int n = (int)env_n("BENCH_WARM", 20), pooled = 0;
	const char *image =
		getenv("BENCH_IMAGE") ? getenv("BENCH_IMAGE") : "sandpit-test/busybox:latest";
	struct samples a, b;
	double a50, b50;

	samples_init(&a, n);
	samples_init(&b, n);
	for (int i = -1; i < n; i++) {
		char *id = NULL, cid[65];
		int64_t t0;
		usleep(1500 * 1000); /* the pool refills between requests */
		t0 = wire_us;
		sp_create("\"networkMode\":\"internet\"", &id, 1);
		sp_exec(id, "true", 0);
		if (i >= 0)
			a.v[a.n++] = wire_us - t0;
		t0 = wire_us;
		raw_create(image, NULL, cid);
		raw_exec(cid, "true", 0);
		if (i >= 0)
			b.v[b.n++] = wire_us - t0;
		sp_id_call("sandbox.remove", id);
		raw_remove(cid);
		free(id);
	}
	for (int i = 0; i < 8; i++)
		if (strcmp(st_phase[i].name, "pool") == 0)
			pooled = st_phase[i].n;
	a50 = pct(&a, 50);
	b50 = pct(&b, 50);
	printf("| create → first exec `true`, warm pool (n=%d; %d of %d creates from the pool; raw = cold) | %.1f "
	       "| %.1f | %.1f | %.1f | %.2f× | p50 ≤ 100 ms and ≤ 0.35× cold raw | %s |\n",
	       a.n, pooled, n + 1, a50, pct(&a, 95), b50, pct(&b, 95), a50 / b50,
	       a50 <= 100.0 && a50 / b50 <= 0.35 ? "✓" : "✗");
	free(a.v);
	free(b.v);
}

/* POST /v1/sandboxes beside sandbox.create: the same cold create of
 * template alpine through the two faces, interleaved (which goes first
 * alternates), each timed on the wire from the request to its answer and
 * removed untimed. Target: the /v1 p50 within 5 % of the /api one. */
static void mode_create_v1(void)
{
	int n = (int)env_n("BENCH_V1_CREATE", 30);
	struct samples a, b;
	double a50, b50, r;
	json_object *v1b = json_tokener_parse("{\"image\":\"images/alpine\"}");

	samples_init(&a, n);
	samples_init(&b, n);
	for (int i = -1; i < n; i++) { /* i = -1: one warm-up each, not counted */
		char *id = NULL, *vid = NULL;
		int64_t t0;
		for (int side = 0; side < 2; side++) {
			if ((side ^ (i & 1)) == 0) {
				json_object *o, *v;
				t0 = wire_us;
				o = sp_call("POST", "/v1/sandboxes", NULL, v1b, 0);
				if (i >= 0)
					a.v[a.n++] = wire_us - t0;
				if (!json_object_object_get_ex(o, "uid", &v))
					die("POST /v1/sandboxes", "no uid");
				vid = strdup(json_object_get_string(v));
				json_object_put(o);
			} else {
				t0 = wire_us;
				sp_create(NULL, &id, 0);
				if (i >= 0)
					b.v[b.n++] = wire_us - t0;
			}
		}
		sp_id_call("sandbox.remove", id);
		sp_id_call("sandbox.remove", vid);
		free(id);
		free(vid);
	}
	a50 = pct(&a, 50);
	b50 = pct(&b, 50);
	r = a50 / b50;
	printf("| `POST /v1/sandboxes` (ms; raw = `sandbox.create`, both cold, interleaved; n=%d) | "
	       "%.1f | %.1f | %.1f | %.1f | %.0f %% | 95 to 105 %% | %s |\n",
	       a.n, a50, pct(&a, 95), b50, pct(&b, 95), r * 100,
	       r >= 0.95 && r <= 1.05 ? "✓" : "✗");
	json_object_put(v1b);
	free(a.v);
	free(b.v);
}

/* ---- /v1 snapshots: capture and restore ------------------------------------------ */

/* DELETE path with If-Match: etag on the kept-alive connection; the status. */
static long sp_delete(const char *path, const char *etag)
{
	static struct buf out;
	struct curl_slist *hdrs = NULL;
	char url[1024], h[512];
	long status = 0;

	if (!out.cap)
		buf_init(&out, MIB);
	buf_reset(&out);
	snprintf(h, sizeof(h), "x-api-key: %s", sp_key);
	hdrs = curl_slist_append(hdrs, h);
	snprintf(h, sizeof(h), "If-Match: %s", etag);
	hdrs = curl_slist_append(hdrs, h);
	snprintf(url, sizeof(url), "%s%s", sp_url, path);
	curl_easy_setopt(sp, CURLOPT_URL, url);
	curl_easy_setopt(sp, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(sp, CURLOPT_WRITEFUNCTION, on_sp_body);
	curl_easy_setopt(sp, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(sp, CURLOPT_HEADERFUNCTION, NULL);
	curl_easy_setopt(sp, CURLOPT_CUSTOMREQUEST, "DELETE");
	if (curl_easy_perform(sp) != CURLE_OK)
		die(path, "DELETE failed");
	curl_easy_getinfo(sp, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(sp, CURLOPT_CUSTOMREQUEST, NULL);
	curl_easy_setopt(sp, CURLOPT_HTTPGET, 1L);
	curl_slist_free_all(hdrs);
	return status;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

/* createSnapshot of sandbox id, then GETs until it is ready (20 ms apart);
 * the snapshot's id into snap (new). Wall time, in µs. */
static int64_t sp_snapshot(const char *id, char **snap)
{
	char path[256];
	json_object *b = json_tokener_parse("{\"displayName\":\"bench\"}"), *o;
	int64_t t0 = mono_us();

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/snapshots", id);
	o = sp_call("POST", path, NULL, b, 0);
	*snap = strdup(jstr(o, "uid"));
	json_object_put(o);
	json_object_put(b);
	snprintf(path, sizeof(path), "/v1/snapshots/%s", *snap);
	for (;;) {
		o = sp_call("GET", path, NULL, NULL, 0);
		if (strcmp(jstr(o, "status"), "ready") == 0) {
			json_object_put(o);
			return mono_us() - t0;
		}
		if (strcmp(jstr(o, "status"), "failed") == 0)
			die("snapshot", json_object_to_json_string(o));
		json_object_put(o);
		usleep(20000);
	}
}

static void sp_snapshot_delete(const char *snap)
{
	char path[256];
	json_object *o;

	snprintf(path, sizeof(path), "/v1/snapshots/%s", snap);
	for (int i = 0; i < 100; i++) {
		long st;
		o = sp_call("GET", path, NULL, NULL, 0);
		st = sp_delete(path, jstr(o, "etag"));
		json_object_put(o);
		if (st == 204)
			return;
		usleep(100000); /* a removed fork's container goes a moment after */
	}
	die("deleteSnapshot", "still refused after 10 s");
}

/* restoreSnapshot, then exec `true` in the fork; wall time; the fork's id
 * into fork (new). */
static int64_t sp_restore_exec(const char *snap, char **fork)
{
	char path[256];
	json_object *b = json_object_new_object(), *o;
	int64_t t0 = mono_us();

	snprintf(path, sizeof(path), "/v1/snapshots/%s/restore", snap);
	o = sp_call("POST", path, NULL, b, 0);
	*fork = strdup(jstr(o, "uid"));
	json_object_put(o);
	json_object_put(b);
	sp_exec(*fork, "true", 0);
	return mono_us() - t0;
}

/* POST /v1/sandboxes (cold), then exec `true`; wall time. */
static int64_t sp_v1_create_exec(char **id)
{
	json_object *b = json_tokener_parse("{\"image\":\"images/alpine\"}"), *o;
	int64_t t0 = mono_us();

	o = sp_call("POST", "/v1/sandboxes", NULL, b, 0);
	*id = strdup(jstr(o, "uid"));
	json_object_put(o);
	json_object_put(b);
	sp_exec(*id, "true", 0);
	return mono_us() - t0;
}

static void print_pair(const char *what, struct samples *a, struct samples *b, const char *tgt)
{
	double a50 = pct(a, 50), b50 = pct(b, 50);

	printf("| %s (n=%d) | %.1f | %.1f | %.1f | %.1f | %.2f× (+%.1f ms) | %s | — |\n", what,
	       a->n, a50, pct(a, 95), b50, pct(b, 95), a50 / b50, a50 - b50, tgt);
	fflush(stdout);
}

static void mode_snapshots(void)
{
	int n = (int)env_n("BENCH_SNAPSHOT", 5), nr = (int)env_n("BENCH_RESTORE", 10);
	const char *image =
		getenv("BENCH_IMAGE") ? getenv("BENCH_IMAGE") : "sandpit-test/busybox:latest";
	const char *fill = "head -c 104857600 /dev/urandom > big && echo -n";
	struct samples a, b;
	char *id = NULL, cid[65], *snap, *fork, img[80], tag[32];
	struct sp_err e;

	/* snapshot of 100 MiB written (the workdir, its own disk) beside
	 * docker commit of a container with 100 MiB in its layer (paused by
	 * Docker as `docker commit` does by default) */
	samples_init(&a, n);
	samples_init(&b, n);
	sp_create(NULL, &id, 0);
	sp_exec(id, fill, 0);
	raw_create(image, NULL, cid);
	raw_exec(cid, "head -c 104857600 /dev/urandom > /tmp/big && echo -n", 0);
	for (int i = -1; i < n; i++) {
		int64_t t0;
		a.v[a.n] = sp_snapshot(id, &snap);
		if (i >= 0)
			a.n++;
		sp_snapshot_delete(snap);
		free(snap);
		snprintf(tag, sizeof(tag), "b%d", i + 1);
		t0 = mono_us();
		dk_check(docker_container_pause(dk, cid, &e), "pause", &e);
		dk_check(docker_image_commit(dk, cid, "sandpit-bench-snapshot", tag, NULL, img, &e),
			 "commit", &e);
		dk_check(docker_container_unpause(dk, cid, &e), "unpause", &e);
		if (i >= 0)
			b.v[b.n++] = mono_us() - t0;
		docker_image_remove(dk, img, &e);
	}
	print_pair("`createSnapshot` of 100 MiB written → ready (ms; raw = `docker commit`, "
		   "paused, 100 MiB in the layer)",
		   &a, &b, "—");
	raw_remove(cid);
	free(a.v);
	free(b.v);

	/* restore → first exec beside a cold create → first exec (/v1, alpine),
	 * interleaved; the snapshot: of that 100 MiB sandbox */
	samples_init(&a, nr);
	samples_init(&b, nr);
	sp_snapshot(id, &snap);
	for (int i = -1; i < nr; i++) {
		char *cold = NULL;
		for (int side = 0; side < 2; side++) {
			if ((side ^ (i & 1)) == 0) {
				a.v[a.n] = sp_restore_exec(snap, &fork);
				if (i >= 0)
					a.n++;
				sp_id_call("sandbox.remove", fork);
				free(fork);
			} else {
				b.v[b.n] = sp_v1_create_exec(&cold);
				if (i >= 0)
					b.n++;
				sp_id_call("sandbox.remove", cold);
				free(cold);
			}
		}
	}
	print_pair("`restoreSnapshot` (100 MiB) → first exec `true` (ms; raw = cold `POST "
		   "/v1/sandboxes` → first exec, interleaved)",
		   &a, &b, "—");
	sp_id_call("sandbox.remove", id);
	free(id);
	sp_snapshot_delete(snap);
	free(snap);
	free(a.v);
	free(b.v);
}

/* ---- memory: many sandboxes at once ------------------------------------------- */

static void mode_mem_up(int n, int procs)
{
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork", "failed");
		if (pid == 0) {
			sp_open();
			for (int i = p; i < n; i += procs) {
				char *id;
				/* a small disk too: 200 of the default 1 GiB
				 * promise more than the host's disk holds, and
				 * the disk floor refuses them (disk_overcommit_pct) */
				sp_create("\"memoryMb\":64,\"cpu\":0.1,\"diskMb\":64", &id, 0);
				printf("%s\n", id);
				fflush(stdout);
				free(id);
			}
			_exit(0);
		}
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	exit(bad);
}

static void mode_mem_down(int procs)
{
	char line[128];
	char **ids = NULL;
	int n = 0, cap = 0;

	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			ids = realloc(ids, (size_t)cap * sizeof(*ids));
			if (!ids)
				die("realloc", "out of memory");
		}
		ids[n++] = strdup(line);
	}
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork", "failed");
		if (pid == 0) {
			sp_open();
			for (int i = p; i < n; i += procs)
				sp_id_call("sandbox.remove", ids[i]);
			_exit(0);
		}
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	exit(bad);
}

/* ---- /v1 raw files and streamed transfers ---------------------------------- */

struct ep_sink {
	struct buf *keep; /* NULL: count only */
	size_t got;
};

static size_t on_ep_body(char *p, size_t sz, size_t n, void *arg)
{
	struct ep_sink *k = arg;

	k->got += sz * n;
	if (k->keep && buf_append(k->keep, p, sz * n) < 0)
		return 0;
	return sz * n;
}

/* One request at the sandbox endpoint (path under ep), with the token, on
 * the kept-alive connection: body (len bytes, NULL for a GET) of ctype.
 * Dies unless 200; the answer's byte count (kept in keep when not NULL). */
static size_t ep_call(const char *ep, const char *token, const char *method, const char *path,
		      const char *ctype, const char *body, size_t len, struct buf *keep)
{
	char url[2048], auth[700], ct[200];
	struct curl_slist *h = NULL;
	struct ep_sink k = { keep, 0 };
	long status = 0;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s%s", ep, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/octet-stream");
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, ct);
	h = curl_slist_append(h, "Expect:");
	if (keep)
		buf_reset(keep);
	curl_easy_setopt(sp, CURLOPT_URL, url);
	curl_easy_setopt(sp, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(sp, CURLOPT_WRITEFUNCTION, on_ep_body);
	curl_easy_setopt(sp, CURLOPT_WRITEDATA, &k);
	curl_easy_setopt(sp, CURLOPT_HEADERFUNCTION, NULL);
	if (body) {
		curl_easy_setopt(sp, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(sp, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(sp, CURLOPT_CUSTOMREQUEST, method);
	} else {
		curl_easy_setopt(sp, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(sp, CURLOPT_CUSTOMREQUEST, NULL);
	}
	rc = (CURLcode)WIRE((int)curl_easy_perform(sp));
	curl_easy_setopt(sp, CURLOPT_CUSTOMREQUEST, NULL);
	curl_slist_free_all(h);
	if (rc != CURLE_OK)
		die(path, curl_easy_strerror(rc));
	curl_easy_getinfo(sp, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		fprintf(stderr, "bench: %s: HTTP %ld: %.300s\n", path, status,
			keep && keep->data ? keep->data : "");
		exit(1);
	}
	return k.got;
}

/* A token for the v1 sandbox uid's endpoint with perms (a JSON object's
 * text; NULL: the file permissions) (new string). */
static char *ep_token_perms(const char *uid, const char *perms)
{
	char path[256];
	json_object *
		b = json_tokener_parse(
		       perms ? perms
			     : "{\"permissions\":[\"sandboxesFilesRead\",\"sandboxesFilesWrite\"]}"),
	       *o, *v;
	char *t;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/endpoint-credentials", uid);
	o = sp_call("POST", path, NULL, b, 0);
	if (!json_object_object_get_ex(o, "token", &v))
		die("endpoint-credentials", "no token");
	t = strdup(json_object_get_string(v));
	json_object_put(o);
	json_object_put(b);
	return t;
}

static char *ep_token(const char *uid)
{
	return ep_token_perms(uid, NULL);
}

static void raw_put_big(const char *cid, const char *name, const char *data, size_t len)
{
	struct docker_tar_entry ent = { name, 0, 0644, 1000, 1000, data, len, 0 };
	struct buf tar;
	struct sp_err e;

	buf_init(&tar, len + MIB);
	dk_check(docker_tar_build(&ent, 1, &tar, &e), "tar build", &e);
	dk_check(WIRE(docker_archive_put(dk, cid, "/home/user", tar.data, tar.len, &e)),
		 "archive put", &e);
	buf_free(&tar);
}

static void raw_get_big(const char *cid, const char *path, size_t want)
{
	struct buf tar;
	struct sp_err e;

	buf_init(&tar, want + MIB);
	dk_check(WIRE(docker_archive_get(dk, cid, path, &tar, &e)), "archive get", &e);
	if (tar.len < want)
		die("raw read", "short");
	buf_free(&tar);
}

/* docker exec `head -c len > path` with the len bytes at data on its
 * stdin: the floor under any exec-based write. */
static void raw_exec_write(const char *cid, const char *path, const char *data, size_t len)
{
	json_object *b = json_object_new_object(), *c = json_object_new_array();
	char eid[65], cmd[512];
	struct sp_err e;
	size_t got = 0, sent = 0;
	int timed_out = 0, code = -1, running = 0;

	snprintf(cmd, sizeof(cmd), "head -c %zu > %s", len, path);
	json_object_array_add(c, json_object_new_string("sh"));
	json_object_array_add(c, json_object_new_string("-c"));
	json_object_array_add(c, json_object_new_string(cmd));
	json_object_object_add(b, "AttachStdin", json_object_new_boolean(1));
	json_object_object_add(b, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(b, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(b, "Cmd", c);
	json_object_object_add(b, "User", json_object_new_string("1000:1000"));
	json_object_object_add(b, "WorkingDir", json_object_new_string("/home/user"));
	dk_check(WIRE(docker_exec_create(dk, cid, b, eid, &e)), "exec create", &e);
	dk_check(WIRE(docker_exec_start_input(dk, eid, 60000, data, len, count_out, NULL, &got,
					      &timed_out, &sent, &e)),
		 "exec start", &e);
	dk_check(WIRE(docker_exec_inspect(dk, eid, &code, &running, &e)), "exec inspect", &e);
	if (code != 0 || sent != len)
		die("raw exec write", "bad exit code or input length");
	json_object_put(b);
}

/* A transfer row: p50 time and MB/s of both sides. */
static void mbps_row(const char *what, struct samples *a, struct samples *b, size_t bytes)
{
	double a50 = pct(a, 50), b50 = pct(b, 50);

	printf("| %s (n=%d; MB/s %.0f beside %.0f) | %.1f | %.1f | %.1f | %.1f | %.2f× (+%.1f ms) "
	       "| MB/s beside the archive API | — |\n",
	       what, a->n, (double)bytes / 1e6 / (a50 / 1000.0),
	       (double)bytes / 1e6 / (b50 / 1000.0), a50, pct(a, 95), b50, pct(b, 95), a50 / b50,
	       a50 - b50);
	fflush(stdout);
}

/* /v1 writeFile and readFile of 10 MiB as raw bodies, then upload and
 * download of one 200 MiB file, each beside the archive API's put and get
 * of the same bytes in a raw container, interleaved. */
static void mode_transfer(void)
{
	int n_big = (int)env_n("BENCH_BIG_FILE", 20), n_xfer = (int)env_n("BENCH_TRANSFER", 3);
	const char *image =
		getenv("BENCH_IMAGE") ? getenv("BENCH_IMAGE") : "sandpit-test/busybox:latest";
	size_t ten = 10 * MIB, huge = 200 * (size_t)MIB;
	static const char bnd[] = "benchBoundary4711";
	char body[512], ep[1024], cid[65], *uid, *tok, head[512], q[512];
	struct samples wa, wb, ra, rb, xw, xr;
	struct buf keep, up;
	json_object *o, *v;
	char *data = malloc(huge);
	int hl;

	if (!data)
		die("malloc", "out of memory");
	for (size_t k = 0; k < huge; k++)
		data[k] = (char)(k * 2654435761u >> 13);
	snprintf(body, sizeof(body), "{\"imageRef\":\"%s\"}", image);
	v = json_tokener_parse(body);
	o = sp_call("POST", "/v1/sandboxes", NULL, v, 0);
	json_object_put(v);
	if (!json_object_object_get_ex(o, "uid", &v))
		die("/v1/sandboxes", "no uid");
	uid = strdup(json_object_get_string(v));
	json_object_put(o);
	snprintf(ep, sizeof(ep), "%s/endpoints/%s", sp_url, uid);
	raw_create(image, NULL, cid);
	buf_init(&keep, 16 * MIB);

	tok = ep_token(uid);
	ep_call(ep, tok, "PUT", "/v1/files/content?path=/home/user/ten", NULL, data, ten, &keep);
	raw_put_big(cid, "ten", data, ten);
	samples_init(&wa, n_big);
	samples_init(&wb, n_big);
	samples_init(&ra, n_big);
	samples_init(&rb, n_big);
	samples_init(&xw, n_big);
	samples_init(&xr, n_big);
	for (int i = 0; i < n_big; i++) {
		TIMED(&wa, ep_call(ep, tok, "PUT", "/v1/files/content?path=/home/user/ten", NULL,
				   data, ten, &keep));
		TIMED(&wb, raw_put_big(cid, "ten", data, ten));
		TIMED(&xw, raw_exec_write(cid, "/home/user/ten2", data, ten));
		TIMED(&xr, raw_exec(cid, "cat /home/user/ten2", ten));
		TIMED(&rb, raw_get_big(cid, "/home/user/ten", ten));
		TIMED(&ra, (void)ep_call(ep, tok, "GET", "/v1/files/content?path=/home/user/ten",
					 NULL, NULL, 0, &keep));
		if (keep.len != ten)
			die("readFile", "unexpected length");
	}
	row("/v1 writeFile 10 MiB, raw body", &wa, &wb, T_RATIO, 1.15, 0);
	row("/v1 readFile 10 MiB, raw body", &ra, &rb, T_RATIO, 1.15, 0);
	/* where the rest goes: raw docker exec moving the same bytes */
	row("raw docker exec, 10 MiB on stdin into a file (beside archive put)", &xw, &wb, T_NONE,
	    0, 0);
	row("raw docker exec `cat` of 10 MiB (beside archive get)", &xr, &rb, T_NONE, 0, 0);
	free(xw.v);
	free(xr.v);
	free(wa.v);
	free(wb.v);
	free(ra.v);
	free(rb.v);

	/* one multipart body: metadata, then the content part */
	hl = snprintf(head, sizeof(head),
		      "--%s\r\nContent-Disposition: form-data; name=\"metadata\"\r\n"
		      "Content-Type: application/json\r\n\r\n{\"path\":\"/home/user/huge\"}\r\n"
		      "--%s\r\nContent-Disposition: form-data; name=\"content\"\r\n"
		      "Content-Type: application/octet-stream\r\n\r\n",
		      bnd, bnd);
	buf_init(&up, huge + 4096);
	if (buf_append(&up, head, (size_t)hl) < 0 || buf_append(&up, data, huge) < 0 ||
	    buf_printf(&up, "\r\n--%s--\r\n", bnd) < 0)
		die("upload body", "out of memory");
	snprintf(q, sizeof(q), "multipart/form-data; boundary=%s", bnd);
	samples_init(&wa, n_xfer);
	samples_init(&wb, n_xfer);
	samples_init(&ra, n_xfer);
	samples_init(&rb, n_xfer);
	for (int i = 0; i < n_xfer; i++) {
		free(tok);
		tok = ep_token(uid);
		TIMED(&wa, ep_call(ep, tok, "POST", "/v1/files/upload", q, up.data, up.len, &keep));
		TIMED(&wb, raw_put_big(cid, "huge", data, huge));
		TIMED(&rb, raw_get_big(cid, "/home/user/huge", huge));
		TIMED(&ra, (void)ep_call(ep, tok, "GET", "/v1/files/download?paths=/home/user/huge",
					 NULL, NULL, 0, NULL));
	}
	mbps_row("/v1 upload 200 MiB", &wa, &wb, huge);
	mbps_row("/v1 download 200 MiB", &ra, &rb, huge);
	free(wa.v);
	free(wb.v);
	free(ra.v);
	free(rb.v);
	buf_free(&up);
	buf_free(&keep);
	sp_id_call("sandbox.remove", uid); /* both faces' sandbox */
	raw_remove(cid);
	free(tok);
	free(uid);
	free(data);
}

/* ---- the fast path (issue 16) ------------------------------------------------ */

/* /v1 exec `true` at a sandbox's endpoint; checks exitCode 0. */
static void ep_exec_true(const char *ep, const char *tok, struct buf *keep)
{
	static const char body[] = "{\"cmd\":[\"true\"]}";
	json_object *o, *v;

	ep_call(ep, tok, "POST", "/v1/processes/exec", "application/json", body, sizeof(body) - 1,
		keep);
	o = json_tokener_parse(keep->data ? keep->data : "");
	if (!o || (json_object_object_get_ex(o, "exitCode", &v) && json_object_get_int(v) != 0))
		die("/v1 exec", keep->data ? keep->data : "no answer");
	json_object_put(o);
}

/* /v1 exec `true` through the fast path beside raw docker exec `true`,
 * interleaved; then a warm pool's create → first exec (through the fast
 * path: the pool's containers have their helper serving) beside a raw
 * cold create → first exec. Targets: p50 ≤ 10 ms and ≥ 5× faster than
 * raw; warm p50 ≤ 30 ms. */
static void mode_fastpath(int with_warm)
{
	int n = (int)env_n("BENCH_FAST", 200), nw = (int)env_n("BENCH_WARM", 20), pooled = 0;
	const char *image =
		getenv("BENCH_IMAGE") ? getenv("BENCH_IMAGE") : "sandpit-test/busybox:latest";
	char body[512], ep[1024], cid[65], *uid, *tok;
	struct samples a, b;
	struct buf keep;
	json_object *o, *v;
	double a50, b50;

	snprintf(body, sizeof(body), "{\"imageRef\":\"%s\"}", image);
	v = json_tokener_parse(body);
	o = sp_call("POST", "/v1/sandboxes", NULL, v, 0);
	json_object_put(v);
	if (!json_object_object_get_ex(o, "uid", &v))
		die("/v1/sandboxes", "no uid");
	uid = strdup(json_object_get_string(v));
	json_object_put(o);
	snprintf(ep, sizeof(ep), "%s/endpoints/%s", sp_url, uid);
	tok = ep_token_perms(uid, "{\"permissions\":[\"sandboxesExec\"]}");
	raw_create(image, NULL, cid);
	buf_init(&keep, 1 << 20);
	ep_exec_true(ep, tok, &keep); /* warm-up: starts the serving helper */
	raw_exec(cid, "true", 0);
	samples_init(&a, n);
	samples_init(&b, n);
	for (int i = 0; i < n; i++) {
		if (i & 1) {
			TIMED(&a, ep_exec_true(ep, tok, &keep));
			TIMED(&b, raw_exec(cid, "true", 0));
		} else {
			TIMED(&b, raw_exec(cid, "true", 0));
			TIMED(&a, ep_exec_true(ep, tok, &keep));
		}
	}
	a50 = pct(&a, 50);
	b50 = pct(&b, 50);
	printf("| `/v1` exec `true` round trip through the fast path (n=%d; raw = docker exec `true`) | "
	       "%.1f | %.1f | %.1f | %.1f | %.2f× (%.1f× faster) | p50 ≤ 10 ms and ≥ 5× faster | %s "
	       "|\n",
	       a.n, a50, pct(&a, 95), b50, pct(&b, 95), a50 / b50, b50 / a50,
	       a50 <= 10.0 && b50 / a50 >= 5.0 ? "✓" : "✗");
	fflush(stdout);
	sp_id_call("sandbox.remove", uid);
	raw_remove(cid);
	free(a.v);
	free(b.v);
	free(tok);
	free(uid);
	buf_free(&keep);
	if (!with_warm)
		return;
	samples_init(&a, nw);
	samples_init(&b, nw);
	for (int i = -1; i < nw; i++) {
		char *id = NULL;
		int64_t t0;
		usleep(1500 * 1000); /* the pool refills (and its helper starts) between requests */
		t0 = wire_us;
		sp_create("\"networkMode\":\"internet\"", &id, 1);
		sp_exec(id, "true", 0);
		if (i >= 0)
			a.v[a.n++] = wire_us - t0;
		t0 = wire_us;
		raw_create(image, NULL, cid);
		raw_exec(cid, "true", 0);
		if (i >= 0)
			b.v[b.n++] = wire_us - t0;
		sp_id_call("sandbox.remove", id);
		raw_remove(cid);
		free(id);
	}
	for (int i = 0; i < 8; i++)
		if (strcmp(st_phase[i].name, "pool") == 0)
			pooled = st_phase[i].n;
	a50 = pct(&a, 50);
	b50 = pct(&b, 50);
	printf("| warm-pool create → first exec `true` through the fast path (n=%d; %d of %d creates "
	       "from the pool; raw = cold) | %.1f | %.1f | %.1f | %.1f | %.2f× | p50 ≤ 30 ms | %s |\n",
	       a.n, pooled, nw + 1, a50, pct(&a, 95), b50, pct(&b, 95), a50 / b50,
	       a50 <= 30.0 ? "✓" : "✗");
	free(a.v);
	free(b.v);
}

int main(int argc, char **argv)
{
	struct sp_err e;
	struct docker_version v;
	long long n = 0, p = 1;

	sp_url = getenv("SANDPIT_URL");
	sp_key = getenv("SANDPIT_KEY");
	sp_ca = getenv("SANDPIT_CA");
	if (getenv("DOCKER_HOST") && *getenv("DOCKER_HOST"))
		docker_host = getenv("DOCKER_HOST");
	if (argc < 2 || !sp_url || !sp_key || !sp_ca) {
		fprintf(stderr,
			"usage: bench latency|warm|gvisor RUNTIME|mem-up N P|mem-down P|one-id|create-v1|snapshots|"
			"transfer|fastpath [warm] "
			"(with SANDPIT_URL, SANDPIT_KEY, SANDPIT_CA set)\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[1], "mem-up") == 0) {
		if (argc < 4 || parse_ll(argv[2], 1, 10000, &n) < 0 ||
		    parse_ll(argv[3], 1, 64, &p) < 0)
			die("mem-up", "N P");
		mode_mem_up((int)n, (int)p);
	}
	if (strcmp(argv[1], "mem-down") == 0) {
		if (argc < 3 || parse_ll(argv[2], 1, 64, &p) < 0)
			die("mem-down", "P");
		mode_mem_down((int)p);
	}
	sp_open();
	if (strcmp(argv[1], "create-v1") == 0) {
		mode_create_v1();
		return 0;
	}
	if (strcmp(argv[1], "one-id") == 0) {
		char *id;
		sp_create("\"memoryMb\":64", &id, 0);
		printf("%s\n", id);
		free(id);
		return 0;
	}
	dk = docker_client_create(docker_host, 60, &e);
	if (!dk)
		die("docker", e.msg);
	dk_check(docker_negotiate(dk, 1, &v, &e), "docker version", &e);
	if (strcmp(argv[1], "latency") == 0)
		mode_latency();
	else if (strcmp(argv[1], "warm") == 0)
		mode_warm();
	else if (strcmp(argv[1], "snapshots") == 0)
		mode_snapshots();
	else if (strcmp(argv[1], "transfer") == 0)
		mode_transfer();
	else if (strcmp(argv[1], "fastpath") == 0)
		mode_fastpath(argc >= 3 && strcmp(argv[2], "warm") == 0);
	else if (strcmp(argv[1], "gvisor") == 0 && argc >= 3)
		mode_gvisor(argv[2]);
	else
		die(argv[1], "unknown mode");
	docker_client_free(dk);
	curl_easy_cleanup(sp);
	return 0;
}

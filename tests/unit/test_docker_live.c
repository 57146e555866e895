/*
 * docker/ against the real dockerd on /var/run/docker.sock: negotiation,
 * networks (idempotent ensure, recreation of a misconfigured one, a
 * concurrent-create race), a container's whole life (create, archive put,
 * start, exec with demuxed output and exit code, exec timeout, output flood,
 * archive stat/get, exec with stdin over a hijacked connection, stop,
 * remove), the error mapping of missing things, and a daemon that is absent
 * or hung. Needs the local image
 * sandpit-test/busybox:latest and builds it when missing. Everything it
 * creates carries its pid in the name and is removed in the teardown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>
#include <sodium.h>

#include "common/log.h"
#include "common/util.h"
#include "docker/docker.h"
#include "docker/docker_int.h"

#define SOCK "unix:///var/run/docker.sock"
#define IMAGE "sandpit-test/busybox:latest"
#define LABEL "sandpit.test"

static struct {
	struct docker_client *c;
	char net[64];	   /* ensured by the test */
	char net_bad[64];  /* made by the CLI with ICC on, then ensured */
	char net_race[64]; /* ensured by several processes at once */
	char name[64];	   /* container name */
	char label[64];	   /* LABEL=<pid> */
	char id[65];
} T;

/* Builds IMAGE as tests/images/build.sh does (same recipe, inline so this
 * test stands alone); prefers the script when it is there. */
static int build_image(void)
{
	static const char recipe[] =
		"set -e; d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT; r=$d/rootfs;"
		"mkdir -p $r/bin $r/tmp $r/etc $r/root $r/home/user;"
		"cp /bin/busybox $r/bin/busybox;"
		"for a in $($r/bin/busybox --list); do [ $a = busybox ] || ln -s busybox $r/bin/$a; done;"
		"printf 'root:x:0:0:root:/root:/bin/sh\\nuser:x:1000:1000:user:/home/user:/bin/sh\\n'"
		" > $r/etc/passwd;"
		"printf 'root:x:0:\\nuser:x:1000:\\n' > $r/etc/group;"
		"chown 1000:1000 $r/home/user; chmod 1777 $r/tmp;"
		"tar -C $r --numeric-owner -c . | docker import"
		" --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'"
		" --change 'CMD [\"sh\"]' --change 'LABEL sandpit.test-image=1' - " IMAGE
		" >/dev/null";

	if (access("tests/images/build.sh", X_OK) == 0 &&
	    system("bash tests/images/build.sh busybox >/dev/null") == 0)
		return 0;
	return system(recipe) == 0 ? 0 : -1;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	return system(cmd);
}

/* Removes a network through the allow-listed DELETE; gone is fine. */
static void net_rm(const char *name)
{
	struct docker_req r;
	struct sp_err e;

	docker_req_init(&r, "DELETE");
	if (docker_req_path(&r, &e, "/networks/%s", name) == 0) {
		r.ok_status[0] = 404;
		(void)docker_call(T.c, &r, NULL, NULL, &e);
	}
	docker_req_cleanup(&r);
}

static int setup(void **state)
{
	struct sp_err e;
	json_object *o = NULL;
	int pid = (int)getpid();

	(void)state;
	snprintf(T.net, sizeof(T.net), "sandpit-test-net-%d", pid);
	snprintf(T.net_bad, sizeof(T.net_bad), "sandpit-test-bad-%d", pid);
	snprintf(T.net_race, sizeof(T.net_race), "sandpit-test-race-%d", pid);
	snprintf(T.name, sizeof(T.name), "sandpit-test-%d", pid);
	snprintf(T.label, sizeof(T.label), LABEL "=%d", pid);
	T.c = docker_client_create(SOCK, 30, &e);
	if (!T.c) {
		fprintf(stderr, "client: %s\n", e.msg);
		return -1;
	}
	if (docker_image_inspect(T.c, IMAGE, &o, &e) < 0) {
		if (e.code != SP_NOT_FOUND || build_image() < 0 ||
		    docker_image_inspect(T.c, IMAGE, &o, &e) < 0) {
			fprintf(stderr, "image %s: %s\n", IMAGE, e.msg);
			return -1;
		}
	}
	json_object_put(o);
	return 0;
}

static int teardown(void **state)
{
	struct sp_err e;
	(void)state;

	if (T.id[0])
		(void)docker_container_remove(T.c, T.id, 1, &e);
	net_rm(T.net);
	net_rm(T.net_bad);
	net_rm(T.net_race);
	/* anything left by a failed run of this test under this label */
	sh("docker ps -aq --filter label=%s | xargs -r docker rm -f >/dev/null", T.label);
	docker_client_free(T.c);
	return 0;
}

static void test_negotiate(void **state)
{
	struct docker_version v;
	struct sp_err e;
	(void)state;

	assert_int_equal(docker_negotiate(T.c, 0, &v, &e), 0);
	assert_string_equal(v.api_version, "1.41");
	assert_true(v.engine[0]);
	/* this machine: Debian's patched 1.1.5+ds1-1+deb12u1 is accepted */
	fprintf(stderr, "engine %s, api %s, runc %s (%s)\n", v.engine, v.api_version, v.runc,
		v.runc_commit);
	assert_true(docker_runc_ok(v.runc, v.runc_commit));
}

/* The connection of the kept-alive handle was reused by the last request. */
static void assert_reused(void)
{
	long n = -1;

	assert_int_equal(curl_easy_getinfo(T.c->h, CURLINFO_NUM_CONNECTS, &n), CURLE_OK);
	assert_int_equal(n, 0);
}

static void test_images(void **state)
{
	json_object *o = NULL;
	struct sp_err e;
	int64_t t0;
	(void)state;

	assert_int_equal(docker_image_inspect(T.c, IMAGE, &o, &e), 0);
	assert_non_null(docker_json_str(o, "Id"));
	json_object_put(o);
	assert_reused();
	assert_int_equal(docker_image_inspect(T.c, "sandpit-test/none-such:latest", &o, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_null(o);
	/* no registry answers here: the pull fails fast with the daemon's message */
	t0 = mono_ms();
	assert_int_equal(docker_image_pull(T.c, "127.0.0.1:9/sandpit/none:1", 20, &e), -1);
	assert_true(e.code == SP_INTERNAL || e.code == SP_NOT_FOUND);
	assert_true(e.msg[0]);
	assert_true(mono_ms() - t0 < 15000);
	fprintf(stderr, "pull failed as expected: %s: %s\n", sp_code_name(e.code), e.msg);
}

static void check_net(const char *name, int internal, char id_out[65])
{
	json_object *o = NULL, *v, *opts;
	struct sp_err e;
	const char *icc;

	assert_int_equal(docker_network_inspect(T.c, name, &o, &e), 0);
	assert_true(json_object_object_get_ex(o, "Internal", &v));
	assert_int_equal(json_object_get_boolean(v), internal);
	assert_true(json_object_object_get_ex(o, "Options", &opts));
	icc = docker_json_str(opts, "com.docker.network.bridge.enable_icc");
	assert_non_null(icc);
	assert_string_equal(icc, "false");
	assert_string_equal(docker_json_str(o, "Driver"), "bridge");
	if (id_out)
		snprintf(id_out, 65, "%s", docker_json_str(o, "Id"));
	json_object_put(o);
}

static void test_networks(void **state)
{
	char id1[65], id2[65], cmd_out[32];
	struct sp_err e;
	json_object *o = NULL;
	FILE *f;
	int status;
	(void)state;

	assert_int_equal(docker_network_ensure(T.c, T.net, 1, LABEL, &e), 0);
	check_net(T.net, 1, id1);
	assert_int_equal(docker_network_ensure(T.c, T.net, 1, LABEL, &e), 0);
	check_net(T.net, 1, id2);
	assert_string_equal(id1, id2); /* idempotent: the same network */

	/* a network made with ICC on is removed and recreated (no containers) */
	assert_int_equal(sh("docker network create %s >/dev/null", T.net_bad), 0);
	assert_int_equal(docker_network_ensure(T.c, T.net_bad, 0, LABEL, &e), 0);
	check_net(T.net_bad, 0, id1);
	net_rm(T.net_bad);

	/* four processes race to create one network: exactly one exists */
	for (int i = 0; i < 4; i++) {
		pid_t p = fork();
		assert_true(p >= 0);
		if (p == 0) {
			struct docker_client *c = docker_client_create(SOCK, 30, &e);
			int ok = c && docker_network_ensure(c, T.net_race, 0, LABEL, &e) == 0;
			if (!ok)
				fprintf(stderr, "race: %s\n", e.msg);
			docker_client_free(c);
			docker_client_free(T.c);
			_exit(ok ? 0 : 1);
		}
	}
	for (int i = 0; i < 4; i++) {
		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	snprintf(cmd_out, sizeof(cmd_out), "%s", "");
	{
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "docker network ls -q --filter name=^%s$ | wc -l",
			 T.net_race);
		f = popen(cmd, "r");
		assert_non_null(f);
		assert_non_null(fgets(cmd_out, sizeof(cmd_out), f));
		pclose(f);
	}
	assert_int_equal(strtol(cmd_out, NULL, 10), 1);
	net_rm(T.net_race);

	assert_int_equal(docker_network_inspect(T.c, "sandpit-test-none-such", &o, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
}

struct out {
	struct buf s[2];
	int abort_after; /* bytes; 0 = never */
};

static int collect(void *arg, int stream, const char *p, size_t n)
{
	struct out *o = arg;

	assert_true(stream == 1 || stream == 2);
	if (buf_append(&o->s[stream - 1], p, n) < 0)
		return -1;
	if (o->abort_after && o->s[0].len + o->s[1].len >= (size_t)o->abort_after)
		return -1;
	return 0;
}

/* Runs argv (a NULL-terminated list) in the test container. */
static int run(const char *const *argv, int64_t timeout_ms, struct out *o, int *timed_out,
	       int *exit_code, struct sp_err *e)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array();
	char eid[65];
	int running = 1, rc = -1;

	for (; *argv; argv++)
		json_object_array_add(cmd, json_object_new_string(*argv));
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(body, "User", json_object_new_string("1000:1000"));
	buf_init(&o->s[0], 8 << 20);
	buf_init(&o->s[1], 8 << 20);
	if (docker_exec_create(T.c, T.id, body, eid, e) < 0 ||
	    docker_exec_start(T.c, eid, timeout_ms, collect, NULL, o, timed_out, e) < 0)
		goto done;
	for (int i = 0; i < 50 && running && !*timed_out; i++) {
		if (docker_exec_inspect(T.c, eid, exit_code, &running, e) < 0)
			goto done;
		if (running)
			usleep(20000);
	}
	if (*timed_out && docker_exec_inspect(T.c, eid, exit_code, &running, e) < 0)
		goto done;
	rc = 0;
done:
	json_object_put(body);
	return rc;
}

static void out_free(struct out *o)
{
	buf_free(&o->s[0]);
	buf_free(&o->s[1]);
}

static const char hello[] = { 'h', 'e', 'l', 'l', 'o', 0, '\xff', '\xfe', '\n' };

static void test_container_life(void **state)
{
	const struct docker_tar_entry ents[] = {
		{ "home", 1, 0755, 0, 0, NULL, 0, 1700000000 },
		{ "home/user", 1, 0750, 1000, 1000, NULL, 0, 1700000000 },
		{ "home/user/hello.bin", 0, 0640, 1000, 1000, hello, sizeof(hello), 1700000000 },
		{ "suid", 0, 04755, 1000, 1000, "#!/bin/sh\n", 10, 1700000000 },
	};
	json_object *body, *hc, *labels, *o = NULL;
	struct buf tar;
	struct sp_err e;
	struct out out = { 0 };
	char id2[65];
	int timed_out = 0, code = -2;
	int64_t t0;
	(void)state;

	body = json_object_new_object();
	hc = json_object_new_object();
	labels = json_object_new_object();
	json_object_object_add(body, "Image", json_object_new_string(IMAGE));
	json_object_object_add(body, "Cmd", json_tokener_parse("[\"sleep\",\"300\"]"));
	json_object_object_add(labels, LABEL, json_object_new_string(T.label + strlen(LABEL "=")));
	json_object_object_add(body, "Labels", labels);
	json_object_object_add(hc, "AutoRemove", json_object_new_boolean(0));
	json_object_object_add(hc, "NetworkMode", json_object_new_string(T.net));
	json_object_object_add(hc, "Init", json_object_new_boolean(1));
	json_object_object_add(body, "HostConfig", hc);

	assert_int_equal(docker_network_ensure(T.c, T.net, 1, LABEL, &e), 0);
	if (docker_container_create(T.c, T.name, body, T.id, &e) < 0)
		fail_msg("create: %s", e.msg);
	assert_int_equal(strlen(T.id), 64);
	/* the same name again is a conflict */
	assert_int_equal(docker_container_create(T.c, T.name, body, id2, &e), -1);
	assert_int_equal(e.code, SP_CONFLICT);
	json_object_put(body);

	/* archive put before start: a dir owned 1000:1000, a file, a setuid try */
	buf_init(&tar, 1 << 20);
	assert_int_equal(docker_tar_build(ents, 4, &tar, &e), 0);
	if (docker_archive_put(T.c, T.id, "/", tar.data, tar.len, &e) < 0)
		fail_msg("archive put: %s", e.msg);
	assert_int_equal(docker_archive_put(T.c, T.id, "/no/such/dir", tar.data, tar.len, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	buf_free(&tar);

	assert_int_equal(docker_container_start(T.c, T.id, &e), 0);
	assert_int_equal(docker_container_start(T.c, T.id, &e), 0); /* 304 */

	/* demuxed output and exit code */
	{
		const char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
		if (run(argv, 10000, &out, &timed_out, &code, &e) < 0)
			fail_msg("exec: %s", e.msg);
		assert_int_equal(timed_out, 0);
		assert_int_equal(code, 3);
		assert_int_equal(out.s[0].len, 4);
		assert_memory_equal(out.s[0].data, "out\n", 4);
		assert_int_equal(out.s[1].len, 4);
		assert_memory_equal(out.s[1].data, "err\n", 4);
		out_free(&out);
	}
	/* what archive put wrote: owners, modes (no setuid), bytes */
	{
		const char *argv[] = { "sh", "-c",
				       "stat -c '%u:%g %a' /home/user /home/user/hello.bin /suid; "
				       "cat /home/user/hello.bin >&2",
				       NULL };
		assert_int_equal(run(argv, 10000, &out, &timed_out, &code, &e), 0);
		assert_int_equal(code, 0);
		assert_string_equal(out.s[0].data, "1000:1000 750\n1000:1000 640\n1000:1000 755\n");
		assert_int_equal(out.s[1].len, sizeof(hello));
		assert_memory_equal(out.s[1].data, hello, sizeof(hello));
		out_free(&out);
	}
	/* a timeout ends the call on time and says so */
	{
		const char *argv[] = { "sleep", "5", NULL };
		t0 = mono_ms();
		assert_int_equal(run(argv, 500, &out, &timed_out, &code, &e), 0);
		assert_int_equal(timed_out, 1);
		assert_true(mono_ms() - t0 < 2000);
		assert_int_equal(code, -1); /* still running */
		out_free(&out);
	}
	/* the kept-alive handle is fine after that, and still on its connection */
	assert_int_equal(docker_container_inspect(T.c, T.id, &o, &e), 0);
	json_object_put(o);
	assert_reused();
	/* a flood on both streams arrives whole */
	{
		const char *argv[] = {
			"sh", "-c",
			"head -c 3000000 /dev/zero & head -c 2500000 /dev/zero >&2; wait", NULL
		};
		timed_out = 0;
		assert_int_equal(run(argv, 30000, &out, &timed_out, &code, &e), 0);
		assert_int_equal(timed_out, 0);
		assert_int_equal(code, 0);
		assert_int_equal(out.s[0].len, 3000000);
		assert_int_equal(out.s[1].len, 2500000);
		out_free(&out);
	}
	/* on_data aborting ends the call early */
	{
		const char *argv[] = { "sh", "-c", "while :; do echo yyyyyyyyyyyyyyyy; done",
				       NULL };
		out.abort_after = 100000;
		t0 = mono_ms();
		assert_int_equal(run(argv, 10000, &out, &timed_out, &code, &e), 0);
		assert_true(mono_ms() - t0 < 5000);
		assert_true(out.s[0].len >= 100000);
		out_free(&out);
		out.abort_after = 0;
	}
}

static void test_archive_read(void **state)
{
	struct docker_stat st;
	struct archive *a;
	struct archive_entry *ae;
	struct buf b;
	struct sp_err e;
	char got[64];
	(void)state;

	assert_true(T.id[0]);
	assert_int_equal(docker_archive_stat(T.c, T.id, "/home/user/hello.bin", &st, &e), 0);
	assert_string_equal(st.name, "hello.bin");
	assert_int_equal(st.size, sizeof(hello));
	assert_int_equal(st.mode & 0777, 0640);
	assert_int_equal(docker_archive_stat(T.c, T.id, "/bin/sh", &st, &e), 0);
	assert_string_equal(st.link_target, "/bin/busybox");
	assert_int_equal(docker_archive_stat(T.c, T.id, "/no/such/file", &st, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);

	buf_init(&b, 1 << 20);
	assert_int_equal(docker_archive_get(T.c, T.id, "/home/user/hello.bin", &b, &e), 0);
	a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_memory(a, b.data, b.len), ARCHIVE_OK);
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(ae), "hello.bin");
	assert_int_equal(archive_entry_uid(ae), 1000);
	assert_int_equal(archive_read_data(a, got, sizeof(got)), sizeof(hello));
	assert_memory_equal(got, hello, sizeof(hello));
	archive_read_free(a);
	assert_int_equal(docker_archive_get(T.c, T.id, "/no/such/file", &b, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	buf_free(&b);

	/* the cap aborts the transfer: busybox is ~2 MB */
	buf_init(&b, 65536);
	assert_int_equal(docker_archive_get(T.c, T.id, "/bin/busybox", &b, &e), -1);
	assert_int_equal(e.code, SP_TOO_LARGE);
	assert_int_equal(b.len, 0);
	buf_free(&b);
	/* and the handle still works */
	assert_int_equal(docker_archive_stat(T.c, T.id, "/suid", &st, &e), 0);
}

/* Runs sh -c script in the test container with in on its stdin; waits up
 * to 5 s for the exit code when the stream ended early. */
static int run_in(const char *script, const void *in, size_t in_len, int64_t timeout_ms,
		  struct out *o, int *timed_out, size_t *in_sent, int *exit_code, struct sp_err *e)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array();
	char eid[65];
	int running = 1, rc = -1;

	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(script));
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(body, "AttachStdin", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(body, "User", json_object_new_string("1000:1000"));
	buf_init(&o->s[0], 8 << 20);
	buf_init(&o->s[1], 8 << 20);
	*exit_code = -1;
	if (docker_exec_create(T.c, T.id, body, eid, e) < 0 ||
	    docker_exec_start_input(T.c, eid, timeout_ms, in, in_len, collect, NULL, o, timed_out,
				    in_sent, e) < 0)
		goto done;
	for (int i = 0; i < 250 && running; i++) {
		if (docker_exec_inspect(T.c, eid, exit_code, &running, e) < 0)
			goto done;
		if (running)
			usleep(20000);
	}
	rc = 0;
done:
	json_object_put(body);
	return rc;
}

/* stdin through a hijacked connection: every byte arrives (10 MiB, and
 * none); a process that stops reading ends the call with its exit code; a
 * connection dropped midway ends the process's stdin (it sees fewer bytes,
 * never hangs); a missing exec is mapped; the timeout holds. */
static void test_exec_stdin(void **state)
{
	const size_t big = 10 << 20;
	unsigned char *data = malloc(big), md[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof(md) + 1], want[160];
	struct out o = { 0 };
	struct sp_err e;
	size_t sent = 0;
	int timed_out = 0, code = -1;
	int64_t t0;
	(void)state;

	assert_non_null(data);
	randombytes_buf(data, big);
	crypto_hash_sha256(md, data, big);
	sodium_bin2hex(hex, sizeof(hex), md, sizeof(md));
	assert_int_equal(run_in("head -c 10485760 >/tmp/in && wc -c </tmp/in && sha256sum </tmp/in",
				data, big, 30000, &o, &timed_out, &sent, &code, &e),
			 0);
	snprintf(want, sizeof(want), "10485760\n%s  -\n", hex);
	assert_int_equal(timed_out, 0);
	assert_int_equal(code, 0);
	assert_int_equal(sent, big);
	assert_string_equal(o.s[0].data ? o.s[0].data : "", want);
	out_free(&o);

	/* no input at all */
	assert_int_equal(
		run_in("head -c 0; echo done", "", 0, 10000, &o, &timed_out, &sent, &code, &e), 0);
	assert_int_equal(code, 0);
	assert_string_equal(o.s[0].data, "done\n");
	out_free(&o);

	/* a process that reads nothing: Docker stops taking input, the stream
	 * ends, the exit code tells */
	t0 = mono_ms();
	assert_int_equal(
		run_in("echo nope >&2; exit 3", data, big, 30000, &o, &timed_out, &sent, &code, &e),
		0);
	assert_int_equal(timed_out, 0);
	assert_int_equal(code, 3);
	assert_true(sent < big);
	assert_true(mono_ms() - t0 < 5000);
	out_free(&o);

	/* the connection dropped midway (on_data aborts at the first output):
	 * the process's stdin ends, it sees fewer bytes and exits */
	o.abort_after = 1;
	assert_int_equal(run_in("echo go; sleep 1; head -c 10485760 >/tmp/part; "
				"[ $(wc -c </tmp/part) -eq 10485760 ] || exit 6",
				data, big, 30000, &o, &timed_out, &sent, &code, &e),
			 0);
	assert_int_equal(code, 6);
	assert_true(sent < big);
	o.abort_after = 0;
	out_free(&o);

	/* the timeout holds while the process neither reads nor ends */
	t0 = mono_ms();
	assert_int_equal(
		run_in("sleep 3; head -c 4", "abcd", 4, 500, &o, &timed_out, &sent, &code, &e), 0);
	assert_int_equal(timed_out, 1);
	assert_true(mono_ms() - t0 < 2500 + 5000);
	out_free(&o);

	/* a missing exec: Docker's 404 before any hijack */
	assert_int_equal(docker_exec_start_input(
				 T.c,
				 "0000000000000000000000000000000000000000000000000000000000000000",
				 5000, "x", 1, collect, NULL, &o, &timed_out, &sent, &e),
			 -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_non_null(strstr(e.msg, "No such exec instance"));
	free(data);
}

static void test_list_stop_remove(void **state)
{
	json_object *o = NULL;
	struct sp_err e;
	char eid[65];
	json_object *body;
	(void)state;

	assert_true(T.id[0]);
	assert_int_equal(docker_container_list(T.c, T.label, 1, &o, &e), 0);
	assert_int_equal(json_object_array_length(o), 1);
	json_object_put(o);
	assert_int_equal(docker_container_list(T.c, LABEL "=none-such", 1, &o, &e), 0);
	assert_int_equal(json_object_array_length(o), 0);
	json_object_put(o);

	assert_int_equal(docker_container_kill(T.c, T.id, "bad signal", &e), -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);
	assert_int_equal(docker_container_stop(T.c, T.id, 1, &e), 0);
	assert_int_equal(docker_container_stop(T.c, T.id, 1, &e), 0); /* 304 */
	assert_int_equal(docker_container_kill(T.c, T.id, "KILL", &e), -1);
	assert_int_equal(e.code, SP_CONFLICT); /* not running */
	body = json_tokener_parse("{\"Cmd\":[\"true\"],\"AttachStdout\":true}");
	assert_int_equal(docker_exec_create(T.c, T.id, body, eid, &e), -1);
	assert_int_equal(e.code, SP_CONFLICT);
	json_object_put(body);

	assert_int_equal(docker_container_remove(T.c, T.id, 0, &e), 0);
	assert_int_equal(docker_container_remove(T.c, T.id, 0, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_int_equal(docker_container_inspect(T.c, T.id, &o, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_non_null(strstr(e.msg, "No such container"));
	assert_int_equal(docker_container_stop(T.c, T.id, 1, &e), 0); /* missing: fine */
	T.id[0] = '\0';
	assert_int_equal(docker_container_inspect(T.c, "0000deadbeef", &o, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_int_equal(docker_exec_inspect(T.c, "0000deadbeef", NULL, NULL, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	net_rm(T.net);
}

static void test_unreachable(void **state)
{
	struct docker_client *c;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[64], host[80];
	struct sp_err e;
	int64_t t0;
	int fd;
	(void)state;

	/* no socket at all */
	c = docker_client_create("unix:///nonexistent/docker.sock", 5, &e);
	assert_non_null(c);
	t0 = mono_ms();
	assert_int_equal(docker_negotiate(c, 0, NULL, &e), -1);
	assert_int_equal(e.code, SP_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "Docker is unreachable"));
	assert_true(mono_ms() - t0 < 1000);
	docker_client_free(c);

	/* a daemon that accepts and never answers (RELIABILITY L2) */
	snprintf(path, sizeof(path), "/tmp/sandpit-hung-%d.sock", (int)getpid());
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(host, sizeof(host), "unix://%s", path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	c = docker_client_create(host, 1, &e);
	t0 = mono_ms();
	assert_int_equal(docker_negotiate(c, 0, NULL, &e), -1);
	assert_int_equal(e.code, SP_UNAVAILABLE);
	assert_string_equal(e.msg, "Docker did not answer within 1 s");
	assert_true(mono_ms() - t0 < 2500);
	/* an exec stream with a long timeout still gives up on missing headers */
	t0 = mono_ms();
	int timed_out = 0;
	assert_int_equal(docker_exec_start(c, "abc", 60000, collect, NULL, NULL, &timed_out, &e),
			 -1);
	assert_int_equal(e.code, SP_UNAVAILABLE);
	assert_int_equal(timed_out, 0);
	assert_true(mono_ms() - t0 < 3500);
	/* and so does one with input, which waits for the 101 before writing */
	t0 = mono_ms();
	assert_int_equal(docker_exec_start_input(c, "abc", 60000, "x", 1, collect, NULL, NULL,
						 &timed_out, NULL, &e),
			 -1);
	assert_int_equal(e.code, SP_UNAVAILABLE);
	assert_string_equal(e.msg, "Docker did not answer within 1 s");
	assert_int_equal(timed_out, 0);
	assert_true(mono_ms() - t0 < 3500);
	docker_client_free(c);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate),	 cmocka_unit_test(test_images),
		cmocka_unit_test(test_networks),	 cmocka_unit_test(test_container_life),
		cmocka_unit_test(test_archive_read),	 cmocka_unit_test(test_exec_stdin),
		cmocka_unit_test(test_list_stop_remove), cmocka_unit_test(test_unreachable),
	};

	log_setup("test_docker_live", LOG_WARN, 0);
	return cmocka_run_group_tests(tests, setup, teardown);
}

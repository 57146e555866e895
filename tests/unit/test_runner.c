/*
 * The runner's rules (sandbox/run/runner.c): who a command runs as
 * (never "", which is the keeper; the keeper only when asked; the image's
 * own user never in a sandbox), the ExecCreate body and `sh -c` argv, and
 * what Docker's 404/409 on an exec means: a capture's pause and a running
 * container are retryable, a paused container is a stop, and only a
 * container that is gone ends the sandbox.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sandbox/run/run.h"

static const char *str_at(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int bool_at(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_boolean(v) : -1;
}

static void test_user(void **state)
{
	struct config cfg = { 0 };
	struct sandbox sb = { 0 };
	char u[64];

	(void)state;
	assert_string_equal(sandbox_run_user(""), "root");
	assert_string_equal(sandbox_run_user(NULL), "root");
	assert_string_equal(sandbox_run_user("user"), "user");
	/* a sandbox whose image names no user runs as root, never as "" */
	assert_int_equal(run_user(&cfg, &sb, SB_AS_USER, u, sizeof(u)), 0);
	assert_string_equal(u, "root");
	snprintf(sb.user, sizeof(sb.user), "1000:1000");
	assert_int_equal(run_user(&cfg, &sb, SB_AS_USER, u, sizeof(u)), 0);
	assert_string_equal(u, "1000:1000");
	/* the keeper only when asked for */
	cfg.keeper_uid = 2999;
	assert_int_equal(run_user(&cfg, &sb, SB_AS_KEEPER, u, sizeof(u)), 0);
	assert_string_equal(u, "2999:2999");
	assert_int_equal(run_user(&cfg, NULL, SB_AS_KEEPER, u, sizeof(u)), 0);
	assert_string_equal(u, "2999:2999");
	/* the container's own user: never in a sandbox; a sandbox's user
	 * needs a sandbox */
	assert_int_equal(run_user(&cfg, &sb, SB_AS_IMAGE, u, sizeof(u)), -1);
	assert_int_equal(run_user(&cfg, NULL, SB_AS_USER, u, sizeof(u)), -1);
	assert_int_equal(run_user(&cfg, NULL, SB_AS_IMAGE, u, sizeof(u)), 0);
	assert_string_equal(u, "");
}

static void test_sh(void **state)
{
	const char *argv[8], *args[] = { "a", "b c", NULL };

	(void)state;
	assert_int_equal(run_sh(argv, 8, "echo \"$1\"", "name", args), 6);
	assert_string_equal(argv[0], "sh");
	assert_string_equal(argv[1], "-c");
	assert_string_equal(argv[2], "echo \"$1\"");
	assert_string_equal(argv[3], "name");
	assert_string_equal(argv[4], "a");
	assert_string_equal(argv[5], "b c");
	assert_null(argv[6]);
	assert_int_equal(run_sh(argv, 5, "x", "n", NULL), 4);
	assert_null(argv[4]);
	/* too small (the NULL counts): nothing written */
	assert_int_equal(run_sh(argv, 4, "x", "n", NULL), -1);
	assert_int_equal(run_sh(argv, 6, "x", "n", args), -1);
}

static void test_body(void **state)
{
	const char *argv[] = { "sh", "-c", "true", "n", NULL };
	json_object *env = json_object_new_array(), *b, *cmd;
	struct sb_cmd c = { argv, NULL, NULL, SB_AS_USER, NULL, 0 };

	(void)state;
	b = run_body(&c, "root", 0, 0);
	assert_true(json_object_object_get_ex(b, "Cmd", &cmd));
	assert_int_equal(json_object_array_length(cmd), 4);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 2)), "true");
	assert_string_equal(str_at(b, "User"), "root");
	assert_string_equal(str_at(b, "WorkingDir"), "/");
	assert_int_equal(bool_at(b, "AttachStdout"), 1);
	assert_int_equal(bool_at(b, "AttachStderr"), 1);
	assert_int_equal(bool_at(b, "AttachStdin"), -1);
	assert_false(json_object_object_get_ex(b, "Env", NULL));
	json_object_put(b);

	/* env by reference, cwd, stdin; a detached exec attaches no output */
	json_object_array_add(env, json_object_new_string("A=1"));
	c.env = env;
	c.cwd = "/work";
	b = run_body(&c, "1000", 1, 1);
	assert_string_equal(str_at(b, "WorkingDir"), "/work");
	assert_int_equal(bool_at(b, "AttachStdin"), 1);
	assert_int_equal(bool_at(b, "AttachStdout"), -1);
	assert_true(json_object_object_get_ex(b, "Env", &cmd));
	assert_ptr_equal(cmd, env);
	json_object_put(b);
	assert_int_equal(json_object_array_length(env), 1); /* still the caller's */
	json_object_put(env);

	/* no user (a container that is no sandbox): no User at all */
	c.env = NULL;
	b = run_body(&c, "", 0, 0);
	assert_null(str_at(b, "User"));
	json_object_put(b);
	b = run_body(&c, NULL, 0, 0);
	assert_null(str_at(b, "User"));
	json_object_put(b);
}

/* The outcome of a refusal, answering each question the mapping asks
 * with the given facts; asked counts the questions. */
static enum run_refusal outcome(int docker, int sb_running, int capturing, int paused,
				int container_running, int *asked)
{
	struct run_facts f = { docker, sb_running, RUN_UNASKED, RUN_UNASKED, RUN_UNASKED };

	*asked = 0;
	for (;;) {
		enum run_refusal r = run_refusal_of(&f);
		switch (r) {
		case RUN_ASK_CAPTURING:
			assert_int_equal(f.capturing, RUN_UNASKED);
			f.capturing = capturing;
			break;
		case RUN_ASK_PAUSED:
			assert_int_equal(f.paused, RUN_UNASKED);
			f.paused = paused;
			break;
		case RUN_ASK_RUNNING:
			assert_int_equal(f.container_running, RUN_UNASKED);
			f.container_running = container_running;
			break;
		default:
			return r;
		}
		(*asked)++;
	}
}

static void test_refusal(void **state)
{
	int asked;

	(void)state;
	/* not a refusal of an exec's kind: left alone, nothing asked */
	assert_int_equal(outcome(SP_INTERNAL, 1, 1, 1, 0, &asked), RUN_KEEP);
	assert_int_equal(asked, 0);
	assert_int_equal(outcome(SP_UNAVAILABLE, 1, 0, 0, 0, &asked), RUN_KEEP);
	/* a 409 while a snapshot's capture holds the container paused: busy,
	 * never killed (the data loss this rule exists for) */
	assert_int_equal(outcome(SP_CONFLICT, 1, 1, 1, 1, &asked), RUN_BUSY);
	assert_int_equal(asked, 1);
	/* a 409 from a container a stop paused: the sandbox is stopped */
	assert_int_equal(outcome(SP_CONFLICT, 1, 0, 1, 1, &asked), RUN_STOPPED);
	assert_int_equal(outcome(SP_CONFLICT, 0, 1, 1, 1, &asked), RUN_STOPPED);
	assert_int_equal(asked, 1); /* a record not running is no capture's */
	/* a 409 from a container that still runs, or Docker cannot say: retry */
	assert_int_equal(outcome(SP_CONFLICT, 1, 0, 0, 1, &asked), RUN_RETRY);
	assert_int_equal(asked, 3);
	assert_int_equal(outcome(SP_CONFLICT, 1, 0, 0, -1, &asked), RUN_RETRY);
	assert_int_equal(outcome(SP_NOT_FOUND, 1, 1, 1, 1, &asked), RUN_RETRY);
	assert_int_equal(asked, 1); /* a 404 asks only whether it runs */
	assert_int_equal(outcome(SP_NOT_FOUND, 1, 0, 0, -1, &asked), RUN_RETRY);
	/* only a container that is gone ends the sandbox */
	assert_int_equal(outcome(SP_NOT_FOUND, 1, 0, 0, 0, &asked), RUN_GONE);
	assert_int_equal(outcome(SP_CONFLICT, 1, 0, 0, 0, &asked), RUN_GONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user),
		cmocka_unit_test(test_sh),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_refusal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

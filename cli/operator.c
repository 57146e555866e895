/*
 * Admin commands: keys create|list|revoke, orgs create|list, roles
 * create|list|delete, quota set|show. A new key is printed once, on stdout;
 * only its keyed hash is stored, and no listing ever shows a key.
 */
#include "operator.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "../common/config.h"
#include "../common/crypto.h"
#include "../common/perms.h"
#include "../common/util.h"
#include "../sandbox/sandbox.h"
#include "../store/store.h"

const char operator_usage[] =
	"Admin commands (talk to Redis with the server's configuration, -c CONFIG):\n"
	"  keys create --org ORG [--role owner|admin|member|CUSTOM]\n"
	"                              create an API key; it is printed once\n"
	"  keys list --org ORG         key ids, roles and creation times (never keys)\n"
	"  keys revoke KEY_ID          revoke a key (takes effect within 3 s)\n"
	"  orgs create ORG             register an organization\n"
	"  orgs list\n"
	"  roles create --org ORG NAME --perms P[,P...]\n"
	"                              a custom role; permissions: sandbox:read,\n"
	"                              sandbox:create, sandbox:delete\n"
	"  roles list --org ORG\n"
	"  roles delete --org ORG NAME\n"
	"  quota set --org ORG [--sandboxes N] [--cpu CPUS] [--memory-mb MB]\n"
	"            [--max-lifetime SECONDS]\n"
	"                              limits on running sandboxes (0 removes a limit);\n"
	"                              --max-lifetime: their hard deadline, 10..86400 s\n"
	"  quota show --org ORG\n"
	"  servers add --id ID --endpoint URL --orgs ORG[,ORG...]|'*' [--name NAME]\n"
	"              [--tls-cert F --tls-key F --tls-ca F] [--ssh-key F] [--known-hosts F]\n"
	"              [--pool POOL] [--no-pooling] [--allow-unfiltered]\n"
	"              [--max-lifetime SECONDS]\n"
	"                              register a Docker server: unix:///path,\n"
	"                              tcp://host:port (TLS) or ssh://user@host[:port];\n"
	"                              then checks that its sandboxes cannot reach its\n"
	"                              host or 169.254.169.254 (a failing server gets no\n"
	"                              sandboxes unless --allow-unfiltered)\n"
	"  servers check ID            run that network check again\n"
	"  servers list                servers, their pools, load and check (JSON)\n"
	"  servers remove ID\n";

static const char *const groups[] = { "keys", "orgs", "roles", "quota", "servers", NULL };

int operator_is_command(const char *group)
{
	for (const char *const *g = groups; *g; g++)
		if (strcmp(*g, group) == 0)
			return 1;
	return 0;
}

static int valid_org(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '_')
			return 0;
	return 1;
}

static int fail(const char *msg)
{
	fprintf(stderr, "sandpit: %s\n", msg);
	return 1;
}

static int usage_error(const char *what)
{
	fprintf(stderr, "sandpit: %s\n\n%s", what, operator_usage);
	return 2;
}

/* Options shared by the commands: --org, --role, --perms, quota limits.
 * Positional arguments are left in argv[optind..]. */
struct opts {
	const char *org, *role, *perms;
	int64_t sandboxes, cpu_milli, memory_mb, max_lifetime_ms;
	struct sandbox_server_spec srv;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "org", required_argument, NULL, 'o' },
		{ "role", required_argument, NULL, 'r' },
		{ "perms", required_argument, NULL, 'p' },
		{ "sandboxes", required_argument, NULL, 's' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "memory-mb", required_argument, NULL, 'm' },
		{ "id", required_argument, NULL, 'i' },
		{ "name", required_argument, NULL, 'n' },
		{ "endpoint", required_argument, NULL, 'e' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "tls-ca", required_argument, NULL, 'A' },
		{ "ssh-key", required_argument, NULL, 'S' },
		{ "known-hosts", required_argument, NULL, 'H' },
		{ "pool", required_argument, NULL, 'P' },
		{ "orgs", required_argument, NULL, 'O' },
		{ "no-pooling", no_argument, NULL, 'N' },
		{ "allow-unfiltered", no_argument, NULL, 'U' },
		{ "max-lifetime", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	long long n;
	double d;
	int c;

	memset(o, 0, sizeof(*o));
	o->sandboxes = o->cpu_milli = o->memory_mb = o->max_lifetime_ms = -1;
	o->srv.pooled = 1;
	optind = 0; /* 0: GNU getopt starts afresh */
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->org = optarg;
			break;
		case 'r':
			o->role = optarg;
			break;
		case 'p':
			o->perms = optarg;
			break;
		case 's':
			if (parse_ll(optarg, 0, 1000000, &n) < 0)
				return usage_error(
					"--sandboxes must be a whole number (0 = no limit)");
			o->sandboxes = n;
			break;
		case 'c':
			if (parse_double(optarg, &d) < 0 || d < 0 || d > 100000)
				return usage_error("--cpu must be a number of CPUs (0 = no limit)");
			o->cpu_milli = (int64_t)(d * 1000 + 0.5);
			break;
		case 'm':
			if (parse_ll(optarg, 0, 1LL << 40, &n) < 0)
				return usage_error(
					"--memory-mb must be a whole number (0 = no limit)");
			o->memory_mb = n;
			break;
		case 'i':
			o->srv.id = optarg;
			break;
		case 'n':
			o->srv.name = optarg;
			break;
		case 'e':
			o->srv.endpoint = optarg;
			break;
		case 'C':
			o->srv.tls_cert = optarg;
			break;
		case 'K':
			o->srv.tls_key = optarg;
			break;
		case 'A':
			o->srv.tls_ca = optarg;
			break;
		case 'S':
			o->srv.ssh_key = optarg;
			break;
		case 'H':
			o->srv.ssh_known_hosts = optarg;
			break;
		case 'P':
			o->srv.pool = optarg;
			break;
		case 'O':
			o->srv.orgs = optarg;
			break;
		case 'U':
			o->srv.allow_unfiltered = 1;
			break;
		case 'N':
			o->srv.pooled = 0;
			break;
		case 'L':
			/* the hard deadline's limit: 10 s to the default 24 h */
			if (parse_ll(optarg, 0, SB_MAX_LIFETIME_MS / 1000, &n) < 0 ||
			    (n > 0 && n < SB_MIN_LIFETIME_MS / 1000))
				return usage_error(
					"--max-lifetime: 10 to 86400 seconds (0 = no limit "
					"of its own)");
			o->max_lifetime_ms = n * 1000;
			o->srv.max_lifetime_ms = n * 1000;
			break;
		default:
			return usage_error("unknown option");
		}
	}
	if (o->org && !valid_org(o->org))
		return usage_error("--org: lower-case letters, digits, '-' and '_', up to 63");
	return 0;
}

static int need_org(const struct opts *o)
{
	return o->org ? 0 : usage_error("--org ORG is required");
}

static int keys_create(const struct config *cfg, struct store *st, const struct opts *o)
{
	char key[64], hash[65], key_id[17], *custom = NULL;
	struct sp_err e;
	const char *role = o->role ? o->role : "owner";

	if (need_org(o))
		return 2;
	if (!perms_builtin_role(role)) {
		if (store_role_get(st, o->org, role, &custom, &e) < 0) {
			fprintf(stderr,
				"sandpit: no role '%s' in %s (built in: owner, admin, member; "
				"see roles create)\n",
				role, o->org);
			return 1;
		}
		free(custom);
	}
	crypto_new_api_key(key, sizeof(key));
	crypto_random_id(key_id, 16);
	crypto_key_hash(cfg->data_key, key, strlen(key), hash);
	if (store_key_put(st, hash, o->org, role, key_id, &e) < 0) {
		explicit_bzero(key, sizeof(key));
		return fail(e.msg);
	}
	printf("%s\n", key);
	fprintf(stderr, "key id %s for org %s, role %s; the key is shown only this once\n", key_id,
		o->org, role);
	explicit_bzero(key, sizeof(key));
	return 0;
}

static int keys_list(struct store *st, const struct opts *o)
{
	struct store_rec recs[256] = { 0 };
	struct sp_err e;
	int n;

	if (need_org(o))
		return 2;
	n = store_key_list(st, o->org, recs, 256, &e);
	if (n < 0)
		return fail(e.msg);
	printf("%-18s %-12s %s\n", "KEY ID", "ROLE", "CREATED");
	for (int i = 0; i < n; i++) {
		const char *created = store_rec_get(&recs[i], "createdAt");
		long long ms = 0;
		char iso[40] = "-";
		if (created && parse_ll(created, 0, 1LL << 50, &ms) == 0)
			iso8601_ms(ms, iso, sizeof(iso));
		printf("%-18s %-12s %s\n", store_rec_get(&recs[i], "keyId"),
		       store_rec_get(&recs[i], "role"), iso);
		store_rec_free(&recs[i]);
	}
	return 0;
}

static int roles_cmd(struct store *st, const char *action, const struct opts *o, int argc,
		     char **argv)
{
	struct store_rec rec = { 0 };
	struct sp_err e;
	char bad[128];

	if (need_org(o))
		return 2;
	if (strcmp(action, "list") == 0) {
		if (store_role_list(st, o->org, &rec, &e) < 0)
			return fail(e.msg);
		printf("%-20s %s\n", "ROLE", "PERMISSIONS");
		printf("%-20s %s\n%-20s %s\n%-20s %s\n", "owner", perms_builtin_role("owner"),
		       "admin", perms_builtin_role("admin"), "member", "(none)");
		for (int i = 0; i < rec.n; i++)
			printf("%-20s %s\n", rec.name[i],
			       rec.value[i][0] ? rec.value[i] : "(none)");
		store_rec_free(&rec);
		return 0;
	}
	if (argc != 1)
		return usage_error("give exactly one role NAME");
	if (strcmp(action, "create") == 0) {
		if (!perms_valid_role_name(argv[0]))
			return usage_error(
				"role NAME: lower-case letters, digits, '-' and '_', up to "
				"32, not owner, admin or member");
		if (!o->perms)
			return usage_error("--perms P[,P...] is required");
		if (perms_check_list(o->perms, bad, sizeof(bad)) < 0) {
			fprintf(stderr,
				"sandpit: unknown permission '%s' (known: sandbox:read, "
				"sandbox:create, sandbox:delete)\n",
				bad);
			return 2;
		}
		if (store_org_add(st, o->org, &e) < 0 ||
		    store_role_put(st, o->org, argv[0], o->perms, &e) < 0)
			return fail(e.msg);
		return 0;
	}
	if (strcmp(action, "delete") == 0)
		return store_role_del(st, o->org, argv[0], &e) < 0 ? fail(e.msg) : 0;
	return usage_error("roles: create, list or delete");
}

static int quota_cmd(struct store *st, const char *action, const struct opts *o)
{
	struct store_rec rec = { 0 };
	struct sp_err e;

	if (need_org(o))
		return 2;
	if (strcmp(action, "set") == 0) {
		if (o->sandboxes < 0 && o->cpu_milli < 0 && o->memory_mb < 0 &&
		    o->max_lifetime_ms < 0)
			return usage_error("quota set: give --sandboxes, --cpu, --memory-mb and/or "
					   "--max-lifetime");
		if (store_org_add(st, o->org, &e) < 0 ||
		    store_quota_set(st, o->org, o->sandboxes, o->cpu_milli, o->memory_mb,
				    o->max_lifetime_ms, &e) < 0)
			return fail(e.msg);
		return 0;
	}
	if (strcmp(action, "show") == 0) {
		const char *v;
		long long n;
		if (store_quota_get(st, o->org, &rec, &e) < 0)
			return fail(e.msg);
		v = store_rec_get(&rec, "sandboxes");
		printf("%-10s %s\n", "sandboxes", v ? v : "unlimited");
		v = store_rec_get(&rec, "cpuMilli");
		if (v && parse_ll(v, 0, 1LL << 50, &n) == 0)
			printf("%-10s %g\n", "cpu", (double)n / 1000);
		else
			printf("%-10s %s\n", "cpu", "unlimited");
		v = store_rec_get(&rec, "memoryMb");
		printf("%-10s %s%s\n", "memory", v ? v : "unlimited", v ? " MiB" : "");
		v = store_rec_get(&rec, "maxLifetimeMs");
		if (v && parse_ll(v, 1, 1LL << 50, &n) == 0)
			printf("%-10s %lld s\n", "lifetime", n / 1000);
		else
			printf("%-10s %d s (the default)\n", "lifetime", SB_MAX_LIFETIME_MS / 1000);
		store_rec_free(&rec);
		return 0;
	}
	return usage_error("quota: set or show");
}

static int orgs_cmd(struct store *st, const char *action, int argc, char **argv)
{
	struct sp_err e;

	if (strcmp(action, "create") == 0) {
		if (argc != 1 || !valid_org(argv[0]))
			return usage_error(
				"orgs create ORG (lower-case letters, digits, '-' and '_')");
		return store_org_add(st, argv[0], &e) < 0 ? fail(e.msg) : 0;
	}
	if (strcmp(action, "list") == 0) {
		char **names;
		int n;
		if (store_org_list(st, &names, &n, &e) < 0)
			return fail(e.msg);
		for (int i = 0; i < n; i++) {
			printf("%s\n", names[i]);
			free(names[i]);
		}
		free(names);
		return 0;
	}
	return usage_error("orgs: create or list");
}

/* Runs server id's network check and says the result on stderr. */
static int server_check(const struct config *cfg, const char *id)
{
	struct sandbox_ctx ctx;
	struct sp_err e;
	char *json = NULL;
	int rc;

	if (sandbox_ctx_init(&ctx, cfg, &e) < 0)
		return fail(e.msg);
	rc = sandbox_server_check(&ctx, id, &e);
	if (rc == 0 && store_server_get(ctx.st, id, &json, &e) == 0) {
		json_object *o = json_tokener_parse(json), *v;
		const char *st = "", *d = "";
		if (o && json_object_object_get_ex(o, "netCheck", &v))
			st = json_object_get_string(v);
		if (o && json_object_object_get_ex(o, "netCheckDetail", &v))
			d = json_object_get_string(v);
		fprintf(stderr, "sandpit: server %s: network check %s%s%s\n", id, st,
			d[0] ? ": " : "", d);
		if (strcmp(st, "pass") != 0)
			fprintf(stderr,
				"sandpit: server %s gets no sandboxes until it passes (add the deny "
				"rules, then `servers check %s`) unless it has --allow-unfiltered\n",
				id, id);
		json_object_put(o);
		free(json);
	}
	sandbox_ctx_cleanup(&ctx);
	return rc < 0 ? fail(e.msg) : 0;
}

/* A server row as `servers list` prints it: the record's fields (those
 * set), then its load. */
static json_object *server_json(const struct sandbox_server_row *row)
{
	json_object *o = sandbox_server_json(&row->s);

	if (row->has_load) {
		json_object_object_add(o, "sandboxes", json_object_new_int64(row->sandboxes));
		json_object_object_add(o, "cpuReserved",
				       json_object_new_double((double)row->cpu_milli / 1000));
		json_object_object_add(o, "memoryMbReserved",
				       json_object_new_int64(row->memory_mb));
	}
	return o;
}

static int servers_cmd(const struct config *cfg, struct store *st, const char *action,
		       const struct opts *o, int argc, char **argv)
{
	struct sp_err e;

	if (strcmp(action, "add") == 0 && argc == 0) {
		if (sandbox_server_add(st, &o->srv, &e) < 0)
			return fail(e.msg);
		return server_check(cfg, o->srv.id);
	}
	if (strcmp(action, "check") == 0 && argc == 1)
		return server_check(cfg, argv[0]);
	if (strcmp(action, "list") == 0 && argc == 0) {
		json_object *arr;
		struct sandbox_server_row *rows;
		size_t n;
		if (sandbox_server_list(st, &rows, &n, &e) < 0)
			return fail(e.msg);
		arr = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(arr, server_json(&rows[i]));
		free(rows);
		printf("%s\n",
		       json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
		return 0;
	}
	if (strcmp(action, "remove") == 0 && argc == 1)
		return store_server_del(st, argv[0], &e) < 0 ? fail(e.msg) : 0;
	return usage_error("servers: add, check ID, list or remove ID");
}

int operator_main(const char *config_path, int argc, char **argv)
{
	static struct config cfg;
	struct store *st;
	struct opts o;
	struct sp_err e;
	char err[1024];
	const char *group, *action;
	int rc;

	if (argc < 2)
		return usage_error("give a command and an action");
	group = argv[0];
	action = argv[1];
	/* getopt wants argv[0] to be a name: parse from the action on */
	rc = parse_opts(argc - 1, argv + 1, &o);
	if (rc)
		return rc;
	argc -= 1 + optind;
	argv += 1 + optind;
	if (crypto_init() < 0 || config_load(config_path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "sandpit: configuration error: %s\n", err);
		return 1;
	}
	st = store_open(cfg.redis_url, cfg.redis_prefix, &e);
	if (!st) {
		config_wipe(&cfg);
		return fail(e.msg);
	}
	if (strcmp(group, "keys") == 0 && strcmp(action, "create") == 0 && argc == 0)
		rc = keys_create(&cfg, st, &o);
	else if (strcmp(group, "keys") == 0 && strcmp(action, "list") == 0 && argc == 0)
		rc = keys_list(st, &o);
	else if (strcmp(group, "keys") == 0 && strcmp(action, "revoke") == 0 && argc == 1)
		rc = store_key_revoke(st, argv[0], &e) < 0 ? fail(e.msg) : 0;
	else if (strcmp(group, "orgs") == 0)
		rc = orgs_cmd(st, action, argc, argv);
	else if (strcmp(group, "roles") == 0)
		rc = roles_cmd(st, action, &o, argc, argv);
	else if (strcmp(group, "quota") == 0)
		rc = quota_cmd(st, action, &o);
	else if (strcmp(group, "servers") == 0)
		rc = servers_cmd(&cfg, st, action, &o, argc, argv);
	else
		rc = usage_error("unknown command");
	store_close(st);
	config_wipe(&cfg);
	return rc;
}

/*
 * sandpit: the command line. For now the operator's admin commands, which
 * talk to Redis directly with the server's configuration: keys and orgs.
 * A new key is printed once, on stdout, and only its keyed hash is stored.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/config.h"
#include "../common/crypto.h"
#include "../store/store.h"

static const char usage_text[] =
	"usage: sandpit [-c CONFIG] COMMAND\n"
	"\n"
	"Admin commands (talk to Redis with the server's configuration):\n"
	"  keys create --org NAME [--role owner|admin|member]\n"
	"                          create an API key; it is printed once\n"
	"  keys revoke KEY_ID      revoke a key by its id\n"
	"  orgs create NAME        register an organization\n"
	"\n"
	"CONFIG defaults to $SANDPIT_CONFIG, then /etc/sandpit/sandpitd.conf.\n";

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

static int keys_create(const struct config *cfg, struct store *st, int argc, char **argv)
{
	const char *org = NULL, *role = "owner";
	char key[64], hash[65], key_id[17];
	struct sp_err e;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--org") == 0 && i + 1 < argc)
			org = argv[++i];
		else if (strcmp(argv[i], "--role") == 0 && i + 1 < argc)
			role = argv[++i];
		else {
			fprintf(stderr, "sandpit keys create: unexpected '%s'\n%s", argv[i], usage_text);
			return 2;
		}
	}
	if (!org || !valid_org(org)) {
		fprintf(stderr, "sandpit keys create: --org NAME is required (lower-case letters, "
				"digits, '-' and '_', up to 63)\n");
		return 2;
	}
	if (strcmp(role, "owner") && strcmp(role, "admin") && strcmp(role, "member")) {
		fprintf(stderr, "sandpit keys create: --role must be owner, admin or member\n");
		return 2;
	}
	crypto_new_api_key(key, sizeof(key));
	crypto_random_id(key_id, 16);
	crypto_key_hash(cfg->data_key, key, strlen(key), hash);
	if (store_key_put(st, hash, org, role, key_id, &e) < 0) {
		fprintf(stderr, "sandpit: %s\n", e.msg);
		explicit_bzero(key, sizeof(key));
		return 1;
	}
	printf("%s\n", key);
	fprintf(stderr, "key id %s for org %s, role %s; the key is shown only this once\n", key_id,
		org, role);
	explicit_bzero(key, sizeof(key));
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = getenv("SANDPIT_CONFIG");
	static struct config cfg;
	struct store *st;
	struct sp_err e;
	char err[1024];
	int opt, rc = 2;

	if (!path || !*path)
		path = "/etc/sandpit/sandpitd.conf";
	while ((opt = getopt(argc, argv, "+c:h")) != -1) {
		if (opt == 'c')
			path = optarg;
		else {
			fputs(usage_text, opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (crypto_init() < 0 || config_load(path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "sandpit: configuration error: %s\n", err);
		return 1;
	}
	st = store_open(cfg.redis_url, cfg.redis_prefix, &e);
	if (!st) {
		fprintf(stderr, "sandpit: %s\n", e.msg);
		return 1;
	}
	if (strcmp(argv[0], "keys") == 0 && strcmp(argv[1], "create") == 0) {
		rc = keys_create(&cfg, st, argc - 2, argv + 2);
	} else if (strcmp(argv[0], "keys") == 0 && strcmp(argv[1], "revoke") == 0 && argc == 3) {
		rc = store_key_revoke(st, argv[2], &e) < 0 ? 1 : 0;
		if (rc)
			fprintf(stderr, "sandpit: %s\n", e.msg);
	} else if (strcmp(argv[0], "orgs") == 0 && strcmp(argv[1], "create") == 0 && argc == 3) {
		if (!valid_org(argv[2])) {
			fprintf(stderr, "sandpit: bad organization name\n");
			rc = 2;
		} else {
			rc = store_org_add(st, argv[2], &e) < 0 ? 1 : 0;
			if (rc)
				fprintf(stderr, "sandpit: %s\n", e.msg);
		}
	} else {
		fputs(usage_text, stderr);
	}
	store_close(st);
	config_wipe(&cfg);
	return rc;
}

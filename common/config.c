/*
 * Loads sandpitd.conf: "key = value" lines, '#' starts a comment, blank
 * lines ignored. Every key is known; an unknown key or a bad value fails the
 * whole load with a message naming the line, so a reload never applies half
 * a file. The data key is read from data_key_file and is the one secret this
 * struct holds; config_wipe clears it.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>
#include <sodium.h>

#include "util.h"

static const struct {
	const char *name, *image, *env, *description;
} builtin_templates[] = {
	/* The images images/build.sh builds from Debian's packages (`make
	 * images`); `template.NAME = IMAGE` maps a template to another image,
	 * e.g. an upstream one where a registry can be reached. */
	{ "base", "sandpit/base:latest", "",
	  "Debian 12 with a POSIX shell, coreutils, curl and git" },
	{ "alpine", "sandpit/busybox:latest", "", "A busybox userland (no package manager)" },
	{ "python", "sandpit/python:latest", "",
	  "Python 3 with its standard library, pip and venv" },
	{ "node", "sandpit/node:latest", "", "Node.js with npm" },
	{ "bun", "sandpit/bun:latest", "", "Bun (runtime, package manager, bundler)" },
	{ "deno", "sandpit/deno:latest", "DENO_DIR=~/.deno\n", "Deno (DENO_DIR in the home)" },
	{ "go", "sandpit/go:latest", "", "Go with gcc for cgo" },
	{ "rust", "sandpit/rust:latest", "CARGO_HOME=~/.cargo\n",
	  "Rust with cargo (CARGO_HOME in the home)" },
	{ "ruby", "sandpit/ruby:latest", "GEM_HOME=~/.gem\nBUNDLE_APP_CONFIG=~/.bundle\n",
	  "Ruby with gem and Bundler (GEM_HOME and BUNDLE_APP_CONFIG in the home)" },
	{ "java", "sandpit/java:latest", "", "Java (OpenJDK JDK: javac, java, jshell)" },
	{ "php", "sandpit/php:latest", "", "PHP (CLI) with Composer" },
};

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	str_copy(cfg->listen, sizeof(cfg->listen), "/run/sandpit/sandpitd.sock");
	cfg->listen_mode = 0660;
	cfg->workers_min = 2;
	cfg->workers_max = 32;
	cfg->max_requests = 1000;
	cfg->idle_timeout_s = 10;
	cfg->drain_timeout_s = 660;
	cfg->crash_limit = 10;
	cfg->crash_window_s = 10;
	cfg->worker_max_rss_mb = 256;
	cfg->workers_reserved = 2;
	str_copy(cfg->log_level, sizeof(cfg->log_level), "info");
	str_copy(cfg->redis_url, sizeof(cfg->redis_url), "unix:///run/sandpit/redis.sock");
	str_copy(cfg->redis_prefix, sizeof(cfg->redis_prefix), "sp");
	cfg->redis_wait_timeout_ms = 1000;
	str_copy(cfg->docker_host, sizeof(cfg->docker_host), "unix:///var/run/docker.sock");
	cfg->docker_timeout_s = 30;
	cfg->pull_timeout_s = 300;
	cfg->docker_stuck_ms = 5000;
	cfg->rate_per_min = 3000;
	cfg->rate_burst = 100;
	str_copy(cfg->data_key_file, sizeof(cfg->data_key_file), "/etc/sandpit/data.key");
	str_copy(cfg->ssh_control_dir, sizeof(cfg->ssh_control_dir), "/tmp/sandpit-ssh");
	cfg->server_connect_timeout_ms = 3000;
	str_copy(cfg->naming, sizeof(cfg->naming), "sandpit");
	str_copy(cfg->network_prefix, sizeof(cfg->network_prefix), "sandpit");
	str_copy(cfg->label_prefix, sizeof(cfg->label_prefix), "sandpit");
	str_copy(cfg->deny_cidrs, sizeof(cfg->deny_cidrs), "169.254.0.0/16,100.100.100.200/32");
	str_copy(cfg->probe_ports, sizeof(cfg->probe_ports), "22,80,443,2375,2376,6379");
	str_copy(cfg->volume_dirs, sizeof(cfg->volume_dirs), "/data /mnt /srv /workspace");
	cfg->retention_s = 7 * 24 * 3600;
	cfg->transfer_max_mb = 1024;
	cfg->request_timeout = 60;
	cfg->transfer_min_kbps = 64;
	cfg->create_timeout_s = 30;
	cfg->keeper_uid = 65533;
	cfg->reaper_interval_s = 5;
	str_copy(cfg->default_runtime, sizeof(cfg->default_runtime), "runc");
	str_copy(cfg->stop_mode, sizeof(cfg->stop_mode), "preserve");
	str_copy(cfg->gvisor_runtime_isolated, sizeof(cfg->gvisor_runtime_isolated),
		 "runsc-isolated");
	str_copy(cfg->gvisor_runtime_internet, sizeof(cfg->gvisor_runtime_internet),
		 "runsc-internet");
	str_copy(cfg->disk_limit, sizeof(cfg->disk_limit), "auto");
	str_copy(cfg->disk_dir, sizeof(cfg->disk_dir), "/var/lib/sandpit/disk");
	cfg->disk_default_mb = 1024;
	cfg->disk_max_mb = 16384;
	cfg->disk_reserve_mb = 2048;
	cfg->disk_reserve_inodes = 100000;
	cfg->disk_overcommit_pct = 100;
	cfg->volume_size_mb = 1024;
	cfg->disk_readonly_rootfs = 1;
	cfg->fast_path = 1;
	str_copy(cfg->stream_listen, sizeof(cfg->stream_listen), "/run/sandpit/stream.sock");
	cfg->stream_workers = 1;
	cfg->stream_stuck_timeout_s = 30;
	cfg->stream_max_message = 1048576;
	for (size_t i = 0; i < sizeof(builtin_templates) / sizeof(builtin_templates[0]); i++) {
		struct template_conf *t = &cfg->templates[cfg->ntemplates++];
		str_copy(t->name, sizeof(t->name), builtin_templates[i].name);
		str_copy(t->image, sizeof(t->image), builtin_templates[i].image);
		str_copy(t->env, sizeof(t->env), builtin_templates[i].env);
		str_copy(t->description, sizeof(t->description), builtin_templates[i].description);
	}
}

const struct template_conf *config_template(const struct config *cfg, const char *name)
{
	for (int i = 0; i < cfg->ntemplates; i++)
		if (strcmp(cfg->templates[i].name, name) == 0)
			return &cfg->templates[i];
	return NULL;
}

enum kind { K_STR, K_INT, K_BOOL, K_MODE };

static const struct key {
	const char *name;
	enum kind kind;
	size_t off, size;
	long long min, max;
} keys[] = {
#define S(f) #f, K_STR, offsetof(struct config, f), sizeof(((struct config *)0)->f), 0, 0
#define I(f, lo, hi) #f, K_INT, offsetof(struct config, f), sizeof(int), lo, hi
	{ S(listen) },
	{ "listen_mode", K_MODE, offsetof(struct config, listen_mode), sizeof(int), 0, 0777 },
	{ I(workers_min, 1, 1024) },
	{ I(workers_max, 1, 1024) },
	{ I(max_requests, 1, 100000000) },
	{ I(idle_timeout_s, 1, 86400) },
	{ I(drain_timeout_s, 1, 86400) },
	{ I(crash_limit, 1, 100000) },
	{ I(crash_window_s, 1, 86400) },
	{ I(worker_max_rss_mb, 0, 1048576) },
	{ I(workers_reserved, 0, 64) },
	{ S(listen_fast) },
	{ I(org_long_requests, 0, 1024) },
	{ S(log_level) },
	{ "log_json", K_BOOL, offsetof(struct config, log_json), sizeof(int), 0, 1 },
	{ S(redis_url) },
	{ S(redis_prefix) },
	{ S(redis_sentinels) },
	{ S(redis_master_name) },
	{ I(redis_wait_replicas, 0, 16) },
	{ I(redis_wait_timeout_ms, 1, 10000) },
	{ S(docker_host) },
	{ I(docker_timeout_s, 1, 3600) },
	{ I(pull_timeout_s, 1, 86400) },
	{ I(docker_inflight_max, 0, 32) },
	{ I(docker_stuck_ms, 0, 600000) },
	{ I(rate_per_min, 0, 60000000) },
	{ I(rate_burst, 0, 1000000) },
	{ "allow_old_runc", K_BOOL, offsetof(struct config, allow_old_runc), sizeof(int), 0, 1 },
	{ S(ssh_control_dir) },
	{ I(server_connect_timeout_ms, 100, 600000) },
	{ S(placement_pool) },
	{ S(public_url) },
	{ S(preview_domain) },
	{ "preview_require_key", K_BOOL, offsetof(struct config, preview_require_key), sizeof(int),
	  0, 1 },
	{ S(image_registry) },
	{ S(image_registry_auth_file) },
	{ S(image_allow) },
	{ "image_pull", K_BOOL, offsetof(struct config, image_pull), sizeof(int), 0, 1 },
	{ S(volume_dirs) },
	{ "fast_path", K_BOOL, offsetof(struct config, fast_path), sizeof(int), 0, 1 },
	{ S(data_key_file) },
	{ S(naming) },
	{ S(network_prefix) },
	{ S(label_prefix) },
	{ S(container_label) },
	{ S(deny_cidrs) },
	{ "allow_unfiltered_local", K_BOOL, offsetof(struct config, allow_unfiltered_local),
	  sizeof(int), 0, 1 },
	{ S(probe_image) },
	{ S(probe_ports) },
	{ I(retention_s, 0, 365 * 86400) },
	{ I(transfer_max_mb, 11, 1048576) },
	{ I(request_timeout, 1, 3600) },
	{ I(transfer_min_kbps, 0, 1048576) },
	{ I(create_timeout_s, 5, 86400) },
	{ I(keeper_uid, 1, 2147483646) },
	{ I(reaper_interval_s, 0, 3600) },
	{ S(default_runtime) },
	{ S(stop_mode) },
	{ S(gvisor_runtime_isolated) },
	{ S(gvisor_runtime_internet) },
	{ S(disk_limit) },
	{ S(disk_dir) },
	{ I(disk_default_mb, 16, 1048576) },
	{ I(disk_max_mb, 16, 1048576) },
	{ I(disk_reserve_mb, 0, 1 << 30) },
	{ I(disk_reserve_inodes, 0, 1 << 30) },
	{ I(disk_overcommit_pct, 0, 100000) },
	{ I(volume_size_mb, 16, 1048576) },
	{ "disk_preallocate", K_BOOL, offsetof(struct config, disk_preallocate), sizeof(int), 0,
	  1 },
	{ "disk_readonly_rootfs", K_BOOL, offsetof(struct config, disk_readonly_rootfs),
	  sizeof(int), 0, 1 },
	{ "disk_require_limit", K_BOOL, offsetof(struct config, disk_require_limit), sizeof(int), 0,
	  1 },
	{ S(stream_listen) },
	{ I(stream_workers, 1, 64) },
	{ I(stream_stuck_timeout_s, 1, 3600) },
	{ I(stream_max_message, 1024, 16777216) },
#undef S
#undef I
};

/* public_url: "" or http(s)://host[:port][/path] without a query, a
 * fragment, a trailing '/' or characters a URL must escape; it is the
 * origin (and path prefix) of every sandbox endpoint's URI. */
static int public_url_check(const char *u, char *msg, size_t cap)
{
	const char *rest;

	if (!*u)
		return 0;
	if (strncmp(u, "https://", 8) == 0)
		rest = u + 8;
	else if (strncmp(u, "http://", 7) == 0)
		rest = u + 7;
	else
		return snprintf(msg, cap, "must start with https:// or http://"), -1;
	if (strlen(u) > 200)
		return snprintf(msg, cap, "at most 200 bytes"), -1;
	if (!*rest || *rest == '/' || u[strlen(u) - 1] == '/')
		return snprintf(msg, cap, "expected scheme://host[:port][/path], no trailing '/'"),
		       -1;
	for (const char *c = rest; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".-_~:/[]", *c))
			return snprintf(msg, cap,
					"'%c' is not allowed (no query, fragment or escapes)", *c),
			       -1;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int valid_name_chars(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
			return 0;
	return 1;
}

/* container_label: empty, or up to 8 KEY=VALUE pairs separated by spaces,
 * KEY of letters, digits and . - _ (at most 100 bytes, not sandpit's own
 * <label_prefix>.*), VALUE printable ASCII without spaces. */
static int container_label_check(const struct config *cfg, char *msg, size_t cap)
{
	const char *s = cfg->container_label;
	size_t plen = strlen(cfg->label_prefix);
	int pairs = 0;

	for (s += strspn(s, " \t"); *s; s += strspn(s, " \t")) {
		size_t n = strcspn(s, " \t");
		const char *eq = memchr(s, '=', n);
		if (!eq || eq == s || eq - s > 100 || ++pairs > 8)
			goto bad;
		for (const char *p = s; p < eq; p++)
			if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
				goto bad;
		for (const char *p = eq + 1; p < s + n; p++)
			if (*p < 0x21 || *p > 0x7e)
				goto bad;
		if (strncmp(s, cfg->label_prefix, plen) == 0 && s[plen] == '.') {
			snprintf(msg, cap,
				 "container_label may not set sandpit's own labels (%s.*)",
				 cfg->label_prefix);
			return -1;
		}
		s += n;
	}
	return 0;
bad:
	snprintf(
		msg, cap,
		"container_label must be up to 8 KEY=VALUE pairs separated by spaces (KEY: at most "
		"100 letters, digits, . - _; VALUE: printable ASCII)");
	return -1;
}

/* "a.b.c.d/n" with n 0..32 and no leading zeros. */
static int valid_cidr(const char *s, size_t len)
{
	int parts = 0;
	size_t i = 0;

	while (parts < 4) {
		long v = 0;
		size_t start = i;
		while (i < len && isdigit((unsigned char)s[i]) && i - start < 3)
			v = v * 10 + (s[i++] - '0');
		if (i == start || v > 255 || (s[start] == '0' && i - start > 1))
			return 0;
		parts++;
		if (parts < 4 && (i >= len || s[i++] != '.'))
			return 0;
	}
	if (i >= len || s[i++] != '/')
		return 0;
	{
		long v = 0;
		size_t start = i;
		while (i < len && isdigit((unsigned char)s[i]) && i - start < 2)
			v = v * 10 + (s[i++] - '0');
		return i == len && i > start && v <= 32 && !(s[start] == '0' && i - start > 1);
	}
}

/* A list of items separated by commas and blanks, each accepted by ok. */
static int valid_list(const char *s, int (*ok)(const char *, size_t))
{
	while (*s) {
		size_t n = strcspn(s, ", \t");
		if (n && !ok(s, n))
			return 0;
		s += n;
		while (*s == ',' || *s == ' ' || *s == '\t')
			s++;
	}
	return 1;
}

/* An image_allow entry: [ORG=]pattern, the pattern a repository's
 * characters (lower-case letters, digits, . _ - / : @ and a digest's
 * hex), a '*' only at its end, never a sha256: ID or a bare hex one. */
static int valid_image_pattern(const char *s, size_t len)
{
	const char *eq = memchr(s, '=', len);
	size_t n;

	if (eq) {
		n = (size_t)(eq - s);
		if (n == 0 || n > 64)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
				return 0;
		len -= n + 1;
		s = eq + 1;
	}
	if (len == 0 || len > 255 || strncmp(s, "sha256:", 7) == 0)
		return 0;
	n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-/:@");
	if (n < len && !(n == len - 1 && s[n] == '*'))
		return 0;
	return 1;
}

/* A volume_dirs entry: an absolute, normalized folder other than /. */
static int valid_volume_dir(const char *s, size_t len)
{
	if (len < 2 || s[0] != '/' || s[len - 1] == '/')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/' && (s[i + 1] == '/' || s[i + 1] == '.'))
			return 0;
	return 1;
}

static int valid_port(const char *s, size_t len)
{
	long v = 0;

	if (len == 0 || len > 5 || s[0] == '0')
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v <= 65535;
}

static int set_template(struct config *cfg, const char *name, const char *image)
{
	struct template_conf *t = (struct template_conf *)config_template(cfg, name);

	if (!t) {
		if (cfg->ntemplates >= CONFIG_MAX_TEMPLATES)
			return -1;
		t = &cfg->templates[cfg->ntemplates++];
		str_copy(t->name, sizeof(t->name), name);
		t->env[0] = '\0';
		t->description[0] = '\0';
	}
	return str_copy(t->image, sizeof(t->image), image);
}

/* Parses "template=NAME size=N [network=isolated|internet] [ttl=S]". */
static int add_pool(struct config *cfg, const char *v, char *err, size_t errlen)
{
	struct pool_conf p = { "", "isolated", 0, 600 };
	char item[128];
	long long n;

	if (cfg->npools >= CONFIG_MAX_POOLS) {
		snprintf(err, errlen, "at most %d warm_pool lines", CONFIG_MAX_POOLS);
		return -1;
	}
	while (*v) {
		size_t len = strcspn(v, " \t");
		char *eq;
		if (len == 0) {
			v++;
			continue;
		}
		if (len >= sizeof(item)) {
			snprintf(err, errlen, "warm_pool: item too long");
			return -1;
		}
		memcpy(item, v, len);
		item[len] = '\0';
		v += len;
		eq = strchr(item, '=');
		if (!eq) {
			snprintf(err, errlen, "warm_pool: '%s' is not key=value", item);
			return -1;
		}
		*eq++ = '\0';
		if (strcmp(item, "template") == 0 && valid_name_chars(eq) &&
		    strlen(eq) < sizeof(p.template_name))
			str_copy(p.template_name, sizeof(p.template_name), eq);
		else if (strcmp(item, "network") == 0 &&
			 (strcmp(eq, "isolated") == 0 || strcmp(eq, "internet") == 0))
			str_copy(p.network, sizeof(p.network), eq);
		else if (strcmp(item, "size") == 0 && parse_ll(eq, 1, 64, &n) == 0)
			p.size = (int)n;
		else if (strcmp(item, "ttl") == 0 && parse_ll(eq, 60, 86400, &n) == 0)
			p.ttl_s = (int)n;
		else {
			snprintf(
				err, errlen,
				"warm_pool: bad %s (template=NAME size=1..64 network=isolated|internet "
				"ttl=60..86400)",
				item);
			return -1;
		}
	}
	if (!p.template_name[0] || !p.size) {
		snprintf(err, errlen, "warm_pool needs template=NAME and size=N");
		return -1;
	}
	cfg->pools[cfg->npools++] = p;
	return 0;
}

static int set_key(struct config *cfg, const char *k, const char *v, char *err, size_t errlen)
{
	long long n;

	if (strcmp(k, "warm_pool") == 0)
		return add_pool(cfg, v, err, errlen);

	if (strncmp(k, "template.", 9) == 0) {
		if (!valid_name_chars(k + 9) || strlen(k + 9) >= sizeof(cfg->templates[0].name)) {
			snprintf(err, errlen, "bad template name '%s'", k + 9);
			return -1;
		}
		if (!*v || set_template(cfg, k + 9, v) < 0) {
			snprintf(err, errlen, "bad image for %s", k);
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct key *key = &keys[i];
		char *field = (char *)cfg + key->off;
		if (strcmp(k, key->name) != 0)
			continue;
		switch (key->kind) {
		case K_STR:
			if (str_copy(field, key->size, v) < 0) {
				snprintf(err, errlen, "%s is too long (max %zu bytes)", k,
					 key->size - 1);
				return -1;
			}
			return 0;
		case K_BOOL:
			if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
				*(int *)field = 1;
			else if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0 ||
				 strcmp(v, "0") == 0)
				*(int *)field = 0;
			else {
				snprintf(err, errlen, "%s must be yes or no", k);
				return -1;
			}
			return 0;
		case K_MODE: {
			char *end;
			long m;
			errno = 0;
			m = strtol(v, &end, 8);
			if (errno || *end || end == v || m < 0 || m > 0777) {
				snprintf(err, errlen, "%s must be an octal mode like 0660", k);
				return -1;
			}
			*(int *)field = (int)m;
			return 0;
		}
		case K_INT:
			if (parse_ll(v, key->min, key->max, &n) < 0) {
				snprintf(err, errlen, "%s must be an integer in %lld..%lld", k,
					 key->min, key->max);
				return -1;
			}
			*(int *)field = (int)n;
			return 0;
		}
	}
	snprintf(err, errlen, "unknown key '%s'", k);
	return -1;
}

/* "host:port" in len bytes (spaces around allowed, IPv6 in [brackets]). */
static int valid_hostport(const char *s, size_t len)
{
	const char *colon = memrchr(s, ':', len);
	char port[8];
	size_t plen;
	long long p;

	if (!colon || colon == s ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:[]-_ ") <
		    len)
		return 0;
	plen = len - (size_t)(colon + 1 - s);
	if (plen >= sizeof(port))
		return 0;
	memcpy(port, colon + 1, plen);
	port[plen] = '\0';
	return parse_ll(trim(port), 1, 65535, &p) == 0;
}

/* With redis_sentinels set, rewrites redis_url into the form store_open
 * reads: sentinel://h:p,h:p/<master name>/<db>, the db taken from a
 * redis://host:port/db url (else 0); the host and port of that url are not
 * used. Appends ?wait=N&wait_ms=T when redis_wait_replicas > 0. */
static int redis_sentinel_url(struct config *cfg, char *err, size_t errlen)
{
	char url[sizeof(cfg->redis_url)];
	const char *s = cfg->redis_sentinels, *slash;
	long long db = 0;
	int n;

	if (cfg->redis_sentinels[0]) {
		if (!valid_name_chars(cfg->redis_master_name)) {
			snprintf(err, errlen,
				 "redis_sentinels needs redis_master_name "
				 "(letters, digits, - and _)");
			return -1;
		}
		for (n = 0; *s; n++) {
			const char *end = strchr(s, ',');
			size_t len = end ? (size_t)(end - s) : strlen(s);

			if (n == 8 || !valid_hostport(s, len)) {
				snprintf(err, errlen,
					 "redis_sentinels must be host:port,host:port,... "
					 "(at most 8)");
				return -1;
			}
			s += len + (end ? 1 : 0);
		}
		if (strncmp(cfg->redis_url, "redis://", 8) == 0 &&
		    (slash = strchr(cfg->redis_url + 8, '/')) && slash[1] &&
		    parse_ll(slash + 1, 0, 1000, &db) < 0) {
			snprintf(err, errlen, "redis_url: bad db number");
			return -1;
		}
		n = snprintf(url, sizeof(url), "sentinel://%s/%s/%lld", cfg->redis_sentinels,
			     cfg->redis_master_name, db);
		if (n < 0 || (size_t)n >= sizeof(url))
			return -1;
		str_copy(cfg->redis_url, sizeof(cfg->redis_url), url);
	}
	if (cfg->redis_wait_replicas > 0 && !strchr(cfg->redis_url, '?')) {
		n = snprintf(url, sizeof(url), "%s?wait=%d&wait_ms=%d", cfg->redis_url,
			     cfg->redis_wait_replicas, cfg->redis_wait_timeout_ms);
		if (n < 0 || (size_t)n >= sizeof(url)) {
			snprintf(err, errlen, "redis_url is too long");
			return -1;
		}
		str_copy(cfg->redis_url, sizeof(cfg->redis_url), url);
	}
	return 0;
}

/* One repository path component as Docker takes it: [a-z0-9]+ joined by
 * '.', '_', '__' or '-' runs. */
static int repo_component_ok(const char *p, size_t n)
{
	if (n == 0 || !isalnum((unsigned char)p[0]) || !isalnum((unsigned char)p[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789._-", p[i]) ||
		    (p[i] == '.' && p[i + 1] == '.'))
			return 0;
	return 1;
}

/* image_registry: a registry host (a DNS name with a dot, localhost or an
 * IPv4 address) with an optional :port, then optional /prefix components,
 * so that Docker never reads it as a Docker Hub namespace. */
static int registry_check(const char *r, char *err, size_t errlen)
{
	size_t host = strcspn(r, ":/"), port = 0, n = strlen(r);
	const char *p;

	if (n > 180) /* its repositories (+ /<org key>/snapshot-<id>:latest) stay in 255 */
		goto bad;
	if (host == 0 || strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789.-") != host ||
	    r[0] == '.' || r[0] == '-' || r[host - 1] == '.' ||
	    (!memchr(r, '.', host) && !(host == 9 && strncmp(r, "localhost", 9) == 0)))
		goto bad;
	p = r + host;
	if (*p == ':') {
		port = strspn(p + 1, "0123456789");
		if (port == 0 || port > 5)
			goto bad;
		p += 1 + port;
	}
	while (*p == '/') {
		size_t c = strcspn(p + 1, "/");
		if (!repo_component_ok(p + 1, c))
			goto bad;
		p += 1 + c;
	}
	if (*p)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen,
		 "image_registry: a registry host[:port] with an optional /prefix, lower-case "
		 "(registry.example.com/sandpit, 127.0.0.1:5000/sandpit), at most 180 bytes");
	return -1;
}

/* Reads image_registry_auth_file (USER:PASSWORD, one line, chmod 600) into
 * the X-Registry-Auth value Docker takes: base64url of
 * {"username","password","serveraddress"}. Wipes what it read. */
static int load_registry_auth(struct config *cfg, char *err, size_t errlen)
{
	char raw[600], host[256];
	json_object *o = NULL;
	const char *colon, *js;
	struct stat st;
	size_t got;
	FILE *f;
	int rc = -1;

	cfg->registry_auth[0] = '\0';
	if (!cfg->image_registry_auth_file[0])
		return 0;
	if (!cfg->image_registry[0]) {
		snprintf(err, errlen, "image_registry_auth_file is set without image_registry");
		return -1;
	}
	f = fopen(cfg->image_registry_auth_file, "r");
	if (!f) {
		snprintf(err, errlen, "image_registry_auth_file %s: %s",
			 cfg->image_registry_auth_file, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077)) {
		snprintf(err, errlen,
			 "image_registry_auth_file %s must not be readable by group or others "
			 "(chmod 600)",
			 cfg->image_registry_auth_file);
		goto out;
	}
	got = fread(raw, 1, sizeof(raw) - 1, f);
	raw[got] = '\0';
	colon = strchr(trim(raw), ':');
	if (got == sizeof(raw) - 1 || !colon || colon == trim(raw) || !colon[1] ||
	    strchr(trim(raw), '\n')) {
		snprintf(err, errlen,
			 "image_registry_auth_file %s must hold one line USER:PASSWORD (at most "
			 "500 bytes)",
			 cfg->image_registry_auth_file);
		goto out;
	}
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(cfg->image_registry, "/"),
		 cfg->image_registry);
	o = json_object_new_object();
	json_object_object_add(o, "username",
			       json_object_new_string_len(trim(raw), (int)(colon - trim(raw))));
	json_object_object_add(o, "password", json_object_new_string(colon + 1));
	json_object_object_add(o, "serveraddress", json_object_new_string(host));
	js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (sodium_base64_ENCODED_LEN(strlen(js), sodium_base64_VARIANT_URLSAFE) >
	    sizeof(cfg->registry_auth)) {
		snprintf(err, errlen, "image_registry_auth_file %s: the credential is too long",
			 cfg->image_registry_auth_file);
		goto out;
	}
	sodium_bin2base64(cfg->registry_auth, sizeof(cfg->registry_auth), (const unsigned char *)js,
			  strlen(js), sodium_base64_VARIANT_URLSAFE);
	sodium_memzero((void *)js, strlen(js));
	rc = 0;
out:
	json_object_put(o);
	sodium_memzero(raw, sizeof(raw));
	fclose(f);
	return rc;
}

static int load_data_key(struct config *cfg, char *err, size_t errlen)
{
	char hex[130];
	size_t got, binlen;
	struct stat st;
	FILE *f;
	int rc = -1;

	f = fopen(cfg->data_key_file, "r");
	if (!f) {
		snprintf(err, errlen, "data_key_file %s: %s", cfg->data_key_file, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077)) {
		snprintf(err, errlen,
			 "data_key_file %s must not be readable by group or others (chmod 600)",
			 cfg->data_key_file);
		goto out;
	}
	got = fread(hex, 1, sizeof(hex) - 1, f);
	hex[got] = '\0';
	if (sodium_hex2bin(cfg->data_key, sizeof(cfg->data_key), trim(hex), strlen(trim(hex)), NULL,
			   &binlen, NULL) != 0 ||
	    binlen != sizeof(cfg->data_key)) {
		snprintf(err, errlen, "data_key_file %s must hold 32 bytes as 64 hex digits",
			 cfg->data_key_file);
		goto out;
	}
	rc = 0;
out:
	sodium_memzero(hex, sizeof(hex));
	fclose(f);
	return rc;
}

int config_load(const char *path, struct config *cfg, char *err, size_t errlen)
{
	char line[8192], msg[512];
	int lineno = 0, rc = -1;
	FILE *f;

	config_defaults(cfg);
	if (str_copy(cfg->path, sizeof(cfg->path), path) < 0) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *s, *eq, *hash;
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			goto out;
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		s = trim(line);
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
			goto out;
		}
		*eq = '\0';
		if (set_key(cfg, trim(s), trim(eq + 1), msg, sizeof(msg)) < 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
			goto out;
		}
	}
	if (cfg->workers_min > cfg->workers_max) {
		snprintf(err, errlen, "%s: workers_min (%d) is above workers_max (%d)", path,
			 cfg->workers_min, cfg->workers_max);
		goto out;
	}
	{
		if (strcmp(cfg->log_level, "error") && strcmp(cfg->log_level, "warn") &&
		    strcmp(cfg->log_level, "info") && strcmp(cfg->log_level, "debug")) {
			snprintf(err, errlen, "%s: log_level must be error, warn, info or debug",
				 path);
			goto out;
		}
	}
	if (strcmp(cfg->default_runtime, "runc") != 0 &&
	    strcmp(cfg->default_runtime, "gvisor") != 0) {
		snprintf(err, errlen, "%s: default_runtime must be runc or gvisor", path);
		goto out;
	}
	if (strcmp(cfg->stop_mode, "preserve") != 0 && strcmp(cfg->stop_mode, "discard") != 0) {
		snprintf(err, errlen, "%s: stop_mode must be preserve or discard", path);
		goto out;
	}
	if (!valid_name_chars(cfg->gvisor_runtime_isolated) ||
	    !valid_name_chars(cfg->gvisor_runtime_internet)) {
		snprintf(err, errlen,
			 "%s: gvisor_runtime_isolated and gvisor_runtime_internet must be dockerd "
			 "runtime names (letters, digits, - and _)",
			 path);
		goto out;
	}
	/* Dokploy's names exactly: the prefixes are its, whatever the file says
	 * (so code reading label_prefix directly names things right too) */
	if (strcmp(cfg->naming, "dokploy") == 0) {
		str_copy(cfg->network_prefix, sizeof(cfg->network_prefix), "dokploy");
		str_copy(cfg->label_prefix, sizeof(cfg->label_prefix), "dokploy");
	} else if (strcmp(cfg->naming, "sandpit") != 0) {
		snprintf(err, errlen, "%s: naming must be sandpit or dokploy", path);
		goto out;
	}
	if (container_label_check(cfg, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	if (!valid_list(cfg->deny_cidrs, valid_cidr)) {
		snprintf(err, errlen,
			 "%s: deny_cidrs must be IPv4 ranges a.b.c.d/n separated by commas", path);
		goto out;
	}
	if (!valid_list(cfg->image_allow, valid_image_pattern)) {
		snprintf(
			err, errlen,
			"%s: image_allow must be patterns repository[:tag], repository@sha256:<digest> "
			"or prefix* (lower-case; ORG= before one scopes it), separated by blanks",
			path);
		goto out;
	}
	if (!valid_list(cfg->volume_dirs, valid_volume_dir)) {
		snprintf(err, errlen,
			 "%s: volume_dirs must be absolute folders (not /), separated by blanks",
			 path);
		goto out;
	}
	if (!valid_list(cfg->probe_ports, valid_port)) {
		snprintf(err, errlen, "%s: probe_ports must be port numbers separated by commas",
			 path);
		goto out;
	}
	/* the deny rules' chains are <PREFIX>-FORWARD (iptables: 28 bytes) */
	if (strlen(cfg->network_prefix) > 20 || !valid_name_chars(cfg->network_prefix)) {
		snprintf(err, errlen,
			 "%s: network_prefix must be 1 to 20 letters, digits, '-' or '_'", path);
		goto out;
	}
	if (strcmp(cfg->disk_limit, "auto") && strcmp(cfg->disk_limit, "loop") &&
	    strcmp(cfg->disk_limit, "storage-opt") && strcmp(cfg->disk_limit, "off")) {
		snprintf(err, errlen, "%s: disk_limit must be auto, loop, storage-opt or off",
			 path);
		goto out;
	}
	if (cfg->disk_default_mb > cfg->disk_max_mb) {
		snprintf(err, errlen, "%s: disk_default_mb (%d) is above disk_max_mb (%d)", path,
			 cfg->disk_default_mb, cfg->disk_max_mb);
		goto out;
	}
	if (cfg->disk_dir[0] != '/') {
		snprintf(err, errlen, "%s: disk_dir must be an absolute path", path);
		goto out;
	}
	if (strncmp(cfg->docker_host, "unix://", 7) != 0) {
		snprintf(err, errlen, "%s: docker_host must be unix:///path (got %s)", path,
			 cfg->docker_host);
		goto out;
	}
	if (strncmp(cfg->redis_url, "unix://", 7) != 0 &&
	    strncmp(cfg->redis_url, "redis://", 8) != 0 &&
	    strncmp(cfg->redis_url, "sentinel://", 11) != 0) {
		snprintf(err, errlen,
			 "%s: redis_url must be redis://host:port[/db], unix:///path or "
			 "sentinel://host:port,.../name[/db]",
			 path);
		goto out;
	}
	if (redis_sentinel_url(cfg, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	/* ssh's ControlPath <dir>/<40 hex> and the bridge sockets are unix
	 * sockets: at most 107 bytes */
	if (strlen(cfg->ssh_control_dir) > 60) {
		snprintf(err, errlen,
			 "%s: ssh_control_dir must be at most 60 bytes (a unix socket path)", path);
		goto out;
	}
	if (public_url_check(cfg->public_url, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: public_url: %s", path, msg);
		goto out;
	}
	/* preview_domain: a lower-case DNS name with an optional :port */
	if (cfg->preview_domain[0]) {
		const char *d = cfg->preview_domain;
		size_t host = strcspn(d, ":");
		int ok = host > 0 && d[0] != '.' && d[0] != '-' && d[host - 1] != '.' &&
			 strspn(d, "abcdefghijklmnopqrstuvwxyz0123456789.-") == host &&
			 (!d[host] || (d[host + 1] &&
				       strspn(d + host + 1, "0123456789") == strlen(d + host + 1) &&
				       strlen(d + host + 1) <= 5));
		if (!ok) {
			snprintf(err, errlen,
				 "%s: preview_domain: a lower-case DNS name with an optional :port "
				 "(preview.example.com)",
				 path);
			goto out;
		}
	}
	if (cfg->image_registry[0] && registry_check(cfg->image_registry, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	if (load_registry_auth(cfg, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	for (int i = 0; i < cfg->npools; i++)
		if (!config_template(cfg, cfg->pools[i].template_name)) {
			snprintf(err, errlen, "%s: warm_pool names an unknown template '%s'", path,
				 cfg->pools[i].template_name);
			goto out;
		}
	if (load_data_key(cfg, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	/* the reserved workers' socket: beside listen, "-fast" before ".sock" */
	if (cfg->workers_reserved > 0 && !cfg->listen_fast[0]) {
		size_t n = strlen(cfg->listen);
		int w;
		if (n > 5 && strcmp(cfg->listen + n - 5, ".sock") == 0)
			w = snprintf(cfg->listen_fast, sizeof(cfg->listen_fast), "%.*s-fast.sock",
				     (int)(n - 5), cfg->listen);
		else
			w = snprintf(cfg->listen_fast, sizeof(cfg->listen_fast), "%s-fast",
				     cfg->listen);
		if (w < 0 || (size_t)w >= sizeof(cfg->listen_fast)) {
			snprintf(err, errlen,
				 "%s: listen_fast: the path made from listen is too long", path);
			goto out;
		}
	}
	if (cfg->workers_reserved > 0 && strcmp(cfg->listen_fast, cfg->listen) == 0) {
		snprintf(err, errlen, "%s: listen_fast must differ from listen (%s)", path,
			 cfg->listen);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	return rc;
}

int config_dokploy_naming(const struct config *cfg)
{
	return strcmp(cfg->naming, "dokploy") == 0;
}

void config_network_name(const struct config *cfg, const char *mode, char *out, size_t cap)
{
	if (!config_dokploy_naming(cfg))
		snprintf(out, cap, "%s-%s", cfg->network_prefix, mode);
	else if (strcmp(mode, "internet") == 0)
		snprintf(out, cap, "%s-sandboxes", cfg->network_prefix);
	else
		snprintf(out, cap, "%s-sandboxes-%s", cfg->network_prefix, mode);
}

void config_network_label(const struct config *cfg, char *out, size_t cap)
{
	config_label(cfg, config_dokploy_naming(cfg) ? "sandbox" : "network", out, cap);
}

void config_label(const struct config *cfg, const char *what, char *out, size_t cap)
{
	snprintf(out, cap, "%s.%s", cfg->label_prefix, what);
}

void config_container_name(const struct config *cfg, const char *id, char *out, size_t cap)
{
	if (config_dokploy_naming(cfg))
		snprintf(out, cap, "%s-sandbox-%s", cfg->label_prefix, id);
	else
		snprintf(out, cap, "sandpit-%s", id);
}

void config_wipe(struct config *cfg)
{
	sodium_memzero(cfg->data_key, sizeof(cfg->data_key));
	sodium_memzero(cfg->registry_auth, sizeof(cfg->registry_auth));
}

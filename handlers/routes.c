/*
 * The route table: every operation sandpit serves, with its input fields,
 * bounds, defaults, permission and answer schema. Routing, validation, the
 * OpenAPI document (openapi.c), the MCP tools (mcp.c), /_auth (auth.c) and
 * sandpit-stream's exec messages are all read from here; fcgi/route.h says
 * what each member means. Bounds come from dokploy-reference.md.
 */
#include "handlers.h"

#include <stddef.h>

/* The entries below list the members they set in order; the rest are zero,
 * which is each member's documented default (a field from the route's
 * input, RB_AUTO, the 15 MiB limit, 200, the face of the path prefix). New
 * entries may use designated initializers. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const char *const network_modes[] = { "isolated", "internet", NULL };
static const char *const runtimes[] = { "runc", "gvisor", NULL };

#define SANDBOX_ID                                                                         \
	{                                                                                  \
		"sandboxId", FT_ID, FF_REQUIRED, 1, 64, 0, 0, NULL, NULL, "The sandbox id" \
	}
#define END                                              \
	{                                                \
		NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL \
	}

static const struct field_spec create_fields[] = {
	{ "template", FT_ID, 0, 1, 31, 0, 0, NULL, NULL,
	  "A built-in template (see sandbox.templates); either template or image is required" },
	{ "image", FT_STRING, 0, 1, 255, 0, 0, NULL, NULL,
	  "A custom image with sh: a template's, an allowed one (image_allow) or the organization's snapshot" },
	{ "name", FT_STRING, FF_TEXT, 1, 64, 0, 0, NULL, NULL,
	  "A name for people (no control or bidirectional characters); default sandbox-<ms since the epoch, base 36>" },
	{ "serverId", FT_ID, FF_NULLABLE, 1, 64, 0, 0, NULL, NULL,
	  "The server to run on; omitted or null = the local server" },
	{ "cpu", FT_NUMBER, 0, 0, 0, 0.1, 64, NULL, "1", "CPUs" },
	{ "memoryMb", FT_INT, 0, 64, 262144, 0, 0, NULL, "512", "Memory in MiB (no swap)" },
	{ "pidsLimit", FT_INT, 0, 16, 65536, 0, 0, NULL, "256", "Maximum processes" },
	{ "diskMb", FT_INT, 0, 16, 1048576, 0, 0, NULL, NULL,
	  "Disk in MiB for the workdir (bytes, and one inode per 16 KiB); /tmp and /var/tmp count "
	  "against memory. Default: disk_default_mb (1024 unless configured); at most disk_max_mb "
	  "(16384 unless configured). A server that cannot limit disk refuses it" },
	{ "timeoutMs", FT_INT, 0, 10000, 86400000, 0, 0, NULL, "300000",
	  "Inactivity timeout in ms" },
	{ "maxLifetimeMs", FT_INT, 0, 10000, 86400000, 0, 0, NULL, "86400000",
	  "Hard lifetime in ms (deadlineAt)" },
	{ "networkMode", FT_ENUM, 0, 0, 0, 0, 0, network_modes, "\"isolated\"",
	  "isolated: no egress; internet: egress allowed" },
	{ "envVars", FT_STRING, 0, 0, 65536, 0, 0, NULL, NULL,
	  "KEY=value lines (a .env body); stored encrypted, never returned" },
	{ "workdir", FT_ABSPATH, 0, 0, 0, 0, 0, NULL, "\"/home/user\"",
	  "Working directory, also HOME" },
	{ "runtime", FT_ENUM, 0, 0, 0, 0, 0, runtimes, NULL,
	  "runc: Docker's default runtime; gvisor: gVisor (runsc), a user-space kernel. Default: "
	  "the server's default_runtime (runc unless configured)" },
	END,
};

static const struct field_spec id_fields[] = { SANDBOX_ID, END };

static const struct field_spec set_timeout_fields[] = {
	SANDBOX_ID,
	{ "timeoutMs", FT_INT, FF_REQUIRED, 10000, 86400000, 0, 0, NULL, NULL,
	  "New inactivity timeout in ms, counted from now" },
	END,
};

static const struct field_spec no_fields[] = { END };

static const char *const encodings[] = { "utf8", "base64", NULL };

static const struct field_spec exec_fields[] = {
	SANDBOX_ID,
	{ "cmd", FT_STRING, FF_REQUIRED, 1, 65536, 0, 0, NULL, NULL, "Run through sh -c" },
	{ "cwd", FT_ABSPATH, 0, 0, 0, 0, 0, NULL, NULL,
	  "Working directory (default: the workdir)" },
	{ "env", FT_ENVMAP, 0, 0, 0, 0, 0, NULL, NULL, "Extra environment variables" },
	{ "timeoutMs", FT_INT, 0, 1000, 600000, 0, 0, NULL, "60000",
	  "Kill the command's process tree after this; exitCode 124" },
	END,
};

static const struct field_spec write_fields[] = {
	SANDBOX_ID,
	{ "path", FT_ABSPATH, FF_REQUIRED, 0, 0, 0, 0, NULL, NULL, "Absolute path of the file" },
	/* as long as any body that nginx and the route accept (15 MiB), so that
	 * content over 10 MiB decoded is the handler's 413, never a 400 here */
	{ "content", FT_STRING, FF_REQUIRED, 0, 15 * 1024 * 1024, 0, 0, NULL, NULL,
	  "The content, at most 10 MiB once decoded (413 beyond)" },
	{ "encoding", FT_ENUM, 0, 0, 0, 0, 0, encodings, "\"utf8\"", "How content is encoded" },
	{ "mode", FT_INT, 0, 0, 07777, 0, 0, NULL, "420",
	  "File mode (setuid, setgid and sticky bits are dropped)" },
	END,
};

static const struct field_spec read_fields[] = {
	SANDBOX_ID,
	{ "path", FT_ABSPATH, FF_REQUIRED, 0, 0, 0, 0, NULL, NULL, "Absolute path of the file" },
	{ "encoding", FT_ENUM, 0, 0, 0, 0, 0, encodings, "\"utf8\"", "How content is returned" },
	END,
};

static const struct field_spec list_fields[] = {
	SANDBOX_ID,
	{ "path", FT_ABSPATH, 0, 0, 0, 0, 0, NULL, NULL, "A directory (default: the workdir)" },
	END,
};

/* --- /v1: the Docker Sandboxes API's sandboxes (handlers/v1_sandboxes.c) ---
 * Names, bounds and permissions are the seed document's
 * (docker-sandboxes-api.v1.yaml); the face is /v1's by the path prefix. */
static const char *const v1_pull_policies[] = { "unspecified", "always", NULL };

#define V1_SANDBOX_PATH                                                                      \
	{                                                                                    \
		.name = "sandbox", .type = FT_ID, .flags = FF_REQUIRED, .min = 1, .max = 64, \
		.desc = "The sandbox id", .source = FS_PATH                                  \
	}

static const struct field_spec v1_resources_fields[] = {
	{ .name = "cpus",
	  .type = FT_INT,
	  .flags = FF_NULLABLE,
	  .min = 1,
	  .max = 64,
	  .desc = "CPUs" },
	{ .name = "memoryMib",
	  .type = FT_INT,
	  .flags = FF_NULLABLE | FF_INT64_TEXT,
	  .min = 64,
	  .max = 262144,
	  .desc = "Memory in MiB (no swap)" },
	END,
};

static const struct field_spec v1_platform_fields[] = {
	{ .name = "os", .type = FT_STRING, .max = 64, .desc = "linux" },
	{ .name = "architecture", .type = FT_STRING, .max = 64, .desc = "This host's" },
	END,
};

static const struct field_spec v1_create_fields[] = {
	{ .name = "agent", .type = FT_STRING, .max = 64, .desc = "Refused unless empty" },
	{ .name = "displayName",
	  .type = FT_ID,
	  .min = 0,
	  .max = 64,
	  .desc = "A label: ^[a-zA-Z0-9_-]*$, at most 64" },
	{ .name = "displayNamePrefix",
	  .type = FT_ID,
	  .min = 1,
	  .max = 48,
	  .desc = "A generated label: the prefix and the time in base 36" },
	{ .name = "environment",
	  .type = FT_JSON,
	  .desc = "Variables for the container (the rules of an exec's env), shown back" },
	{ .name = "resources",
	  .type = FT_OBJECT,
	  .sub = v1_resources_fields,
	  .desc = "cpus, memoryMib" },
	{ .name = "pullPolicy",
	  .type = FT_ENUM,
	  .choices = v1_pull_policies,
	  .desc = "always is refused (no registry)" },
	{ .name = "kits", .type = FT_JSON, .desc = "Refused unless empty" },
	{ .name = "mcp", .type = FT_JSON, .desc = "Refused (needs mcpWrite first)" },
	{ .name = "networkPolicies", .type = FT_JSON, .desc = "Refused unless empty" },
	{ .name = "policyIds", .type = FT_JSON, .desc = "Refused unless empty" },
	{ .name = "platform",
	  .type = FT_OBJECT,
	  .sub = v1_platform_fields,
	  .desc = "Only this host's (linux/amd64 on x86_64)" },
	{ .name = "startupExecution", .type = FT_JSON, .desc = "Refused (not yet)" },
	{ .name = "labels", .type = FT_JSON, .desc = "At most 64 string values, 4 KiB as JSON" },
	{ .name = "features",
	  .type = FT_JSON,
	  .desc = "timeouts (timeout, onTimeout delete|stop), managedVolumes; storedSecrets "
		  "refused" },
	{ .name = "image",
	  .type = FT_STRING,
	  .min = 8,
	  .max = 100,
	  .desc = "images/<template> (the templates)" },
	{ .name = "imageRef",
	  .type = FT_STRING,
	  .min = 1,
	  .max = 255,
	  .desc = "An image with sh: a template's, an allowed one (image_allow) or the organization's snapshot" },
	END,
};

/* pageSize and pageToken of every /v1 list (v1_conv.c) */
#define V1_PAGE(size_desc)                                                        \
	{ .name = "pageSize",                                                     \
	  .type = FT_INT,                                                         \
	  .min = 0,                                                               \
	  .max = 1000000,                                                         \
	  .desc = size_desc,                                                      \
	  .source = FS_QUERY },                                                   \
	{                                                                         \
		.name = "pageToken", .type = FT_STRING, .max = V1_PAGE_TOKEN_MAX, \
		.source = FS_QUERY, .desc = "A nextPageToken of this list"        \
	}
static const struct field_spec v1_list_fields[] = {
	V1_PAGE("0 = 50; more than 256 is 256"),
	{ .name = "filter",
	  .type = FT_STRING,
	  .max = 1024,
	  .source = FS_QUERY,
	  .desc = "field=value,...: name, display_name, uid, status, agent" },
	{ .name = "orderBy",
	  .type = FT_STRING,
	  .max = 64,
	  .source = FS_QUERY,
	  .desc = "created_at desc (the default) only" },
	END,
};

static const struct field_spec v1_get_fields[] = { V1_SANDBOX_PATH, END };

static const struct field_spec v1_update_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "displayName",
	  .type = FT_ID,
	  .flags = FF_REQUIRED,
	  .min = 0,
	  .max = 64,
	  .desc = "The new label",
	  .source = FS_BODY },
	END,
};

static const struct field_spec v1_renew_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "timeout",
	  .type = FT_STRING,
	  .flags = FF_REQUIRED,
	  .min = 2,
	  .max = 32,
	  .desc = "The new TTL from now, a Duration (300s); 10s up to the hard deadline",
	  .source = FS_BODY },
	END,
};

static const struct field_spec v1_delete_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "force",
	  .type = FT_BOOL,
	  .source = FS_QUERY,
	  .desc = "Accepted; a delete always ends the container" },
	END,
};

static const struct field_spec v1_credential_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "permissions",
	  .type = FT_JSON,
	  .flags = FF_REQUIRED,
	  .desc = "sandboxesExec, sandboxesFilesRead, sandboxesFilesWrite: 1 to 3, distinct, held",
	  .source = FS_BODY },
	{ .name = "ttl",
	  .type = FT_STRING,
	  .min = 2,
	  .max = 32,
	  .desc = "A Duration; default 300s, clamped to 1s..300s",
	  .source = FS_BODY },
	END,
};

/* --- /v1 snapshots and images (handlers/v1_snapshots.c) ------------------ */
static const char *const v1_capture_modes[] = { "unspecified", "all", "disk", NULL };
#define V1_SNAPSHOT_PATH                                                                      \
	{                                                                                     \
		.name = "snapshot", .type = FT_ID, .flags = FF_REQUIRED, .min = 1, .max = 64, \
		.desc = "The snapshot id", .source = FS_PATH                                  \
	}
#define V1_IMAGE_PATH                                                                            \
	{                                                                                        \
		.name = "image", .type = FT_ID, .flags = FF_REQUIRED, .min = 1, .max = 64,       \
		.desc = "The image id: a template, snapshot-<id> or img-<id>", .source = FS_PATH \
	}
#define V1_PAGE_FIELDS(filt)                                                         \
	V1_PAGE("0 = 50; more than 256 is 256"),                                     \
		{ .name = "filter",                                                  \
		  .type = FT_STRING,                                                 \
		  .max = 1024,                                                       \
		  .source = FS_QUERY,                                                \
		  .desc = filt },                                                    \
	{                                                                            \
		.name = "orderBy", .type = FT_STRING, .max = 64, .source = FS_QUERY, \
		.desc = "created_at desc (the default) only"                         \
	}
static const struct field_spec v1_snapshot_create_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "displayName",
	  .type = FT_STRING,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 255,
	  .desc = "A label: no '/', not '.' or '..'",
	  .source = FS_BODY },
	{ .name = "description", .type = FT_STRING, .max = SB_SNAP_DESC_MAX, .source = FS_BODY },
	{ .name = "captureMode",
	  .type = FT_ENUM,
	  .choices = v1_capture_modes,
	  .desc = "disk (unspecified); all is refused (canCaptureMemory is false)",
	  .source = FS_BODY },
	END,
};
static const struct field_spec v1_snapshot_list_fields[] = {
	{ .name = "sandbox",
	  .type = FT_STRING,
	  .max = 80,
	  .desc = "sandboxes/{sandbox}: only that sandbox's snapshots",
	  .source = FS_QUERY },
	V1_PAGE_FIELDS("field=value,...: name, display_name, uid"),
	END,
};
static const struct field_spec v1_snapshot_fields[] = { V1_SNAPSHOT_PATH, END };
static const struct field_spec v1_snapshot_restore_fields[] = {
	V1_SNAPSHOT_PATH,
	{ .name = "displayName",
	  .type = FT_ID,
	  .min = 0,
	  .max = 64,
	  .desc = "The new sandbox's label: ^[a-zA-Z0-9_-]*$",
	  .source = FS_BODY },
	END,
};
static const struct field_spec v1_image_list_fields[] = {
	V1_PAGE_FIELDS("field=value,...: name, display_name, uid, status"),
	END,
};
static const struct field_spec v1_image_fields[] = { V1_IMAGE_PATH, END };
static const char *const v1_from_image_modes[] = { "unspecified", "disk", NULL };
static const struct field_spec v1_from_image_fields[] = {
	{ .name = "resources", .type = FT_JSON, .desc = "Accepted, not enforced" },
	{ .name = "platform", .type = FT_JSON, .desc = "Accepted (the pushed content's)" },
	{ .name = "captureMode",
	  .type = FT_ENUM,
	  .choices = v1_from_image_modes,
	  .desc = "unspecified or disk" },
	{ .name = "platformHint", .type = FT_JSON, .desc = "Ignored" },
	{ .name = "kitStartup", .type = FT_JSON, .desc = "Accepted, not run" },
	END,
};
static const struct field_spec v1_image_create_fields[] = {
	{ .name = "displayName",
	  .type = FT_STRING,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 255,
	  .source = FS_BODY },
	{ .name = "description", .type = FT_STRING, .max = 4096, .source = FS_BODY },
	{ .name = "startCmd", .type = FT_JSON, .source = FS_BODY },
	{ .name = "readyCmd", .type = FT_JSON, .source = FS_BODY },
	{ .name = "fromImage",
	  .type = FT_OBJECT,
	  .sub = v1_from_image_fields,
	  .desc = "Registers an image for pushed content (needs image_registry)",
	  .source = FS_BODY },
	END,
};

/* --- /v1 ports (handlers/v1_ports.c) ----------------------------------------- */
static const char *const v1_port_protocols[] = { "unspecified", "tcp", NULL };

static const struct field_spec v1_port_input_fields[] = {
	{ .name = "number",
	  .type = FT_INT,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 65535,
	  .desc = "The port inside the sandbox" },
	{ .name = "protocol",
	  .type = FT_ENUM,
	  .choices = v1_port_protocols,
	  .desc = "tcp (unspecified = tcp)" },
	END,
};

static const struct field_spec v1_port_create_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "port",
	  .type = FT_OBJECT,
	  .flags = FF_REQUIRED,
	  .sub = v1_port_input_fields,
	  .desc = "number, protocol",
	  .source = FS_BODY },
	END,
};

static const struct field_spec v1_port_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "port",
	  .type = FT_INT,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 65535,
	  .desc = "The port number",
	  .source = FS_PATH },
	END,
};

/* --- /v1 volumes (handlers/v1_volumes.c) ---------------------------------- */
#define V1_VOLUME_PATH                                                                      \
	{                                                                                   \
		.name = "volume", .type = FT_ID, .flags = FF_REQUIRED, .min = 1, .max = 64, \
		.desc = "The volume id", .source = FS_PATH                                  \
	}
static const struct field_spec v1_volume_list_fields[] = {
	V1_PAGE("0 = 50; more than 256 is 256"),
	{ .name = "filter",
	  .type = FT_STRING,
	  .max = 1024,
	  .source = FS_QUERY,
	  .desc = "field=value,...: name, display_name, uid" },
	{ .name = "orderBy",
	  .type = FT_STRING,
	  .max = 64,
	  .source = FS_QUERY,
	  .desc = "created_at or name, asc or desc; default created_at desc" },
	END,
};
static const struct field_spec v1_volume_create_fields[] = {
	{ .name = "displayName",
	  .type = FT_STRING,
	  .flags = FF_REQUIRED | FF_TEXT,
	  .min = 1,
	  .max = SB_VOLUME_NAME_MAX,
	  .desc = "A label: no '/', not '.' or '..'",
	  .source = FS_BODY },
	END,
};
static const struct field_spec v1_volume_one_fields[] = { V1_VOLUME_PATH, END };

/* --- the sandbox endpoint's processes (handlers/v1_processes.c) ---------- */
static const char *const v1_signals[] = {
	"term", "kill", "int", "hup", "quit", "usr1", "usr2", NULL
};

#define V1_PROCESS_PATH                                                                      \
	{                                                                                    \
		.name = "process", .type = FT_ID, .flags = FF_REQUIRED, .min = 1, .max = 32, \
		.desc = "The process id", .source = FS_PATH                                  \
	}
#define V1_CMD_FIELDS                                                             \
	{ .name = "cmd",                                                          \
	  .type = FT_JSON,                                                        \
	  .flags = FF_REQUIRED,                                                   \
	  .desc = "argv: 1 to 4096 strings, run as given (no shell)",             \
	  .source = FS_BODY },                                                    \
		{ .name = "env",                                                  \
		  .type = FT_ENVMAP,                                              \
		  .desc = "Extra environment variables",                          \
		  .source = FS_BODY },                                            \
		{ .name = "workingDir",                                           \
		  .type = FT_ABSPATH,                                             \
		  .desc = "Default: the workdir; never under /proc",              \
		  .source = FS_BODY },                                            \
	{                                                                         \
		.name = "user", .type = FT_STRING, .max = 64,                     \
		.desc = "Only the sandbox's own user (every command runs as it)", \
		.source = FS_BODY                                                 \
	}

static const struct field_spec v1_exec_fields[] = { V1_SANDBOX_PATH, V1_CMD_FIELDS, END };

static const struct field_spec v1_process_create_fields[] = {
	V1_SANDBOX_PATH,
	V1_CMD_FIELDS,
	{ .name = "pty",
	  .type = FT_JSON,
	  .desc = "A PTY (stdin, stdout, stderr on one terminal): {initialSize: {rows, "
		  "cols, bounded}}, default 24x80",
	  .source = FS_BODY },
	{ .name = "session",
	  .type = FT_STRING,
	  .max = SB_PROC_SESSION_MAX,
	  .desc = "An opaque tag, kept verbatim",
	  .source = FS_BODY },
	{ .name = "label",
	  .type = FT_STRING,
	  .flags = FF_NULLABLE,
	  .min = 1,
	  .max = SB_PROC_LABEL_MAX,
	  .desc = "Unique in the sandbox; default: the uid",
	  .source = FS_BODY },
	END,
};

static const struct field_spec v1_process_list_fields[] = {
	V1_SANDBOX_PATH,
	V1_PAGE("0 = 100; more than 1000 is 1000"),
	{ .name = "filter",
	  .type = FT_STRING,
	  .max = 2048,
	  .source = FS_QUERY,
	  .desc = "session=V,state=running|exited" },
	END,
};

static const struct field_spec v1_process_get_fields[] = { V1_SANDBOX_PATH, V1_PROCESS_PATH, END };

static const struct field_spec v1_process_read_fields[] = {
	V1_SANDBOX_PATH,
	V1_PROCESS_PATH,
	{ .name = "resumeFrom",
	  .type = FT_INT,
	  .flags = FF_INT64_TEXT,
	  .min = 0,
	  .max = INT64_MAX,
	  .desc = "The chunks after this streamSequence; 0 = from the start",
	  .source = FS_QUERY },
	{ .name = "maxBytes",
	  .type = FT_INT,
	  .min = 0,
	  .max = 1 << 30,
	  .desc = "Whole chunks, about this much data; 0 = 1 MiB; at most 4 MiB",
	  .source = FS_QUERY },
	END,
};

static const struct field_spec v1_process_signal_fields[] = {
	V1_SANDBOX_PATH,
	V1_PROCESS_PATH,
	{ .name = "signal",
	  .type = FT_ENUM,
	  .flags = FF_REQUIRED,
	  .choices = v1_signals,
	  .desc = "To the process's group",
	  .source = FS_BODY },
	END,
};

/* --- the sandbox endpoint's files (handlers/v1_files.c) ------------------- */
#define V1_FILE_PATH(src)                                                 \
	{                                                                 \
		.name = "path", .type = FT_ABSPATH, .flags = FF_REQUIRED, \
		.desc = "An absolute path in the sandbox", .source = src  \
	}
static const struct field_spec v1_files_list_fields[] = {
	V1_SANDBOX_PATH,
	V1_FILE_PATH(FS_QUERY),
	V1_PAGE("0 = 100; more than 1000 is 1000"),
	{ .name = "orderBy",
	  .type = FT_STRING,
	  .max = 64,
	  .desc = "path (ascending) only",
	  .source = FS_QUERY },
	END,
};
static const struct field_spec v1_files_path_fields[] = { V1_SANDBOX_PATH, V1_FILE_PATH(FS_QUERY),
							  END };
static const struct field_spec v1_files_write_fields[] = {
	V1_SANDBOX_PATH,
	V1_FILE_PATH(FS_QUERY),
	{ .name = "mode",
	  .type = FT_INT,
	  .min = 0,
	  .max = 07777,
	  .desc = "mode & 0777, 0644 when 0; no umask",
	  .source = FS_QUERY },
	END,
};
static const struct field_spec v1_files_mkdir_fields[] = {
	V1_SANDBOX_PATH,
	V1_FILE_PATH(FS_BODY),
	{ .name = "mode",
	  .type = FT_INT,
	  .min = 0,
	  .max = 07777,
	  .desc = "mode & 0777, 0755 when 0; no umask",
	  .source = FS_BODY },
	{ .name = "parents",
	  .type = FT_BOOL,
	  .desc = "Create missing parents (0755)",
	  .source = FS_BODY },
	END,
};
static const struct field_spec v1_files_move_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "from", .type = FT_ABSPATH, .flags = FF_REQUIRED, .source = FS_BODY },
	{ .name = "to", .type = FT_ABSPATH, .flags = FF_REQUIRED, .source = FS_BODY },
	END,
};
static const struct field_spec v1_files_upload_fields[] = { V1_SANDBOX_PATH, END };
static const struct field_spec v1_files_download_fields[] = {
	V1_SANDBOX_PATH,
	{ .name = "paths",
	  .type = FT_PATHLIST,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 1000,
	  .desc = "paths=/a&paths=/b: in request order, duplicates too",
	  .source = FS_QUERY },
	END,
};
static const struct field_spec v1_files_remove_fields[] = {
	V1_SANDBOX_PATH,
	V1_FILE_PATH(FS_QUERY),
	{ .name = "recursive", .type = FT_BOOL, .source = FS_QUERY },
	END,
};

/* GET /sandbox-exec reaching sandpitd: a plain HTTP request, not an upgrade. */
static int h_stream_only(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e)
{
	(void)h;
	(void)in;
	(void)out;
	return sp_err_set(e, SP_BAD_REQUEST,
			  "/sandbox-exec is a WebSocket endpoint: connect with Upgrade: websocket");
}

/* interact: served by sandpit-stream (nginx proxies the upgrade there);
 * the entry lets /_auth_endpoint check the credential before it. */
static int h_interact_only(struct handler_ctx *h, json_object *in, json_object **out,
			   struct sp_err *e)
{
	(void)h;
	(void)in;
	(void)out;
	return sp_err_set(e, SP_BAD_REQUEST,
			  "interact is a WebSocket endpoint: connect with Upgrade: websocket and "
			  "the sandboxes.v1 subprotocol");
}

const struct route handler_routes[] = {
	{ "POST", "/api/sandbox.create", h_sandbox_create, create_fields, "sandbox:create",
	  ROUTE_MUTATION, "sandbox-create", "Create a sandbox", "Sandbox", 0 },
	{ "GET", "/api/sandbox.one", h_sandbox_one, id_fields, "sandbox:read", ROUTE_QUERY,
	  "sandbox-one", "Get one sandbox", "Sandbox", 0 },
	{ "GET", "/api/sandbox.list", h_sandbox_list, no_fields, "sandbox:read", ROUTE_QUERY,
	  "sandbox-list", "List the organization's sandboxes", "SandboxList", 0 },
	{ "GET", "/api/sandbox.templates", h_sandbox_templates, no_fields, "sandbox:read",
	  ROUTE_QUERY, "sandbox-templates", "List the built-in templates", "Templates", 0 },
	{ "POST", "/api/sandbox.setTimeout", h_sandbox_set_timeout, set_timeout_fields,
	  "sandbox:create", ROUTE_MUTATION, "sandbox-setTimeout", "Change the inactivity timeout",
	  "Sandbox", 0 },
	{ "POST", "/api/sandbox.kill", h_sandbox_kill, id_fields, "sandbox:create", ROUTE_MUTATION,
	  "sandbox-kill", "Kill a sandbox (the record is kept)", "Sandbox", RF_DESTRUCTIVE },
	{ "POST", "/api/sandbox.remove", h_sandbox_remove, id_fields, "sandbox:delete",
	  ROUTE_MUTATION, "sandbox-remove", "Kill if needed and delete the record", "RemoveResult",
	  RF_DESTRUCTIVE },
	{ "POST", "/api/sandbox.exec", h_sandbox_exec, exec_fields, "sandbox:create",
	  ROUTE_MUTATION, "sandbox-exec", "Run a command", "ExecResult", RF_LONG },
	{ "POST", "/api/sandbox.writeFile", h_sandbox_write_file, write_fields, "sandbox:create",
	  ROUTE_MUTATION, "sandbox-writeFile", "Write a file", "WriteFileResult", RF_LONG },
	{ "GET", "/api/sandbox.readFile", h_sandbox_read_file, read_fields, "sandbox:read",
	  ROUTE_QUERY, "sandbox-readFile", "Read a file", "ReadFileResult", RF_LONG },
	{ "GET", "/api/sandbox.listFiles", h_sandbox_list_files, list_fields, "sandbox:read",
	  ROUTE_QUERY, "sandbox-listFiles", "List a directory", "ListFilesResult", RF_LONG },
	/* /v1 (the Docker Sandboxes API): the same core and records */
	{ .method = "GET",
	  .path = "/v1/sandboxes",
	  .fn = v1_sandboxes_list,
	  .fields = v1_list_fields,
	  .perm = "sandboxesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "listSandboxes",
	  .summary = "List sandboxes, newest first",
	  .output = "ListSandboxesResponse" },
	{ .method = "POST",
	  .path = "/v1/sandboxes",
	  .fn = v1_sandboxes_create,
	  .fields = v1_create_fields,
	  .perm = "sandboxesCreate",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createSandbox",
	  .summary = "Create a sandbox",
	  .output = "Sandbox",
	  .flags = RF_ETAG | RF_IDEMPOTENCY | RF_IDEMPOTENCY_RESOURCE,
	  .status = 201 },
	{ .method = "GET",
	  .path = "/v1/sandboxes/{sandbox}",
	  .fn = v1_sandboxes_get,
	  .fields = v1_get_fields,
	  .perm = "sandboxesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getSandbox",
	  .summary = "Get a sandbox",
	  .output = "Sandbox",
	  .flags = RF_ETAG },
	{ .method = "PATCH",
	  .path = "/v1/sandboxes/{sandbox}",
	  .fn = v1_sandboxes_update,
	  .fields = v1_update_fields,
	  .perm = "sandboxesRename",
	  .kind = ROUTE_MUTATION,
	  .op_id = "updateSandbox",
	  .summary = "Change a sandbox's displayName",
	  .output = "Sandbox",
	  .flags = RF_ETAG | RF_IF_MATCH | RF_IDEMPOTENCY_REQUIRED },
	{ .method = "DELETE",
	  .path = "/v1/sandboxes/{sandbox}",
	  .fn = v1_sandboxes_delete,
	  .fields = v1_delete_fields,
	  .perm = "sandboxesDelete",
	  .kind = ROUTE_MUTATION,
	  .op_id = "deleteSandbox",
	  .summary = "Delete a sandbox (absent: 204 too)",
	  .flags = RF_IF_MATCH | RF_IDEMPOTENCY | RF_DESTRUCTIVE,
	  .status = 204 },
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/renew-timeout",
	  .fn = v1_sandboxes_renew,
	  .fields = v1_renew_fields,
	  .perm = "sandboxesLifecycle",
	  .kind = ROUTE_MUTATION,
	  .op_id = "renewSandboxTimeout",
	  .summary = "Restart a sandbox's TTL",
	  .output = "Sandbox",
	  .flags = RF_ETAG },
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/stop",
	  .fn = v1_sandboxes_stop,
	  .fields = v1_get_fields,
	  .perm = "sandboxesLifecycle",
	  .kind = ROUTE_MUTATION,
	  .op_id = "stopSandbox",
	  .summary = "Stop a sandbox: its container paused, processes and memory kept",
	  .output = "Sandbox",
	  .flags = RF_ETAG | RF_IF_MATCH | RF_IDEMPOTENCY },
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/start",
	  .fn = v1_sandboxes_start,
	  .fields = v1_get_fields,
	  .perm = "sandboxesLifecycle",
	  .kind = ROUTE_MUTATION,
	  .op_id = "startSandbox",
	  .summary = "Start a stopped sandbox: its container resumed",
	  .output = "Sandbox",
	  .flags = RF_ETAG | RF_IF_MATCH | RF_IDEMPOTENCY },
	/* no Idempotency-Key, no If-Match: a credential never enters the
	 * replay ledger (the document) */
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/endpoint-credentials",
	  .fn = v1_endpoint_credential_create,
	  .fields = v1_credential_fields,
	  .perm = "sandboxesCredential",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createEndpointCredential",
	  .summary = "A short-lived credential for the sandbox's endpoint",
	  .output = "EndpointCredential" },
	/* snapshots (a capture runs after the 202) and images */
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/snapshots",
	  .fn = v1_snapshots_create,
	  .fields = v1_snapshot_create_fields,
	  .perm = "snapshotsWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createSnapshot",
	  .summary = "Capture a running sandbox's disk",
	  .output = "Snapshot",
	  .flags = RF_ETAG | RF_IDEMPOTENCY | RF_IDEMPOTENCY_RESOURCE,
	  .status = 201 },
	{ .method = "GET",
	  .path = "/v1/snapshots",
	  .fn = v1_snapshots_list,
	  .fields = v1_snapshot_list_fields,
	  .perm = "snapshotsRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "listSnapshots",
	  .summary = "List snapshots, newest first",
	  .output = "ListSnapshotsResponse" },
	{ .method = "GET",
	  .path = "/v1/snapshots/{snapshot}",
	  .fn = v1_snapshots_get,
	  .fields = v1_snapshot_fields,
	  .perm = "snapshotsRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getSnapshot",
	  .summary = "Get a snapshot",
	  .output = "Snapshot",
	  .flags = RF_ETAG },
	{ .method = "DELETE",
	  .path = "/v1/snapshots/{snapshot}",
	  .fn = v1_snapshots_delete,
	  .fields = v1_snapshot_fields,
	  .perm = "snapshotsWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "deleteSnapshot",
	  .summary = "Delete a snapshot (absent: 204 too)",
	  .flags = RF_IF_MATCH | RF_DESTRUCTIVE,
	  .status = 204 },
	{ .method = "POST",
	  .path = "/v1/snapshots/{snapshot}/restore",
	  .fn = v1_snapshots_restore,
	  .fields = v1_snapshot_restore_fields,
	  .perm = "sandboxesCreate",
	  .kind = ROUTE_MUTATION,
	  .op_id = "restoreSnapshot",
	  .summary = "Fork a new sandbox from a snapshot (snapshotsRead too)",
	  .output = "Sandbox",
	  .flags = RF_ETAG | RF_IDEMPOTENCY | RF_IDEMPOTENCY_RESOURCE,
	  .status = 201 },
	{ .method = "GET",
	  .path = "/v1/images",
	  .fn = v1_images_list,
	  .fields = v1_image_list_fields,
	  .perm = "imagesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "listImages",
	  .summary = "List the templates and the snapshots' images",
	  .output = "ListImagesResponse" },
	{ .method = "POST",
	  .path = "/v1/images",
	  .fn = v1_images_create,
	  .fields = v1_image_create_fields,
	  .perm = "imagesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createImage",
	  .summary = "Register an image for pushed content (image_registry; else 501)",
	  .output = "Image",
	  .flags = RF_ETAG | RF_IDEMPOTENCY | RF_IDEMPOTENCY_RESOURCE,
	  .status = 201 },
	{ .method = "GET",
	  .path = "/v1/images/{image}",
	  .fn = v1_images_get,
	  .fields = v1_image_fields,
	  .perm = "imagesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getImage",
	  .summary = "Get an image",
	  .output = "Image",
	  .flags = RF_ETAG },
	{ .method = "DELETE",
	  .path = "/v1/images/{image}",
	  .fn = v1_images_delete,
	  .fields = v1_image_fields,
	  .perm = "imagesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "deleteImage",
	  .summary = "Delete a snapshot's image (a template: 403)",
	  .flags = RF_IF_MATCH | RF_DESTRUCTIVE,
	  .status = 204 },
	{ .method = "GET",
	  .path = "/v1/images/{image}/pull-spec",
	  .fn = v1_images_pull_spec,
	  .fields = v1_image_fields,
	  .perm = "imagesPull",
	  .kind = ROUTE_QUERY,
	  .op_id = "getImagePullSpec",
	  .summary = "The image's registry reference, a snapshot's pushed first (else 501)",
	  .output = "ImagePullSpec" },
	/* ports: reached through nginx's preview URLs (handlers/v1_ports.c) */
	{ .method = "GET",
	  .path = "/v1/sandboxes/{sandbox}/ports",
	  .fn = v1_ports_list,
	  .fields = v1_get_fields,
	  .perm = "sandboxesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "listPorts",
	  .summary = "List a sandbox's published ports by number",
	  .output = "ListPortsResponse" },
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/ports",
	  .fn = v1_ports_create,
	  .fields = v1_port_create_fields,
	  .perm = "sandboxesPorts",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createPort",
	  .summary = "Publish a sandbox port at a preview URL",
	  .output = "Port",
	  .flags = RF_ETAG | RF_IDEMPOTENCY,
	  .status = 201 },
	{ .method = "GET",
	  .path = "/v1/sandboxes/{sandbox}/ports/{port}",
	  .fn = v1_ports_get,
	  .fields = v1_port_fields,
	  .perm = "sandboxesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getPort",
	  .summary = "Get a published port",
	  .output = "Port",
	  .flags = RF_ETAG },
	{ .method = "DELETE",
	  .path = "/v1/sandboxes/{sandbox}/ports/{port}",
	  .fn = v1_ports_delete,
	  .fields = v1_port_fields,
	  .perm = "sandboxesPorts",
	  .kind = ROUTE_MUTATION,
	  .op_id = "deletePort",
	  .summary = "Withdraw a published port (absent: 204 too)",
	  .flags = RF_IF_MATCH | RF_DESTRUCTIVE,
	  .status = 204 },
	/* managed volumes: Docker named volumes, attached at a sandbox's
	 * creation (features.managedVolumes) */
	{ .method = "GET",
	  .path = "/v1/volumes",
	  .fn = v1_volumes_list,
	  .fields = v1_volume_list_fields,
	  .perm = "volumesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "listVolumes",
	  .summary = "List volumes, newest first",
	  .output = "ListVolumesResponse" },
	{ .method = "POST",
	  .path = "/v1/volumes",
	  .fn = v1_volumes_create,
	  .fields = v1_volume_create_fields,
	  .perm = "volumesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createVolume",
	  .summary = "Create a volume",
	  .output = "Volume",
	  .flags = RF_ETAG | RF_IDEMPOTENCY | RF_IDEMPOTENCY_RESOURCE,
	  .status = 201 },
	{ .method = "GET",
	  .path = "/v1/volumes/{volume}",
	  .fn = v1_volumes_get,
	  .fields = v1_volume_one_fields,
	  .perm = "volumesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getVolume",
	  .summary = "Get a volume",
	  .output = "Volume",
	  .flags = RF_ETAG },
	{ .method = "DELETE",
	  .path = "/v1/volumes/{volume}",
	  .fn = v1_volumes_delete,
	  .fields = v1_volume_one_fields,
	  .perm = "volumesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "deleteVolume",
	  .summary = "Delete a volume (absent: 204 too; attached: 409)",
	  .flags = RF_IF_MATCH | RF_DESTRUCTIVE,
	  .status = 204 },
	/* the sandbox endpoint (<origin>/endpoints/<uid>/v1/...): an endpoint
	 * credential of that sandbox, never an API key (handlers/auth.c);
	 * exec before {process}, which would take its path */
	{ .method = "POST",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes/exec",
	  .fn = v1_processes_exec,
	  .fields = v1_exec_fields,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_MUTATION,
	  .op_id = "exec",
	  .summary = "Run one command to completion",
	  .output = "ExecResponse",
	  .flags = RF_LONG,
	  .face = &face_v1 },
	{ .method = "POST",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes",
	  .fn = v1_processes_create,
	  .fields = v1_process_create_fields,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_MUTATION,
	  .op_id = "createProcess",
	  .summary = "Start a durable process",
	  .output = "Process",
	  .flags = RF_IDEMPOTENCY,
	  .status = 201,
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes",
	  .fn = v1_processes_list,
	  .fields = v1_process_list_fields,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_QUERY,
	  .op_id = "listProcesses",
	  .summary = "List processes in creation order",
	  .output = "ListProcessesResponse",
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes/{process}",
	  .fn = v1_processes_get,
	  .fields = v1_process_get_fields,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_QUERY,
	  .op_id = "getProcess",
	  .summary = "Get a process",
	  .output = "Process",
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes/{process}/output",
	  .fn = v1_processes_read,
	  .fields = v1_process_read_fields,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_QUERY,
	  .op_id = "readOutput",
	  .summary = "A page of a process's retained output",
	  .output = "ReadOutputResponse",
	  .flags = RF_LONG,
	  .face = &face_v1 },
	{ .method = "POST",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes/{process}/signal",
	  .fn = v1_processes_signal,
	  .fields = v1_process_signal_fields,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_MUTATION,
	  .op_id = "signal",
	  .summary = "Send a signal to a process",
	  .output = "SignalResponse",
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/processes/{process}/interact",
	  .fn = h_interact_only,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_META,
	  .op_id = "interact",
	  .summary = "Interact with a process (WebSocket, served by sandpit-stream)",
	  .face = &face_v1 },
	/* the endpoint's files */
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files",
	  .fn = v1_files_list,
	  .fields = v1_files_list_fields,
	  .perm = "sandboxesFilesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "list",
	  .summary = "List a directory by path ascending",
	  .output = "FilesListResponse",
	  .flags = RF_LONG,
	  .face = &face_v1 },
	{ .method = "DELETE",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files",
	  .fn = v1_files_remove,
	  .fields = v1_files_remove_fields,
	  .perm = "sandboxesFilesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "remove",
	  .summary = "Remove a path",
	  .output = "FilesRemoveResponse",
	  .flags = RF_DESTRUCTIVE,
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/stat",
	  .fn = v1_files_stat,
	  .fields = v1_files_path_fields,
	  .perm = "sandboxesFilesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "stat",
	  .summary = "A path's metadata",
	  .output = "FilesStatResponse",
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/content",
	  .fn = v1_files_read,
	  .fields = v1_files_path_fields,
	  .perm = "sandboxesFilesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "readFile",
	  .summary = "A file's raw bytes (at most 10 MiB)",
	  .flags = RF_LONG,
	  .face = &face_v1 },
	{ .method = "PUT",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/content",
	  .fn = v1_files_write,
	  .fields = v1_files_write_fields,
	  .perm = "sandboxesFilesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "writeFile",
	  .summary = "Replace a file with the raw body (at most 10 MiB)",
	  .output = "FilesWriteFileResponse",
	  .body = RB_STREAM,
	  .body_max = SB_FILE_UNARY_MAX,
	  .flags = RF_LONG,
	  .face = &face_v1 },
	{ .method = "PUT",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/directories",
	  .fn = v1_files_mkdir,
	  .fields = v1_files_mkdir_fields,
	  .perm = "sandboxesFilesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "mkdir",
	  .summary = "Create a directory",
	  .output = "FilesMkdirResponse",
	  .face = &face_v1 },
	{ .method = "POST",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/move",
	  .fn = v1_files_move,
	  .fields = v1_files_move_fields,
	  .perm = "sandboxesFilesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "move",
	  .summary = "Rename or move a path (never a copy)",
	  .output = "FilesMoveResponse",
	  .face = &face_v1 },
	/* streamed both ways under transfer_max_mb (handlers/v1_transfer.c);
	 * nginx passes these bodies unbuffered */
	{ .method = "POST",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/upload",
	  .fn = v1_files_upload,
	  .fields = v1_files_upload_fields,
	  .perm = "sandboxesFilesWrite",
	  .kind = ROUTE_MUTATION,
	  .op_id = "upload",
	  .summary = "Stream files in (multipart/form-data)",
	  .output = "FilesUploadResponse",
	  .body = RB_MULTIPART,
	  .flags = RF_LONG,
	  .face = &face_v1 },
	{ .method = "GET",
	  .path = V1_EP_PREFIX "{sandbox}/v1/files/download",
	  .fn = v1_files_download,
	  .fields = v1_files_download_fields,
	  .perm = "sandboxesFilesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "download",
	  .summary = "Stream files out (multipart/mixed)",
	  .flags = RF_LONG,
	  .face = &face_v1 },
	/* Not procedures: no OpenAPI operation, no MCP tool. The API description
	 * needs a valid key (nginx checks it) but no permission: it holds no
	 * organization data. /mcp checks each tool's permission itself. */
	{ "GET", "/openapi.json", h_openapi, no_fields, NULL, ROUTE_META, "openapi",
	  "The OpenAPI 3.1 document", NULL, 0 },
	{ "GET", "/v1/openapi.json", h_v1_openapi, no_fields, NULL, ROUTE_META, "v1-openapi",
	  "The /v1 operations sandpit implements, as the seed document states them", NULL, 0 },
	{ "POST", "/mcp", h_mcp, NULL, NULL, ROUTE_META, "mcp", "MCP (Streamable HTTP)", NULL, 0 },
	/* The streaming exec WebSocket: served by sandpit-stream, never by
	 * sandpitd (nginx proxies the upgrade there). The entry exists so that
	 * /_auth answers 403 to a key without sandbox:create before the
	 * upgrade; sandpit-stream checks the permission again. */
	{ "GET", "/sandbox-exec", h_stream_only, NULL, "sandbox:create", ROUTE_META,
	  "sandbox-exec-stream", "Streaming exec (WebSocket, served by sandpit-stream)", NULL, 0 },
	{ "GET", "/healthz", h_health, no_fields, NULL, ROUTE_PUBLIC, "health", "Liveness", NULL,
	  0 },
	/* Prometheus metrics: no key; nginx allows only the operator's addresses. */
	{ "GET", "/metrics", h_metrics, no_fields, NULL, ROUTE_PUBLIC, "metrics",
	  "Prometheus metrics", NULL, 0 },
	{ NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0 },
};

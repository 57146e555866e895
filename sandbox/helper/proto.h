/*
 * The protocol between sandpit and sandpit-helper, the one definition
 * both programs include: the helper (sandbox/helper/, static with musl)
 * and the core (the files of sandbox/, glibc). Command names, exit statuses, the
 * fast path's handshake and frames, the streamed transfers' frames.
 * Plain C with no library: nothing here may need more than the compiler.
 * A value changed here changes both sides at once; the helper's binary
 * (and with it its volume's name) changes with it.
 */
#ifndef SANDPIT_HELPER_PROTO_H
#define SANDPIT_HELPER_PROTO_H

/* --- commands: argv[1] of the helper ------------------------------------------ */

/* durable processes (sandpit-helper.c; the core: process.c) */
#define HC_SPAWN "spawn"
#define HC_START "start"
#define HC_ATTACH "attach"
#define HC_GET "get"
#define HC_LIST "list"
#define HC_READ "read"
#define HC_SIGNAL "signal"
/* the fast path's serving mode (serve.c; fastpath.c) */
#define HC_SERVE "serve"
/* files (files.c; files_v1.c, files.c, transfer.c, the /v1 file handlers) */
#define HC_STAT "stat"
#define HC_LS "ls"
#define HC_CAT "cat"
#define HC_PUT "put"
#define HC_MKDIR "mkdir"
#define HC_MV "mv"
#define HC_RM "rm"
#define HC_UPLOAD "upload"
#define HC_DOWNLOAD "download"
/* the keeper's clock (clock.c; netcheck.c and the programs in sandbox/sh/,
 * which name them in shell) */
#define HC_SLEEP "sleep"
#define HC_NOW "now"
#define HC_VERSION "version"

/* --- exit statuses ---------------------------------------------------------------- */

/* every command: 0 done, 1 a failure it reports on stderr, 2 a bad call */
#define H_OK 0
#define H_ERROR 1
#define H_USAGE 2

/* the process commands' refusals (process.c maps them) */
#define HX_OK H_OK
#define HX_ERROR H_ERROR
#define HX_USAGE H_USAGE
#define HX_NOT_FOUND 3
#define HX_DROPPED 4
#define HX_LABEL_TAKEN 5
#define HX_EXITED 6
#define HX_EXEC 7
#define HX_CWD 8

/* serve: the port is taken (a helper serves there already, or the
 * sandbox's own program holds it) */
#define HS_BUSY 9

/* the file commands' refusals (files_v1.c maps them; a download's 'E' and
 * 'X' frames carry them in a byte) */
#define HF_OK H_OK
#define HF_ERROR H_ERROR
#define HF_USAGE H_USAGE
#define HF_NOT_FOUND 20
#define HF_NONREG 21
#define HF_TOO_BIG 22
#define HF_DENIED 23
#define HF_DEST_DIR 24
#define HF_OCCUPIED 25
#define HF_XDEV 26
#define HF_NOT_EMPTY 27
#define HF_EXISTS 28
#define HF_NOT_DIR 29
#define HF_IS_DIR 30
#define HF_INVALID 31
#define HF_NO_SPACE 32
#define HF_TRUNCATED 33
#define HF_CHANGED 34
#define HF_FIRST HF_NOT_FOUND
#define HF_LAST HF_CHANGED

/* --- the fast path (serve.c; fastpath.c states the exchange) ---------------------- */

/* the one byte `serve` writes on stdout once it is not dumpable: the
 * secret goes to its stdin only after it */
#define HP_READY 'R'
/* the secret: 64 lowercase hex digits and a newline on serve's stdin */
#define HP_SECRET_LEN 32

/* the handshake: the helper's hello is HP_HELLO, its nonce, one byte n and
 * its uid:gid (n bytes, at most HP_OWNER_MAX); sandpit answers its nonce
 * and HMAC-SHA-256(secret, HP_LABEL_C nonce_h nonce_c); the helper proves
 * back HMAC-SHA-256(secret, HP_LABEL_S nonce_h nonce_c uid:gid) */
#define HP_HELLO "SPH1"
#define HP_HELLO_LEN 4
#define HP_NONCE_LEN 16
#define HP_OWNER_MAX 40
#define HP_MAC_LEN 32
#define HP_LABEL_C "sandpit-fast-c"
#define HP_LABEL_S "sandpit-fast-s"
#define HP_LABEL_LEN 14

/* the request: a u32 length (at most HP_REQ_MAX), then argv, env and cwd,
 * each a u32 count (at most HP_STRINGS_MAX) of (u32 length, bytes), then
 * u8 has_stdin and u32 stdin length */
#define HP_REQ_MAX (4u << 20)
#define HP_STRINGS_MAX 65536

/* the answer: frames of a type byte and a u32 length, then the data */
#define HP_FRAME_HDR 5
#define HP_STARTED 'S'	   /* pid u32, start time u64 (field 22 of its stat) */
#define HP_NOT_STARTED 'F' /* why (text): nothing ran */
#define HP_STDOUT '1'
#define HP_STDERR '2'
#define HP_EXIT 'X' /* the exit status u32 (128+N for a signal) */
#define HP_STARTED_LEN 12
#define HP_EXIT_LEN 4

/* --- streamed transfers (files.c; transfer.c) -------------------------------------- */

/* upload's stdin: a type byte, then big-endian u32 fields */
#define HU_FILE 'F'   /* mode u32, len u32, the path */
#define HU_DATA 'D'   /* len u32, at most HU_DATA_MAX bytes */
#define HU_COMMIT 'C' /* the file is whole: it replaces the path */
#define HU_END 'Q'    /* the end: the answer {"filesWritten":N} */
#define HU_DATA_MAX (1u << 20)

/* download's stdout: a type byte, then (but for HD_END) a u32 length and
 * the data */
#define HD_HEAD 'H' /* mode u32: a file starts */
#define HD_DATA 'D' /* its bytes */
#define HD_END 'Z'  /* its end (no length) */
#define HD_ITEM 'E' /* a file that cannot be read: code u8, message */
#define HD_FAIL 'X' /* the stream fails: code u8, message */

#endif

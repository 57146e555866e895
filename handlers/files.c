/*
 * sandbox.writeFile, readFile, listFiles. Content is utf8 or base64 in the
 * JSON; the core sizes it (the 10 MiB cap decided from the encoded length
 * before anything is decoded) and decodes it once (sandbox_file_content).
 * This face encodes what is read and renders the listing (dokploy.c).
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/utf8.h"

int h_sandbox_write_file(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e)
{
	const char *enc = hin_str(in, "encoding", NULL), *content,
		   *path = hin_str(in, "path", NULL);
	int base64 = enc && strcmp(enc, "base64") == 0;
	unsigned mode = (unsigned)hin_i64(in, "mode", 0644);
	struct sandbox_file f;
	size_t len, size;
	unsigned char *bin = NULL;
	const void *data;
	int rc;

	content = hin_str(in, "content", &len);
	if (sandbox_file_content(content, len, base64, &bin, &data, &size, e) < 0)
		return -1;
	rc = sandbox_write_file(h->sb, h->r->org, hin_str(in, "sandboxId", NULL), path, data, size,
				mode, &f, e);
	free(bin);
	if (rc < 0)
		return -1;
	*out = json_object_new_object();
	json_object_object_add(*out, "path", json_object_new_string(f.path));
	json_object_object_add(*out, "size", json_object_new_int64(f.size));
	return 0;
}

/* Writes the readFile answer itself, the content escaped or encoded in
 * pieces straight into the answer (no JSON string of up to 14 MB built and
 * escaped again). Same fields, same order as the object below. */
static int send_content(struct req *r, const char *path, const struct buf *content, int base64,
			struct sp_err *e)
{
	enum { PIECE = 3 * 64 * 1024 };
	json_object *p = json_object_new_string(path);
	struct buf head, piece;
	const char *d = content->data ? content->data : "";
	size_t off = 0, used;
	char *enc =
		base64 ? malloc(sodium_base64_ENCODED_LEN(PIECE, sodium_base64_VARIANT_ORIGINAL))
		       : NULL;
	const char *pj = json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN |
								   JSON_C_TO_STRING_NOSLASHESCAPE);
	int bad = 0;

	/* the head holds the escaped path whole, whatever its length */
	buf_init(&head, strlen(pj) + 128);
	buf_init(&piece, 6 * PIECE + 16);
	if (buf_printf(&head, "{\"path\":%s,\"size\":%zu,\"encoding\":\"%s\",\"content\":\"", pj,
		       content->len, base64 ? "base64" : "utf8") < 0) {
		free(enc);
		json_object_put(p);
		buf_free(&head);
		buf_free(&piece);
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	}
	req_stream_begin(r, 200);
	bad = req_stream_write(r, head.data, head.len) < 0;
	while (!bad && off < content->len) {
		size_t n = content->len - off < PIECE ? content->len - off : PIECE;
		piece.len = 0;
		if (base64) {
			/* whole 3-byte groups until the last piece: no padding inside */
			size_t len = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
			if (!enc)
				break;
			sodium_bin2base64(enc, len, (const unsigned char *)d + off, n,
					  sodium_base64_VARIANT_ORIGINAL);
			if (buf_append(&piece, enc, len - 1) < 0)
				break;
		} else if (utf8_json_escape(d + off, n, off + n == content->len, &piece, &used) <
			   0) {
			break;
		} else {
			n = used; /* a sequence cut at the piece's end goes with the next */
		}
		off += n;
		bad = req_stream_write(r, piece.data, piece.len) < 0;
	}
	if (!bad && off == content->len)
		req_stream_write(r, "\"}\n", 3);
	else
		req_stream_abort(r); /* out of memory or the client is gone */
	free(enc);
	json_object_put(p);
	buf_free(&head);
	buf_free(&piece);
	return 0;
}

int h_sandbox_read_file(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *enc = hin_str(in, "encoding", NULL), *path = hin_str(in, "path", NULL);
	int base64 = enc && strcmp(enc, "base64") == 0;
	struct buf content;
	json_object *c;

	buf_init(&content, 0);
	if (sandbox_read_file(h->sb, h->r->org, hin_str(in, "sandboxId", NULL), path, &content, e) <
	    0)
		return -1;
	if (!base64 && !utf8_valid(content.data ? content.data : "", content.len)) {
		buf_free(&content);
		return sp_err_field(e, SP_UNPROCESSABLE, "encoding",
				    "File is not valid UTF-8; read it with encoding base64");
	}
	if (h->stream_ok) {
		int rc = send_content(h->r, path, &content, base64, e);
		buf_free(&content);
		return rc;
	}
	if (base64) {
		size_t n = sodium_base64_ENCODED_LEN(content.len, sodium_base64_VARIANT_ORIGINAL);
		char *b = malloc(n);
		if (!b) {
			buf_free(&content);
			return sp_err_set(e, SP_INTERNAL, "out of memory");
		}
		sodium_bin2base64(b, n, (const unsigned char *)(content.data ? content.data : ""),
				  content.len, sodium_base64_VARIANT_ORIGINAL);
		c = json_object_new_string_len(b, (int)(n - 1));
		free(b);
	} else {
		c = json_object_new_string_len(content.data ? content.data : "", (int)content.len);
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "path", json_object_new_string(path));
	json_object_object_add(*out, "size", json_object_new_int64((int64_t)content.len));
	json_object_object_add(*out, "encoding",
			       json_object_new_string(base64 ? "base64" : "utf8"));
	json_object_object_add(*out, "content", c);
	buf_free(&content);
	return 0;
}

int h_sandbox_list_files(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e)
{
	struct sandbox_file_list l;

	if (sandbox_list_files(h->sb, h->r->org, hin_str(in, "sandboxId", NULL),
			       hin_str(in, "path", NULL), &l, e) < 0)
		return -1;
	*out = dk_file_list_json(&l);
	sandbox_file_list_free(&l);
	return 0;
}

/* /healthz: answers while the worker can reach Redis; no key needed. */
#include "handlers.h"

#include "../store/store.h"

int h_health(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	(void)in;
	if (store_ping(h->sb->st, e) < 0)
		return -1;
	*out = json_object_new_object();
	json_object_object_add(*out, "status", json_object_new_string("ok"));
	return 0;
}

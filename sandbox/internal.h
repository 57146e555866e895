/* Shared between the files of sandbox/ only. */
#ifndef SANDPIT_SANDBOX_INTERNAL_H
#define SANDPIT_SANDBOX_INTERNAL_H

#include "../store/store.h"
#include "sandbox.h"

#define SB_RECORD_FIELDS 24

/* Fills sb from a record; -1 if the record is not a sandbox. */
int sandbox_from_rec(const struct store_rec *r, struct sandbox *sb);
/* Writes sb as name/value pairs into kv (2 * SB_RECORD_FIELDS slots), using
 * nums (SB_RECORD_FIELDS slots) for numbers. Returns the pair count * 2. */
int sandbox_to_kv(const struct sandbox *sb, char nums[][32], const char **kv);

/* The uid/gid that owns files the API creates, and the mode of a folder
 * that user must be able to use. */
void sandbox_owner(const struct sandbox *sb, unsigned *uid, unsigned *gid, unsigned *dir_mode);

#endif

/*
 * cached_table.h — what a backend knows about each cached table, kept for the session.
 *
 * Built on first use and rebuilt only after a relcache invalidation of the table (DDL,
 * trigger changes, GRANT/REVOKE, enable/disable, which create or drop triggers) or a change of
 * its capture word (store.h), so the read path does no catalog lookups in the common case.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "access/attnum.h"
#include "utils/hsearch.h"
}
#include "extension/primary_key.h"
#include "extension/store.h"

namespace local_cache {

struct RelInfo {
	Oid relid; /* hash key */
	bool valid;
	/* Hits and fills allowed: registered, and the capture triggers intact (cached_table.cpp). */
	bool cacheable;
	/* The capture triggers are intact: every committed write of the table is seen (CLIENT
	 * TRACKING is told). Not so while they are disabled or fire ORIGIN only. */
	bool writes_captured;
	/* Every column renders to JSON independently of session settings (see cached_table.cpp). */
	bool json_cacheable;
	PrimaryKey key;
	Oid rowtype;
	Oid relnamespace;
	TableSlotRef table;
	/* No capture change was committing when the info was built (else it is rebuilt per call). */
	bool capture_settled;
	Oid select_checked_for; /* role whose SELECT privilege was last verified */
	NameData relname;
};

void relinfo_register_callbacks(void);

/* Whether a capture row trigger's WHEN clause, read, is `local_cache.capture_keys(<relid>)`. */
bool is_capture_keys_call(Node *expr, Oid relid);

/* A process-local hash table in `context` whose entries start with a key of `keysize` bytes. */
HTAB *blob_hash_create(const char *name, Size keysize, Size entrysize, MemoryContext context);

/* A session-lifetime hash table of entries whose first field is a relation's Oid. */
HTAB *relation_hash_create(const char *name, Size entrysize);

/*
 * Locks the relation (AccessShareLock, held to transaction end like any read), makes sure
 * it is an enabled table, checks that `role` (default: the current role) may read all of it,
 * and returns its
 * info. Raises the same errors SQL would, plus "not enabled".
 */
RelInfo *relinfo_open(Oid relid, Oid role = InvalidOid);

/* The same without the privilege check, for planning (privileges are checked at execution). */
RelInfo *relinfo_lookup(Oid relid);

/*
 * What the session knows of the table already, without a lock, a catalog access or processing
 * invalidations: nullptr unless built and not invalidated since. Only for callers that know by
 * other means that the catalogs have not changed (the catalog epoch, store.h).
 */
RelInfo *relinfo_peek(Oid relid);

/* Whether relinfo_open(relid, role) would pass the privilege and row-security checks, without
 * raising: for SCAN, which skips the tables a role may not read. */
bool relinfo_readable(Oid relid, Oid role);

/* The table's slot was reassigned: rebuild on next use. */
void relinfo_forget_slot(RelInfo *info);

} // namespace local_cache

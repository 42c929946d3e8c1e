/*
 * relinfo.cpp — the session-level cache of per-table facts the read paths need:
 * registry entry, primary key, row type, shape signature, counters slot, privilege check.
 *
 * Entries live in CacheMemoryContext and are marked invalid by relcache callbacks;
 * a privilege check is remembered per role and forgotten when roles or memberships change
 * (GRANT/REVOKE on the table itself arrive as relcache invalidations).
 */
#include "relinfo.h"

#include "invalidation.h"

extern "C" {
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "utils/typcache.h"
}

namespace local_cache {

namespace {

HTAB *relinfos = nullptr;

/* The triggers enable() creates; all must fire ALWAYS for the cache to be used. */
const char *const TRIGGERS[] = {"local_cache_mark_written", "local_cache_invalidate",
								"local_cache_invalidate_truncate"};
constexpr int NUM_TRIGGERS = sizeof(TRIGGERS) / sizeof(TRIGGERS[0]);

bool is_our_trigger(const char *name)
{
	for (int i = 0; i < NUM_TRIGGERS; i++)
		if (strcmp(name, TRIGGERS[i]) == 0)
			return true;
	return false;
}

void relcache_changed(Datum, Oid relid)
{
	if (relinfos == nullptr)
		return;
	if (relid == InvalidOid) {
		HASH_SEQ_STATUS status;
		hash_seq_init(&status, relinfos);
		while (RelInfo *info = static_cast<RelInfo *>(hash_seq_search(&status)))
			info->valid = false;
	} else if (RelInfo *info = static_cast<RelInfo *>(hash_search(relinfos, &relid, HASH_FIND, NULL))) {
		info->valid = false;
	}
}

void roles_changed(Datum, int, uint32)
{
	if (relinfos == nullptr)
		return;
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, relinfos);
	while (RelInfo *info = static_cast<RelInfo *>(hash_seq_search(&status)))
		info->select_checked_for = InvalidOid;
}

struct SignatureHash {
	uint64 value = 0xcbf29ce484222325ULL;
	void add(const void *data, size_t len)
	{
		const unsigned char *bytes = static_cast<const unsigned char *>(data);
		for (size_t i = 0; i < len; i++) {
			value ^= bytes[i];
			value *= 0x100000001b3ULL;
		}
	}
	template <typename T> void add(const T &v) { add(&v, sizeof(v)); }
};

/*
 * Everything that changes cached rows without row-level triggers: storage (rewrites,
 * TRUNCATE), columns (names and types change the JSON; missing values change the rows),
 * which column is the key, and whether the invalidation triggers fire. Entries built under another signature are
 * flushed when a backend first sees the new one (store_attach_table).
 */
uint64 shape_signature(Relation rel, AttrNumber pk_attnum, bool triggers_fire)
{
	SignatureHash hash;
	TupleDesc desc = RelationGetDescr(rel);
	hash.add(rel->rd_rel->relfilenode);
	hash.add(rel->rd_rel->reltype);
	hash.add(desc->natts);
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute att = TupleDescAttr(desc, i);
		hash.add(NameStr(att->attname), strlen(NameStr(att->attname)) + 1);
		hash.add(att->atttypid);
		hash.add(att->atttypmod);
		hash.add(att->attisdropped);
		hash.add(att->atthasmissing);
	}
	hash.add(pk_attnum);
	hash.add(triggers_fire);
	return hash.value;
}

/*
 * Whether row_to_json renders a value of this type the same in every session and for
 * as long as the entry lives: not true of timestamptz (TimeZone), floats
 * (extra_float_digits), intervals, bytea, money..., nor of enums (ALTER TYPE ... RENAME
 * VALUE changes their text without touching the table). Only such types' JSON is
 * cached; other rows are rendered by the reader.
 */
bool json_is_session_independent(Oid type)
{
	type = getBaseType(type);
	Oid element = get_element_type(type);
	if (OidIsValid(element))
		return json_is_session_independent(element);
	switch (type) {
	case INT2OID:
	case INT4OID:
	case INT8OID:
	case OIDOID:
	case NUMERICOID:
	case BOOLOID:
	case TEXTOID:
	case VARCHAROID:
	case BPCHAROID:
	case NAMEOID:
	case CHAROID:
	case JSONOID:
	case JSONBOID:
	case UUIDOID:
	case DATEOID:
	case TIMESTAMPOID:
		return true;
	default:
		return false;
	}
}

bool triggers_fire_always(Relation rel, Oid nsp)
{
	if (rel->trigdesc == nullptr)
		return false;
	int firing = 0;
	for (int i = 0; i < rel->trigdesc->numtriggers; i++) {
		const Trigger *trigger = &rel->trigdesc->triggers[i];
		if (!is_our_trigger(trigger->tgname))
			continue;
		if (trigger->tgenabled != TRIGGER_FIRES_ALWAYS || get_func_namespace(trigger->tgfoid) != nsp)
			return false;
		firing++;
	}
	return firing == NUM_TRIGGERS;
}

/* Reads the registry row of relid (latest committed state, like the relcache). */
bool read_registry(Oid nsp, Oid relid, NameData *resp_prefix)
{
	Oid registry = get_relname_relid("tables", nsp);
	Oid registry_pkey = get_relname_relid("tables_pkey", nsp);
	if (!OidIsValid(registry) || !OidIsValid(registry_pkey))
		return false;

	Relation rel = table_open(registry, AccessShareLock);
	ScanKeyData key;
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	SysScanDesc scan = systable_beginscan(rel, registry_pkey, true, NULL, 1, &key);
	HeapTuple tuple = systable_getnext(scan);
	bool found = HeapTupleIsValid(tuple);
	if (found) {
		bool isnull;
		Datum prefix = heap_getattr(tuple, 2, RelationGetDescr(rel), &isnull);
		namestrcpy(resp_prefix, isnull ? "" : TextDatumGetCString(prefix));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

void read_primary_key(Relation rel, RelInfo *info)
{
	list_free(RelationGetIndexList(rel));
	Oid pk_index = rel->rd_pkindex;
	bool usable = false;

	if (OidIsValid(pk_index)) {
		HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pk_index));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", pk_index);
		Form_pg_index index = (Form_pg_index) GETSTRUCT(tuple);
		bool isnull;
		oidvector *opclasses = (oidvector *) DatumGetPointer(
			SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indclass, &isnull));
		if (index->indnkeyatts == 1 && index->indkey.values[0] > 0) {
			/* Primary keys are unique, so btree: strategy numbers below are btree's. */
			info->pk_attnum = index->indkey.values[0];
			info->pk_type = TupleDescAttr(RelationGetDescr(rel), info->pk_attnum - 1)->atttypid;
			Oid opfamily = get_opclass_family(opclasses->values[0]);
			Oid eq = get_opfamily_member(opfamily, info->pk_type, info->pk_type,
										 BTEqualStrategyNumber);
			usable = OidIsValid(eq) &&
				(info->pk_type == INT8OID || info->pk_type == INT4OID || info->pk_type == INT2OID);
			if (usable)
				info->pk_eq_proc = get_opcode(eq);
		}
		ReleaseSysCache(tuple);
	}
	if (!usable)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("table \"%s\" no longer has a single-column bigint, integer or smallint primary key",
						RelationGetRelationName(rel)),
				 errhint("Call local_cache.disable('%s').", RelationGetRelationName(rel))));
	info->pk_index = pk_index;
}

void build(RelInfo *info)
{
	Relation rel = try_relation_open(info->relid, NoLock);
	if (rel == nullptr)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", info->relid)));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel))));

	Oid nsp = get_namespace_oid("local_cache", true);
	if (!OidIsValid(nsp) || !read_registry(nsp, info->relid, &info->resp_prefix))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not enabled in local_cache", RelationGetRelationName(rel)),
				 errhint("Call local_cache.enable('%s') first.",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
													RelationGetRelationName(rel)))));
	/* Registered by 1.0, which did not refuse them: their rows belong to one session. */
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("temporary table \"%s\" cannot be cached", RelationGetRelationName(rel)),
				 errhint("Call local_cache.disable('%s').", RelationGetRelationName(rel))));
	if (rel->rd_rel->relrowsecurity)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has row-level security enabled", RelationGetRelationName(rel)),
				 errhint("Cached reads cannot apply row security policies; call local_cache.disable('%s').",
						 RelationGetRelationName(rel))));

	read_primary_key(rel, info);

	bool triggers_fire = triggers_fire_always(rel, nsp);
	TupleDesc desc = RelationGetDescr(rel);
	info->json_cacheable = true;
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute att = TupleDescAttr(desc, i);
		if (!att->attisdropped && !json_is_session_independent(att->atttypid))
			info->json_cacheable = false;
	}
	info->rowtype = rel->rd_rel->reltype;
	namestrcpy(&info->relname, RelationGetRelationName(rel));
	/* Without firing triggers, writes are not seen: read the table, and flush on the switch. */
	info->table = store_attach_table(MyDatabaseId, info->relid, shape_signature(rel, info->pk_attnum, triggers_fire));
	info->cacheable = triggers_fire && info->table.slot >= 0;
	relation_close(rel, NoLock);
}

void check_select_privilege(RelInfo *info, Oid role)
{
	if (info->select_checked_for == role)
		return;
	AclResult result = pg_class_aclcheck(info->relid, role, ACL_SELECT);
	if (result != ACLCHECK_OK)
		result = pg_attribute_aclcheck_all(info->relid, role, ACL_SELECT, ACLMASK_ALL);
	if (result != ACLCHECK_OK)
		aclcheck_error(result, OBJECT_TABLE, NameStr(info->relname));
	info->select_checked_for = role;
}

} // namespace

void relinfo_register_callbacks(void)
{
	CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, roles_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, roles_changed, (Datum) 0);
}

HTAB *relation_hash_create(const char *name, Size entrysize)
{
	HASHCTL ctl;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = entrysize;
	ctl.hcxt = CacheMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

RelInfo *relinfo_lookup(Oid relid)
{
	store_require_available();
	if (relinfos == nullptr)
		relinfos = relation_hash_create("local_cache relations", sizeof(RelInfo));

	/* Taking the lock processes pending invalidations, so `valid` is current afterwards. */
	LockRelationOid(relid, AccessShareLock);

	bool found;
	RelInfo *info = static_cast<RelInfo *>(hash_search(relinfos, &relid, HASH_ENTER, &found));
	if (!found) {
		info->valid = false;
		info->select_checked_for = InvalidOid;
	}
	if (!info->valid) {
		info->cacheable = false;
		info->select_checked_for = InvalidOid;
		build(info);
		info->valid = true;
	}
	return info;
}

RelInfo *relinfo_open(Oid relid, Oid role)
{
	RelInfo *info = relinfo_lookup(relid);
	check_select_privilege(info, OidIsValid(role) ? role : GetUserId());
	return info;
}

void relinfo_forget_slot(RelInfo *info)
{
	info->valid = false;
}

} // namespace local_cache

/*
 * cached_table.cpp — the session-level cache of per-table facts the read paths need:
 * registry entry, primary key, row type, shape signature, counters slot, privilege check.
 *
 * Entries live in CacheMemoryContext and are marked invalid by relcache callbacks;
 * a privilege check is remembered per role and forgotten when roles or memberships change
 * (GRANT/REVOKE on the table itself arrive as relcache invalidations).
 */
#include "extension/cached_table.h"

#include "extension/boundary.h"
#include "extension/invalidation.h"
#include "extension/registry.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/primnodes.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace local_cache {

namespace {

HTAB *relinfos = nullptr;

/*
 * The triggers enable() creates, exactly as it creates them (sql/local_cache--*.sql): the cache is
 * used only while all three exist with these definitions and fire ALWAYS.
 */
struct CaptureTrigger {
	const char *name;
	int16 type;
};
const CaptureTrigger CAPTURE_TRIGGERS[] = {
	{"local_cache_mark_written",
	 TRIGGER_TYPE_BEFORE | TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE},
	{"local_cache_invalidate",
	 TRIGGER_TYPE_ROW | TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE},
	{"local_cache_invalidate_truncate", TRIGGER_TYPE_TRUNCATE},
};
constexpr int NUM_CAPTURE_TRIGGERS = sizeof(CAPTURE_TRIGGERS) / sizeof(CAPTURE_TRIGGERS[0]);

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

/* A role, a membership or a schema changed: privilege checks are redone. */
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
 * which column is the key, and every version of the capture triggers (`hash` holds them,
 * see capture_triggers_intact). Entries built under another signature are flushed when a
 * backend first sees the new one (store_set_signature): whatever path missed a change to the
 * triggers, writes made while they were changed are not served.
 */
uint64 shape_signature(Relation rel, const PrimaryKey &key, SignatureHash hash)
{
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
	hash.add(key.ncolumns);
	for (int c = 0; c < key.ncolumns; c++)
		hash.add(key.attnums[c]);
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

/*
 * The row trigger's WHEN clause, if any, is exactly `local_cache.capture_keys(<this table>)`
 * (enable() since 1.5): it skips only the rows of a table the transaction flushes whole at commit
 * anyway. No WHEN clause (enable() before 1.5) captures every row too.
 */
bool capture_qual_matches(HeapTuple tuple, Relation triggers, Oid relid, bool row_trigger)
{
	bool isnull;
	Datum qual = heap_getattr(tuple, Anum_pg_trigger_tgqual, RelationGetDescr(triggers), &isnull);
	if (isnull)
		return true;
	return row_trigger && is_capture_keys_call(static_cast<Node *>(stringToNode(TextDatumGetCString(qual))), relid);
}

bool capture_trigger_matches(HeapTuple tuple, Relation triggers, const CaptureTrigger &expected, Oid capture_function,
							 Oid relid)
{
	Form_pg_trigger trigger = (Form_pg_trigger) GETSTRUCT(tuple);
	return trigger->tgfoid == capture_function && trigger->tgtype == expected.type &&
		trigger->tgenabled == TRIGGER_FIRES_ALWAYS && trigger->tgnargs == 0 &&
		trigger->tgattr.dim1 == 0 && !OidIsValid(trigger->tgconstraint) && !trigger->tgdeferrable &&
		capture_qual_matches(tuple, triggers, relid, TRIGGER_FOR_ROW(expected.type)) &&
		heap_attisnull(tuple, Anum_pg_trigger_tgoldtable, NULL) &&
		heap_attisnull(tuple, Anum_pg_trigger_tgnewtable, NULL);
}

/*
 * Whether the table's capture triggers are all there as enable() made them (events, timing,
 * level, ALWAYS, the function, no arguments or columns, no WHEN clause but capture_keys'). Reads pg_trigger with a
 * fresh catalog snapshot: a trigger change that committed after this backend last took
 * invalidations is seen (its lock, ShareRowExclusiveLock, does not conflict with a reader's).
 * Adds every version of the triggers (name and tuple xmin) to `hash`.
 */
bool capture_triggers_intact(Oid relid, SignatureHash *hash)
{
	List *name = list_make2(makeString(pstrdup("local_cache")), makeString(pstrdup("capture_changes")));
	Oid capture_function = LookupFuncName(name, 0, NULL, true);
	bool intact[NUM_CAPTURE_TRIGGERS] = {};

	InvalidateCatalogSnapshot();
	Relation triggers = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	SysScanDesc scan = systable_beginscan(triggers, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (HeapTuple tuple = systable_getnext(scan)) {
		const char *tgname = NameStr(((Form_pg_trigger) GETSTRUCT(tuple))->tgname);
		for (int i = 0; i < NUM_CAPTURE_TRIGGERS; i++) {
			if (strcmp(tgname, CAPTURE_TRIGGERS[i].name) != 0)
				continue;
			intact[i] = capture_trigger_matches(tuple, triggers, CAPTURE_TRIGGERS[i], capture_function, relid);
			hash->add(tgname, strlen(tgname) + 1);
			hash->add(HeapTupleHeaderGetRawXmin(tuple->t_data));
		}
	}
	systable_endscan(scan);
	table_close(triggers, AccessShareLock);

	bool all = OidIsValid(capture_function);
	for (int i = 0; i < NUM_CAPTURE_TRIGGERS; i++)
		all = all && intact[i];
	hash->add(all);
	return all;
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

	if (!registry_lookup(info->relid))
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

	if (primary_key_of(rel, &info->key) != KeyProblem::None)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("table \"%s\" no longer has a primary key local_cache can key rows by",
						RelationGetRelationName(rel)),
				 errhint("Call local_cache.disable('%s').", RelationGetRelationName(rel))));

	/* The capture words first, then the catalog: see TableSlotRef (store.h). */
	info->capture_settled = store_attach_table(MyDatabaseId, info->relid, &info->table);
	SignatureHash triggers;
	bool capture_intact = capture_triggers_intact(info->relid, &triggers);
	TupleDesc desc = RelationGetDescr(rel);
	info->json_cacheable = true;
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute att = TupleDescAttr(desc, i);
		if (!att->attisdropped && !json_is_session_independent(att->atttypid))
			info->json_cacheable = false;
	}
	info->rowtype = rel->rd_rel->reltype;
	info->relnamespace = RelationGetNamespace(rel);
	namestrcpy(&info->relname, RelationGetRelationName(rel));
	store_set_signature(MyDatabaseId, info->relid, info->table, shape_signature(rel, info->key, triggers));
	/* Without intact capture triggers writes are not seen: read the table. */
	info->writes_captured = capture_intact;
	info->cacheable = capture_intact && info->capture_settled && info->table.slot >= 0;
	relation_close(rel, NoLock);
}

/*
 * What SELECT * FROM schema.table checks: USAGE on the schema (the parser checks it when it
 * resolves the name; a table named by OID or through RESP is not resolved by name) and SELECT on
 * the table or all its columns. Returns the first failed check, and what it was about.
 */
AclResult select_privilege(Oid relid, Oid relnamespace, Oid role, ObjectType *denied_on)
{
	*denied_on = OBJECT_SCHEMA;
	AclResult result = pg_namespace_aclcheck(relnamespace, role, ACL_USAGE);
	if (result != ACLCHECK_OK)
		return result;
	*denied_on = OBJECT_TABLE;
	result = pg_class_aclcheck(relid, role, ACL_SELECT);
	if (result != ACLCHECK_OK)
		result = pg_attribute_aclcheck_all(relid, role, ACL_SELECT, ACLMASK_ALL);
	return result;
}

void check_select_privilege(RelInfo *info, Oid role)
{
	if (info->select_checked_for == role)
		return;
	ObjectType denied_on;
	AclResult result = select_privilege(info->relid, info->relnamespace, role, &denied_on);
	if (result != ACLCHECK_OK)
		aclcheck_error(result, denied_on,
					   denied_on == OBJECT_SCHEMA ? get_namespace_name(info->relnamespace) : NameStr(info->relname));
	info->select_checked_for = role;
}

} // namespace

bool is_capture_keys_call(Node *expr, Oid relid)
{
	if (!IsA(expr, FuncExpr))
		return false;
	FuncExpr *call = castNode(FuncExpr, expr);
	List *name = list_make2(makeString(pstrdup("local_cache")), makeString(pstrdup("capture_keys")));
	Oid argtype = REGCLASSOID;
	if (call->funcid != LookupFuncName(name, 1, &argtype, true) || list_length(call->args) != 1 ||
		!IsA(linitial(call->args), Const))
		return false;
	Const *table = castNode(Const, linitial(call->args));
	return table->consttype == REGCLASSOID && !table->constisnull && DatumGetObjectId(table->constvalue) == relid;
}

void relinfo_register_callbacks(void)
{
	CacheRegisterRelcacheCallback(pg_entry<relcache_changed>, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, pg_entry<roles_changed>, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, pg_entry<roles_changed>, (Datum) 0);
	/* GRANT/REVOKE ... ON SCHEMA, and schema renames. */
	CacheRegisterSyscacheCallback(NAMESPACEOID, pg_entry<roles_changed>, (Datum) 0);
}

HTAB *blob_hash_create(const char *name, Size keysize, Size entrysize, MemoryContext context)
{
	HASHCTL ctl;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = context;
	return hash_create(name, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

HTAB *relation_hash_create(const char *name, Size entrysize)
{
	return blob_hash_create(name, sizeof(Oid), entrysize, CacheMemoryContext);
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
	/* A capture change began (or, for one seen committing at build time, ended) since. */
	if (info->valid && (!info->capture_settled || !store_capture_unchanged(info->table)))
		info->valid = false;
	if (!info->valid) {
		info->cacheable = false;
		info->writes_captured = false;
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

RelInfo *relinfo_peek(Oid relid)
{
	if (relinfos == nullptr)
		return nullptr;
	RelInfo *info = static_cast<RelInfo *>(hash_search(relinfos, &relid, HASH_FIND, nullptr));
	return info != nullptr && info->valid ? info : nullptr;
}

bool relinfo_readable(Oid relid, Oid role)
{
	HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return false;
	Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);
	bool row_security = form->relrowsecurity;
	Oid relnamespace = form->relnamespace;
	ReleaseSysCache(tuple);
	ObjectType denied_on;
	return !row_security && select_privilege(relid, relnamespace, role, &denied_on) == ACLCHECK_OK;
}

void relinfo_forget_slot(RelInfo *info)
{
	info->valid = false;
}

} // namespace local_cache

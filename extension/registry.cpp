/*
 * registry.cpp — reads local_cache.tables through its primary-key index (lookups) or a heap
 * scan (the whole registry), with the catalog snapshot, the way the relcache reads catalogs:
 * no SPI, no parsing, usable from hooks and callbacks that run inside a transaction.
 */
#include "extension/registry.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace local_cache {

namespace {

/* The registry's columns (sql/local_cache--1.0.sql). */
constexpr AttrNumber ATTNUM_RELID = 1;
constexpr AttrNumber ATTNUM_RESP_PREFIX = 2;

/* The registry table and its primary key, or InvalidOid when the extension is not installed. */
bool registry_relations(Oid *table, Oid *pkey)
{
	Oid nsp = get_namespace_oid("local_cache", true);
	*table = OidIsValid(nsp) ? get_relname_relid("tables", nsp) : InvalidOid;
	*pkey = OidIsValid(nsp) ? get_relname_relid("tables_pkey", nsp) : InvalidOid;
	return OidIsValid(*table) && OidIsValid(*pkey);
}

void read_entry(HeapTuple tuple, TupleDesc desc, RegistryEntry *entry)
{
	bool isnull;
	entry->relid = DatumGetObjectId(heap_getattr(tuple, ATTNUM_RELID, desc, &isnull));
	Datum prefix = heap_getattr(tuple, ATTNUM_RESP_PREFIX, desc, &isnull);
	entry->resp_prefix = isnull ? "" : TextDatumGetCString(prefix);
}

} // namespace

struct RegistryScan {
	Relation rel;
	SysScanDesc scan;
};

bool registry_lookup(Oid relid, RegistryEntry *entry)
{
	Oid table, pkey;
	if (!registry_relations(&table, &pkey))
		return false;
	Relation rel = table_open(table, AccessShareLock);
	ScanKeyData key;
	ScanKeyInit(&key, ATTNUM_RELID, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	SysScanDesc scan = systable_beginscan(rel, pkey, true, NULL, 1, &key);
	HeapTuple tuple = systable_getnext(scan);
	bool found = HeapTupleIsValid(tuple);
	if (found && entry != nullptr)
		read_entry(tuple, RelationGetDescr(rel), entry);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

RegistryScan *registry_begin_scan(void)
{
	Oid table, pkey;
	if (!registry_relations(&table, &pkey))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension local_cache is not installed in database \"%s\"",
						get_database_name(MyDatabaseId))));
	RegistryScan *scan = static_cast<RegistryScan *>(palloc(sizeof(RegistryScan)));
	scan->rel = table_open(table, AccessShareLock);
	scan->scan = systable_beginscan(scan->rel, InvalidOid, false, NULL, 0, NULL);
	return scan;
}

bool registry_next(RegistryScan *scan, RegistryEntry *entry)
{
	HeapTuple tuple = systable_getnext(scan->scan);
	if (!HeapTupleIsValid(tuple))
		return false;
	read_entry(tuple, RelationGetDescr(scan->rel), entry);
	return true;
}

void registry_end_scan(RegistryScan *scan)
{
	systable_endscan(scan->scan);
	table_close(scan->rel, AccessShareLock);
	pfree(scan);
}

} // namespace local_cache

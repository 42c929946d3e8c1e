/*
 * options.cpp — local_cache_fdw's options, the mapping of a foreign table onto its source
 * table, and IMPORT FOREIGN SCHEMA.
 *
 * A foreign table names its source with OPTIONS (table 'schema.name'). Its columns must be
 * columns of the source with the same names and types (any subset, any order). As with
 * postgres_fdw, the validator checks only what it can check alone (the option's name and
 * syntax), so dumps restore in any order; the mapping is checked when a query is planned and
 * again when it runs, from a session cache that relcache invalidations of either table reset,
 * so a missing, altered or dropped source makes queries fail with a clear error, never read
 * wrong columns.
 */
#include "fdw/fdw.h"

#include "extension/boundary.h"
#include "extension/registry.h"

extern "C" {
#include "access/relation.h"
#include "access/reloptions.h"
#include "catalog/namespace.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace local_cache {

namespace {

HTAB *foreign_tables = nullptr;

void invalidate_mappings(Datum, Oid relid)
{
	if (foreign_tables == nullptr)
		return;
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, foreign_tables);
	while (ForeignTableInfo *info = static_cast<ForeignTableInfo *>(hash_seq_search(&status)))
		if (relid == InvalidOid || info->foreign_relid == relid || info->source_relid == relid)
			info->valid = false;
}

void invalidate_all_mappings(Datum, int, uint32)
{
	invalidate_mappings((Datum) 0, InvalidOid);
}

const char *table_option(Oid foreign_relid)
{
	ForeignTable *table = GetForeignTable(foreign_relid);
	ListCell *cell;
	foreach (cell, table->options) {
		DefElem *def = static_cast<DefElem *>(lfirst(cell));
		if (strcmp(def->defname, "table") == 0)
			return defGetString(def);
	}
	ereport(ERROR,
			(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
			 errmsg("foreign table \"%s\" has no \"table\" option", get_rel_name(foreign_relid)),
			 errhint("Name the cached table: OPTIONS (table 'schema.name').")));
	return nullptr;
}

Oid resolve_source(Oid foreign_relid)
{
	const char *name = table_option(foreign_relid);
	Oid source = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(name)), NoLock, true);
	if (!OidIsValid(source))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table \"%s\" of foreign table \"%s\" does not exist", name, get_rel_name(foreign_relid)),
				 errhint("Create the table and call local_cache.enable() on it, or point the foreign table "
						 "elsewhere: ALTER FOREIGN TABLE ... OPTIONS (SET table 'schema.name').")));
	return source;
}

void build_mapping(ForeignTableInfo *info)
{
	Oid source = resolve_source(info->foreign_relid);
	RelInfo *source_info = relinfo_lookup(source); /* locks it; errors unless enabled */

	Relation foreign = relation_open(info->foreign_relid, NoLock);
	Relation rel = relation_open(source, NoLock);
	TupleDesc fdesc = RelationGetDescr(foreign);
	TupleDesc sdesc = RelationGetDescr(rel);

	info->natts = fdesc->natts;
	info->source_natts = sdesc->natts;
	info->key = source_info->key;
	memset(info->key_attnums, 0, sizeof(info->key_attnums));
	if (info->source_attnum != nullptr)
		pfree(info->source_attnum);
	info->source_attnum = static_cast<AttrNumber *>(
		MemoryContextAllocZero(CacheMemoryContext, sizeof(AttrNumber) * (fdesc->natts + 1)));

	for (int i = 0; i < fdesc->natts; i++) {
		Form_pg_attribute fatt = TupleDescAttr(fdesc, i);
		if (fatt->attisdropped)
			continue;
		AttrNumber sattnum = InvalidAttrNumber;
		for (int j = 0; j < sdesc->natts && sattnum == InvalidAttrNumber; j++) {
			Form_pg_attribute satt = TupleDescAttr(sdesc, j);
			if (!satt->attisdropped && strcmp(NameStr(satt->attname), NameStr(fatt->attname)) == 0)
				sattnum = satt->attnum;
		}
		if (sattnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of foreign table \"%s\" does not exist in table \"%s\"",
							NameStr(fatt->attname), RelationGetRelationName(foreign),
							RelationGetRelationName(rel))));
		Form_pg_attribute satt = TupleDescAttr(sdesc, sattnum - 1);
		if (satt->atttypid != fatt->atttypid ||
			(fatt->atttypmod != -1 && satt->atttypmod != fatt->atttypmod))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of foreign table \"%s\" is of type %s but column \"%s\" of table \"%s\" is of type %s",
							NameStr(fatt->attname), RelationGetRelationName(foreign),
							format_type_with_typemod(fatt->atttypid, fatt->atttypmod),
							NameStr(satt->attname), RelationGetRelationName(rel),
							format_type_with_typemod(satt->atttypid, satt->atttypmod))));
		info->source_attnum[i] = sattnum;
		for (int c = 0; c < info->key.ncolumns; c++)
			if (sattnum == info->key.attnums[c])
				info->key_attnums[c] = fatt->attnum;
	}
	info->key_mapped = true;
	for (int c = 0; c < info->key.ncolumns; c++)
		info->key_mapped &= info->key_attnums[c] != 0;
	info->source_relid = source;
	relation_close(rel, NoLock);
	relation_close(foreign, NoLock);
}

} // namespace

ForeignTableInfo *foreign_table_info(Oid foreign_relid)
{
	if (foreign_tables == nullptr) {
		foreign_tables = relation_hash_create("local_cache foreign tables", sizeof(ForeignTableInfo));
		CacheRegisterRelcacheCallback(pg_entry<invalidate_mappings>, (Datum) 0);
		CacheRegisterSyscacheCallback(FOREIGNTABLEREL, pg_entry<invalidate_all_mappings>, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, pg_entry<invalidate_all_mappings>, (Datum) 0);
	}
	bool found;
	ForeignTableInfo *info = static_cast<ForeignTableInfo *>(
		hash_search(foreign_tables, &foreign_relid, HASH_ENTER, &found));
	if (!found) {
		info->valid = false;
		info->source_attnum = nullptr;
		info->source_relid = InvalidOid;
	}
	if (OidIsValid(info->source_relid))
		LockRelationOid(info->source_relid, AccessShareLock); /* and take invalidations */
	if (!info->valid) {
		build_mapping(info);
		info->valid = true;
	}
	return info;
}

char *foreign_table_source_name(Oid foreign_relid)
{
	return pstrdup(table_option(foreign_relid));
}

List *fdw_import_schema(ImportForeignSchemaStmt *stmt, Oid server_oid)
{
	ForeignServer *server = GetForeignServer(server_oid);
	List *commands = NIL;
	Oid nsp = get_namespace_oid(stmt->remote_schema, true);
	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_SCHEMA_NOT_FOUND),
				 errmsg("schema \"%s\" does not exist", stmt->remote_schema)));

	/* The enabled tables of the schema, by name. */
	List *tables = NIL;
	registry_scan([&](const RegistryEntry &entry) {
		if (get_rel_namespace(entry.relid) == nsp)
			tables = lappend_oid(tables, entry.relid);
	});
	uint64 ntables = list_length(tables);
	Oid *relids = static_cast<Oid *>(palloc(sizeof(Oid) * (ntables + 1)));
	char **relnames = static_cast<char **>(palloc(sizeof(char *) * (ntables + 1)));
	for (uint64 i = 0; i < ntables; i++)
		relids[i] = list_nth_oid(tables, int(i));
	qsort(relids, ntables, sizeof(Oid), [](const void *a, const void *b) {
		return strcmp(get_rel_name(*static_cast<const Oid *>(a)), get_rel_name(*static_cast<const Oid *>(b)));
	});
	for (uint64 i = 0; i < ntables; i++)
		relnames[i] = get_rel_name(relids[i]);

	/* The commands must outlive SPI_finish(): build them in the caller's memory. */
	MemoryContext caller_context = CurrentMemoryContext;
	SPI_connect();

	/* LIMIT TO must name enabled tables: core would skip the others silently. */
	if (stmt->list_type == FDW_IMPORT_SCHEMA_LIMIT_TO) {
		ListCell *cell;
		foreach (cell, stmt->table_list) {
			RangeVar *rv = static_cast<RangeVar *>(lfirst(cell));
			bool enabled = false;
			for (uint64 i = 0; i < ntables && !enabled; i++)
				enabled = strcmp(relnames[i], rv->relname) == 0;
			if (!enabled)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("table \"%s.%s\" is not enabled in local_cache",
								stmt->remote_schema, rv->relname),
						 errhint("Call local_cache.enable('%s') first.",
								 quote_qualified_identifier(stmt->remote_schema, rv->relname))));
		}
	}

	for (uint64 i = 0; i < ntables; i++) {
		Oid colargs[1] = {OIDOID};
		Datum colvalues[1] = {ObjectIdGetDatum(relids[i])};
		SPI_execute_with_args(
			"SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,"
			"       CASE WHEN a.attcollation <> t.typcollation"
			"            THEN pg_catalog.quote_ident(co.collname) END"
			"  FROM pg_catalog.pg_attribute a"
			"  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
			"  LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation"
			" WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
			1, colargs, colvalues, NULL, true, 0);

		MemoryContext spi_context = MemoryContextSwitchTo(caller_context);
		StringInfoData sql;
		initStringInfo(&sql);
		appendStringInfo(&sql, "CREATE FOREIGN TABLE %s (", quote_identifier(relnames[i]));
		for (uint64 c = 0; c < SPI_processed; c++) {
			HeapTuple row = SPI_tuptable->vals[c];
			TupleDesc desc = SPI_tuptable->tupdesc;
			char *collation = SPI_getvalue(row, desc, 4);
			appendStringInfo(&sql, "%s%s %s", c > 0 ? ", " : "",
							 quote_identifier(SPI_getvalue(row, desc, 1)), SPI_getvalue(row, desc, 2));
			if (collation != nullptr)
				appendStringInfo(&sql, " COLLATE %s", collation);
			if (strcmp(SPI_getvalue(row, desc, 3), "t") == 0)
				appendStringInfoString(&sql, " NOT NULL");
		}
		appendStringInfo(&sql, ") SERVER %s OPTIONS (table %s)",
						 quote_identifier(server->servername),
						 quote_literal_cstr(quote_qualified_identifier(stmt->remote_schema, relnames[i])));
		commands = lappend(commands, sql.data);
		MemoryContextSwitchTo(spi_context);
	}
	SPI_finish();
	return commands;
}

} // namespace local_cache

using namespace local_cache;

static Datum fdw_validator(PG_FUNCTION_ARGS)
{
	List *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid catalog = PG_GETARG_OID(1);
	bool has_table = false;
	ListCell *cell;
	foreach (cell, options) {
		DefElem *def = static_cast<DefElem *>(lfirst(cell));
		if (catalog == ForeignTableRelationId && strcmp(def->defname, "table") == 0) {
			/* Only the name's syntax: the table may not exist yet (pg_restore creates
			 * foreign tables before tables). It is resolved when the table is used. */
			makeRangeVarFromNameList(stringToQualifiedNameList(defGetString(def)));
			has_table = true;
			continue;
		}
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("invalid option \"%s\"", def->defname),
				 catalog == ForeignTableRelationId
					 ? errhint("The only option of a local_cache foreign table is \"table\".")
					 : errhint("local_cache_fdw takes no options here.")));
	}
	if (catalog == ForeignTableRelationId && !has_table)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("a local_cache foreign table needs the \"table\" option"),
				 errhint("Name the cached table: OPTIONS (table 'schema.name').")));
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_fdw_validator, fdw_validator)

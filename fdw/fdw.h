/*
 * fdw.h — local_cache_fdw: cached rows of an enabled table as a foreign table.
 *
 *   options.cpp   validator, the foreign table ⇄ source table mapping, IMPORT FOREIGN SCHEMA
 *   planning.cpp  key conditions, paths (lookups, parameterized lookups, full scan), plans
 *   scan.cpp      the handler, execution, EXPLAIN, ANALYZE, and the read-only errors
 */
#pragma once

#include "extension/pg.h"
#include "extension/cached_table.h"

extern "C" {
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "nodes/pathnodes.h"
}

namespace local_cache {

/* A foreign table's mapping onto its source table, kept for the session. */
struct ForeignTableInfo {
	Oid foreign_relid; /* hash key */
	bool valid;
	Oid source_relid;
	/* The foreign columns holding the source's primary key columns, in key order (0: not
	 * mapped); lookups need them all. */
	bool key_mapped;
	PrimaryKey key;            /* the source's */
	AttrNumber key_attnums[MAX_KEY_COLUMNS];
	int natts;                 /* of the foreign table */
	AttrNumber *source_attnum; /* per foreign column (0-based index); 0 for dropped columns */
	int source_natts;
};

/* Validates the mapping (columns exist with the same types) and returns it; errors if not. */
ForeignTableInfo *foreign_table_info(Oid foreign_relid);
/* The qualified name of the source table, for messages. */
char *foreign_table_source_name(Oid foreign_relid);

/* planning.cpp */
void fdw_get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
void fdw_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
ForeignScan *fdw_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
						  ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan);

/* fdw_private of a ForeignScan plan, by position. */
enum PlanPrivate {
	PLAN_KEY_IS_ARRAY,   /* Integer: 1 for = ANY(array), 0 for = value (one per key column),
						  * -1 for a full scan; fdw_exprs holds the array or the values */
	PLAN_KEY_DISPLAY,    /* String: the key condition as EXPLAIN shows it */
	PLAN_NEEDED_COLUMNS  /* IntList: foreign attnums the query reads */
};

List *fdw_import_schema(ImportForeignSchemaStmt *stmt, Oid server_oid);

} // namespace local_cache

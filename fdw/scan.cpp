/*
 * scan.cpp — local_cache_fdw's handler: execution, EXPLAIN, ANALYZE, and read-only errors.
 *
 * A lookup scan evaluates its key expression once per (re)scan, removes NULLs and
 * duplicates (SQL set semantics: id = ANY('{3,1,3}') is two rows), and reads the keys
 * through fetch_rows() — the same lookup/fill path, snapshot rules and counters as mget —
 * with the query's snapshot. A full scan reads the source table under that snapshot
 * without filling the cache. Rows come back as virtual tuples of the foreign table's
 * shape, with only the columns the query reads filled in.
 */
#include "fdw/fdw.h"

#include "extension/boundary.h"
#include "extension/fetch.h"
#include "extension/primary_key.h"

extern "C" {
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/sampling.h"
#include "utils/snapmgr.h"
}

namespace local_cache {

namespace {

struct LookupScanState {
	ForeignTableInfo *table;
	RelInfo *source;
	int key_mode;            /* PLAN_KEY_IS_ARRAY value */
	int nkey_exprs;
	ExprState *key_exprs[MAX_KEY_COLUMNS]; /* the array, or each key column's value */
	bool *needed;            /* per foreign column */
	MemoryContext batch_context;

	/* lookups: the rows of the current batch, as composite datum bytes */
	bool fetched;
	char **rows;
	int nrows;
	int next_row;
	FetchCounts totals;

	/* full scan */
	Relation source_rel;
	TableScanDesc scan;
	TupleTableSlot *source_slot;

	Datum *source_values;
	bool *source_nulls;
};

void collect(void *context, int position, const FetchedRow &row)
{
	LookupScanState *state = static_cast<LookupScanState *>(context);
	char *copy = static_cast<char *>(palloc(row.tuple_len));
	memcpy(copy, row.tuple, row.tuple_len);
	state->rows[position] = copy;
}

/* The kinds the key expressions' values are read as (primary_key.h: value_kind_for). */
KeyShape value_kinds(LookupScanState *state)
{
	KeyShape kinds;
	kinds.ncolumns = state->source->key.ncolumns;
	for (int c = 0; c < kinds.ncolumns; c++) {
		Oid type = exprType(reinterpret_cast<Node *>(state->key_exprs[c]->expr));
		if (state->key_mode == 1)
			type = get_element_type(type);
		if (!value_kind_for(state->source->key.shape.kinds[c], type, &kinds.kinds[c]))
			elog(ERROR, "local_cache_fdw: a value of type %s cannot name a key", format_type_be(type));
	}
	return kinds;
}

/* Evaluates the key expressions into sorted, distinct, non-NULL keys. */
int evaluate_keys(LookupScanState *state, ExprContext *econtext, KeyBytes **keys_out)
{
	KeyShape kinds = value_kinds(state);
	Datum values[MAX_KEY_COLUMNS];
	for (int c = 0; c < state->nkey_exprs; c++) {
		bool isnull;
		values[c] = ExecEvalExpr(state->key_exprs[c], econtext, &isnull);
		if (isnull)
			return 0;
	}
	Datum *elements = values;
	bool *nulls = nullptr;
	int n = 1;
	if (state->key_mode == 1) {
		ArrayType *array = DatumGetArrayTypeP(values[0]);
		int16 typlen;
		bool typbyval;
		char typalign;
		get_typlenbyvalalign(ARR_ELEMTYPE(array), &typlen, &typbyval, &typalign);
		deconstruct_array(array, ARR_ELEMTYPE(array), typlen, typbyval, typalign, &elements, &nulls, &n);
	}
	StringInfoData buffer;
	initStringInfo(&buffer);
	int *ends = static_cast<int *>(palloc(sizeof(int) * (n + 1)));
	int nkeys = 0;
	for (int i = 0; i < n; i++) {
		if (nulls != nullptr && nulls[i])
			continue;
		append_key_bytes(kinds, state->key_mode == 1 ? &elements[i] : values, &buffer);
		ends[nkeys++] = buffer.len;
	}
	KeyBytes *keys = static_cast<KeyBytes *>(palloc(sizeof(KeyBytes) * (nkeys + 1)));
	for (int i = 0, start = 0; i < nkeys; start = ends[i], i++)
		keys[i] = KeyBytes{buffer.data + start, uint32(ends[i] - start)};
	*keys_out = keys;
	return sort_distinct_keys(keys, nkeys);
}

void fetch_batch(ForeignScanState *node, LookupScanState *state)
{
	MemoryContext old = MemoryContextSwitchTo(state->batch_context);
	KeyBytes *keys;
	int nkeys = evaluate_keys(state, node->ss.ps.ps_ExprContext, &keys);
	state->rows = static_cast<char **>(palloc0(sizeof(char *) * (nkeys + 1)));
	state->nrows = nkeys;
	state->next_row = 0;
	if (nkeys > 0) {
		FetchRequest request(state->source, node->ss.ps.state->es_snapshot, keys, nkeys);
		FetchCounts counts;
		fetch_rows(request, collect, state, &counts);
		state->totals.hits += counts.hits;
		state->totals.misses += counts.misses;
		state->totals.fills += counts.fills;
		state->totals.fill_rejections += counts.fill_rejections;
	}
	MemoryContextSwitchTo(old);
	state->fetched = true;
}

/* Fills the scan slot with the needed columns of a source row given as values/nulls. */
TupleTableSlot *store_row(LookupScanState *state, TupleTableSlot *slot, const Datum *values, const bool *nulls)
{
	ExecClearTuple(slot);
	for (int i = 0; i < state->table->natts; i++) {
		AttrNumber source = state->table->source_attnum[i];
		if (state->needed[i] && source > 0) {
			slot->tts_values[i] = values[source - 1];
			slot->tts_isnull[i] = nulls[source - 1];
		} else {
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
		}
	}
	return ExecStoreVirtualTuple(slot);
}

void deform_source_row(LookupScanState *state, const char *row)
{
	HeapTupleData tuple;
	tuple.t_len = HeapTupleHeaderGetDatumLength(row);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = state->table->source_relid;
	tuple.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(row));
	Relation rel = state->source_rel;
	heap_deform_tuple(&tuple, RelationGetDescr(rel), state->source_values, state->source_nulls);
}

void begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
	EState *estate = node->ss.ps.state;
	LookupScanState *state = static_cast<LookupScanState *>(palloc0(sizeof(LookupScanState)));
	node->fdw_state = state;

	Oid foreign_relid = RelationGetRelid(node->ss.ss_currentRelation);
	state->table = foreign_table_info(foreign_relid);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	/*
	 * The reader must be allowed to read the source table itself (PostgreSQL checked the
	 * foreign table): the same role PostgreSQL checks, so the view owner's through a view.
	 */
	RangeTblEntry *rte = exec_rt_fetch(plan->scan.scanrelid, estate);
	state->source = relinfo_open(state->table->source_relid,
								 OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId());
	state->key_mode = intVal(list_nth(plan->fdw_private, PLAN_KEY_IS_ARRAY));
	if (state->key_mode >= 0) {
		if (!state->table->key_mapped || list_length(plan->fdw_exprs) != state->source->key.ncolumns ||
			(state->key_mode == 1 && state->source->key.ncolumns != 1))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
					 errmsg("foreign table \"%s\" no longer maps the primary key of its table",
							RelationGetRelationName(node->ss.ss_currentRelation))));
		ListCell *expr;
		foreach (expr, plan->fdw_exprs)
			state->key_exprs[state->nkey_exprs++] = ExecInitExpr(static_cast<Expr *>(lfirst(expr)), &node->ss.ps);
	}
	state->needed = static_cast<bool *>(palloc0(sizeof(bool) * (state->table->natts + 1)));
	ListCell *cell;
	foreach (cell, static_cast<List *>(list_nth(plan->fdw_private, PLAN_NEEDED_COLUMNS))) {
		int attnum = lfirst_int(cell);
		if (attnum >= 1 && attnum <= state->table->natts)
			state->needed[attnum - 1] = true;
	}
	state->source_rel = table_open(state->table->source_relid, NoLock);
	state->source_values = static_cast<Datum *>(palloc(sizeof(Datum) * (state->table->source_natts + 1)));
	state->source_nulls = static_cast<bool *>(palloc(sizeof(bool) * (state->table->source_natts + 1)));
	state->batch_context = AllocSetContextCreate(estate->es_query_cxt, "local_cache_fdw batch",
												 ALLOCSET_DEFAULT_SIZES);
	if (state->key_mode < 0) {
		state->scan = table_beginscan(state->source_rel, estate->es_snapshot, 0, NULL);
		state->source_slot = table_slot_create(state->source_rel, NULL);
	}
}

TupleTableSlot *iterate_scan(ForeignScanState *node)
{
	LookupScanState *state = static_cast<LookupScanState *>(node->fdw_state);
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	if (state->key_mode < 0) {
		if (!table_scan_getnextslot(state->scan, ForwardScanDirection, state->source_slot))
			return ExecClearTuple(slot);
		slot_getallattrs(state->source_slot);
		return store_row(state, slot, state->source_slot->tts_values, state->source_slot->tts_isnull);
	}

	if (!state->fetched)
		fetch_batch(node, state);
	while (state->next_row < state->nrows) {
		const char *row = state->rows[state->next_row++];
		if (row == nullptr)
			continue; /* missing key */
		deform_source_row(state, row);
		return store_row(state, slot, state->source_values, state->source_nulls);
	}
	return ExecClearTuple(slot);
}

void rescan(ForeignScanState *node)
{
	LookupScanState *state = static_cast<LookupScanState *>(node->fdw_state);
	if (state->key_mode < 0) {
		table_rescan(state->scan, NULL);
		return;
	}
	MemoryContextReset(state->batch_context);
	state->fetched = false;
	state->rows = nullptr;
	state->nrows = 0;
}

void end_scan(ForeignScanState *node)
{
	LookupScanState *state = static_cast<LookupScanState *>(node->fdw_state);
	if (state == nullptr || state->source_rel == nullptr)
		return;
	if (state->scan != nullptr) {
		ExecDropSingleTupleTableSlot(state->source_slot);
		table_endscan(state->scan);
	}
	table_close(state->source_rel, NoLock);
}

void explain_scan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
	LookupScanState *state = static_cast<LookupScanState *>(node->fdw_state);
	if (intVal(list_nth(plan->fdw_private, PLAN_KEY_IS_ARRAY)) >= 0)
		ExplainPropertyText("Cache Keys", strVal(list_nth(plan->fdw_private, PLAN_KEY_DISPLAY)), es);
	else
		ExplainPropertyText("Cache Scan", "full scan of the table (no key condition)", es);
	if (es->verbose)
		ExplainPropertyText("Cached Table", foreign_table_source_name(RelationGetRelid(node->ss.ss_currentRelation)), es);
	if (es->analyze && state != nullptr && state->key_mode >= 0) {
		ExplainPropertyInteger("Cache Hits", NULL, int64(state->totals.hits), es);
		ExplainPropertyInteger("Cache Misses", NULL, int64(state->totals.misses), es);
		ExplainPropertyInteger("Cache Fills", NULL, int64(state->totals.fills), es);
	}
}

/* ANALYZE samples the source table's rows (reservoir sampling, like file_fdw). */
int acquire_sample_rows(Relation foreign, int, HeapTuple *rows, int targrows, double *totalrows,
						double *totaldeadrows)
{
	ForeignTableInfo *table = foreign_table_info(RelationGetRelid(foreign));
	relinfo_open(table->source_relid); /* ANALYZE must not reveal rows its user could not read */
	Relation source = table_open(table->source_relid, NoLock);
	TupleDesc fdesc = RelationGetDescr(foreign);
	Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * (fdesc->natts + 1)));
	bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * (fdesc->natts + 1)));
	Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
	TableScanDesc scan = table_beginscan(source, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(source, NULL);
	ReservoirStateData reservoir;
	reservoir_init_selection_state(&reservoir, targrows);
	double skip = -1;
	int numrows = 0;
	*totalrows = 0;
	*totaldeadrows = 0;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(slot);
		for (int i = 0; i < fdesc->natts; i++) {
			AttrNumber s = table->source_attnum[i];
			values[i] = s > 0 ? slot->tts_values[s - 1] : (Datum) 0;
			nulls[i] = s > 0 ? slot->tts_isnull[s - 1] : true;
		}
		if (numrows < targrows) {
			rows[numrows++] = heap_form_tuple(fdesc, values, nulls);
		} else {
			if (skip < 0)
				skip = reservoir_get_next_S(&reservoir, *totalrows, targrows);
			if (skip <= 0) {
				int k = int(targrows * sampler_random_fract(&reservoir.randstate));
				heap_freetuple(rows[k]);
				rows[k] = heap_form_tuple(fdesc, values, nulls);
			}
			skip -= 1;
		}
		*totalrows += 1;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(source, NoLock);
	return numrows;
}

bool analyze_table(Relation foreign, AcquireSampleRowsFunc *func, BlockNumber *totalpages)
{
	ForeignTableInfo *table = foreign_table_info(RelationGetRelid(foreign));
	Relation source = table_open(table->source_relid, AccessShareLock);
	*totalpages = RelationGetNumberOfBlocks(source);
	table_close(source, AccessShareLock);
	*func = pg_entry<acquire_sample_rows>;
	return true;
}

[[noreturn]] void refuse_write(Oid foreign_relid)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("foreign table \"%s\" is read-only", get_rel_name(foreign_relid)),
			 errhint("Write to table %s; local_cache keeps its cached rows up to date.",
					 foreign_table_source_name(foreign_relid))));
}

/* PlanForeignModify, BeginForeignInsert, ExecForeignInsert: the table is read-only. */
List *plan_modify(PlannerInfo *root, ModifyTable *, Index rti, int)
{
	refuse_write(planner_rt_fetch(rti, root)->relid);
}

void begin_insert(ModifyTableState *, ResultRelInfo *rinfo)
{
	refuse_write(RelationGetRelid(rinfo->ri_RelationDesc));
}

TupleTableSlot *exec_insert(EState *, ResultRelInfo *rinfo, TupleTableSlot *, TupleTableSlot *)
{
	refuse_write(RelationGetRelid(rinfo->ri_RelationDesc));
}

RowMarkType row_mark_type(RangeTblEntry *rte, LockClauseStrength strength)
{
	if (strength != LCS_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("SELECT ... FOR UPDATE/SHARE is not supported on foreign table \"%s\"",
						get_rel_name(rte->relid)),
				 errhint("Lock the rows of table %s instead.", foreign_table_source_name(rte->relid))));
	return ROW_MARK_COPY;
}

Datum fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);
	routine->GetForeignRelSize = pg_entry<fdw_get_rel_size>;
	routine->GetForeignPaths = pg_entry<fdw_get_paths>;
	routine->GetForeignPlan = pg_entry<fdw_get_plan>;
	routine->BeginForeignScan = pg_entry<begin_scan>;
	routine->IterateForeignScan = pg_entry<iterate_scan>;
	routine->ReScanForeignScan = pg_entry<rescan>;
	routine->EndForeignScan = pg_entry<end_scan>;
	routine->ExplainForeignScan = pg_entry<explain_scan>;
	routine->AnalyzeForeignTable = pg_entry<analyze_table>;
	routine->ImportForeignSchema = pg_entry<fdw_import_schema>;
	routine->PlanForeignModify = pg_entry<plan_modify>;
	routine->BeginForeignInsert = pg_entry<begin_insert>;
	routine->ExecForeignInsert = pg_entry<exec_insert>;
	routine->GetForeignRowMarkType = pg_entry<row_mark_type>;
	PG_RETURN_POINTER(routine);
}

} // namespace

} // namespace local_cache

LOCAL_CACHE_V1_FUNCTION(local_cache_fdw_handler, local_cache::fdw_handler)

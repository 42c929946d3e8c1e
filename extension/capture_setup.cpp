/*
 * capture_setup.cpp — what PostgreSQL sets up for the capture triggers in every statement that
 * writes a cached table, done once per session instead.
 *
 * PostgreSQL parses, plans and compiles a row trigger's WHEN clause the first time a statement
 * fires it (TriggerEnabled fills ResultRelInfo.ri_TrigWhenExprs), and looks each trigger's function
 * up in the catalogs the first time it calls it (ri_TrigFunctions). For a one-row UPDATE of a
 * cached table the WHEN clause alone was the largest part of what the capture cost the writer
 * (about 1.8 µs of 7, docs/OPERATIONS.md), and queuing and firing the AFTER ROW event most of the
 * rest. After ExecutorStart, each result relation's capture triggers get the function's lookup and
 * the clause prepared for their tgqual text: the capture's own clause, capture_keys(<the table>),
 * records the row's keys as it is evaluated (capture_row), so no event is queued; any other text
 * is read and compiled the way PostgreSQL does. The BEFORE STATEMENT trigger's work, marking the
 * table written, is done here too and the trigger switched off for the statement (PostgreSQL's
 * set-up of a statement trigger's call cost about as much as the work). Relations PostgreSQL opens
 * later (tuple routing into partitions) and COPY keep PostgreSQL's own set-up: the statement
 * trigger, the clause as a SQL call, the events.
 *
 * An UPDATE or DELETE whose rows keep their keys needs no row trigger at all: the planner hook
 * (capture_setup_plan) adds local_cache.capture_row_key(<table>, <key columns>) to its plan as a
 * junk column, evaluated for each row the plan hands to the write, EvalPlanQual's recheck of a
 * row another transaction updated meanwhile included (it runs the same plan on the row's newest
 * version, whose key is recorded then). ExecutorStart switches the row trigger off for such a
 * statement, so PostgreSQL neither fetches the old row again nor builds the updated columns' set
 * for it. Recording a row the write then skips is harmless: it only invalidates more. Where the
 * WHERE clause names the one key the statement may write (`key = $1`, the OLTP shape), the plan
 * carries that value instead, as a junk column named local_cache_key, and ExecutorStart records the
 * key once: no call per row, and no function for the executor to look up in each statement.
 */
#include "extension/capture_setup.h"

#include "extension/boundary.h"
#include "extension/cached_table.h"
#include "extension/invalidation.h"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/execExpr.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

namespace local_cache {

namespace {

/* One table's prepared clause, by relid; `tgqual` is the text it was built from. Each entry's
 * text and expression live in a memory context of their own (retire). */
struct PreparedWhen {
	Oid relid; /* hash key */
	MemoryContext memory;
	char *tgqual;
	bool capture_clause; /* the text is capture_keys(<relid>): capture_row evaluates it */
	ExprState *qual;     /* otherwise: the clause as PostgreSQL compiles it */
};

/* What capture_row evaluates the clause for, in the statement's memory. */
struct RowCaptureTarget {
	Oid relid;
	ResultRelInfo *result;
	Oid capture_function;
	bool stopped; /* stop_row_events ran for the statement */
};

HTAB *prepared = nullptr;
/* The entry found last: most statements write the table the one before wrote, and with many
 * connections each of the hash table's lines is a cache miss. */
PreparedWhen *last_prepared = nullptr;
ExecutorStart_hook_type prev_executor_start = nullptr;

/* local_cache.capture_changes() and its lookup (fn_oid invalid: not in this database), and
 * local_cache.capture_row_key(regclass, VARIADIC "any") (since 1.5; invalid where the database has
 * not been updated), looked up again after any change of functions or schemas. */
bool capture_functions_looked_up = false;
FmgrInfo capture_function = {};
Oid capture_row_key_function = InvalidOid;

Oid lookup_capture_function(const char *name, int nargs, const Oid *args)
{
	List *qualified = list_make2(makeString(pstrdup("local_cache")), makeString(pstrdup(name)));
	return LookupFuncName(qualified, nargs, args, true);
}

void look_up_capture_functions(void)
{
	if (capture_functions_looked_up)
		return;
	capture_function.fn_oid = InvalidOid;
	capture_row_key_function = InvalidOid;
	if (OidIsValid(get_namespace_oid("local_cache", true))) {
		Oid function = lookup_capture_function("capture_changes", 0, NULL);
		if (OidIsValid(function))
			fmgr_info_cxt(function, &capture_function, CacheMemoryContext);
		const Oid row_key_args[] = {REGCLASSOID, ANYOID};
		capture_row_key_function = lookup_capture_function("capture_row_key", 2, row_key_args);
	}
	capture_functions_looked_up = true;
}

const FmgrInfo &capture_function_info(void)
{
	look_up_capture_functions();
	return capture_function;
}

/*
 * An entry's memory once it is no longer to be handed out: a statement running now may still
 * evaluate its clause (invalidations arrive in the middle of statements), so it goes with the
 * transaction; outside one nothing can.
 */
void retire(MemoryContext memory)
{
	if (TopTransactionContext != nullptr)
		MemoryContextSetParent(memory, TopTransactionContext);
	else
		MemoryContextDelete(memory);
}

void forget(PreparedWhen *entry)
{
	if (entry == last_prepared)
		last_prepared = nullptr;
	retire(entry->memory);
	hash_search(prepared, &entry->relid, HASH_REMOVE, NULL);
}

void forget_all(void)
{
	if (prepared == nullptr)
		return;
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, prepared);
	while (PreparedWhen *entry = static_cast<PreparedWhen *>(hash_seq_search(&status)))
		forget(entry);
}

/* A function changed: the capture function's lookup and the prepared calls may be stale. */
void functions_changed(Datum, int, uint32)
{
	capture_functions_looked_up = false;
	forget_all();
}

/* A table changed (or was dropped): keep the set to the tables that exist. */
void relation_changed(Datum, Oid relid)
{
	if (prepared == nullptr)
		return;
	if (relid == InvalidOid) {
		forget_all();
		return;
	}
	if (PreparedWhen *entry = static_cast<PreparedWhen *>(hash_search(prepared, &relid, HASH_FIND, NULL)))
		forget(entry);
}

/*
 * In the statement's copy of the table's triggers (InitResultRelInfo copies them for each
 * statement): clears the flag of each event whose triggers of one kind (`level`, `timing`) are all
 * such that !needed(trigger). PostgreSQL then skips the event's triggers of that kind and what it
 * does before calling them, as for a table without them.
 */
template <typename Needed>
void clear_unneeded_events(TriggerDesc *triggers, int16 level, int16 timing, bool TriggerDesc::*insert_flag,
						   bool TriggerDesc::*update_flag, bool TriggerDesc::*delete_flag, Needed needed)
{
	struct Event {
		int16 type;
		bool TriggerDesc::*flag;
	} events[] = {{TRIGGER_TYPE_INSERT, insert_flag}, {TRIGGER_TYPE_UPDATE, update_flag}, {TRIGGER_TYPE_DELETE, delete_flag}};
	for (const Event &event : events) {
		bool any_needed = false;
		for (int i = 0; i < triggers->numtriggers && !any_needed; i++) {
			const Trigger &trigger = triggers->triggers[i];
			any_needed = TRIGGER_TYPE_MATCHES(trigger.tgtype, level, timing, event.type) && needed(trigger);
		}
		if (!any_needed)
			triggers->*event.flag = false;
	}
}

/*
 * Past the rows it records keys for, the capture's row trigger is switched off in the statement's
 * own copy of the table's triggers (InitResultRelInfo copies them for each statement) for every
 * event it is the only AFTER ROW trigger of: PostgreSQL then neither fetches the old row again nor
 * evaluates the clause for the statement's remaining rows, as for a table without the trigger.
 * The table is flushed whole at commit (invalidation_capture_row), so nothing is missed.
 */
void stop_row_events(ResultRelInfo *result, Oid capture_function)
{
	clear_unneeded_events(result->ri_TrigDesc, TRIGGER_TYPE_ROW, TRIGGER_TYPE_AFTER, &TriggerDesc::trig_insert_after_row,
						  &TriggerDesc::trig_update_after_row, &TriggerDesc::trig_delete_after_row,
						  [capture_function](const Trigger &trigger) { return trigger.tgfoid != capture_function; });
}

/*
 * The capture's own clause, local_cache.capture_keys(<table>), evaluated: the row's keys are
 * recorded here and the clause is false, so PostgreSQL queues no AFTER ROW event for the row (the
 * event would have recorded the same keys at the statement's end, after fetching the rows again).
 * TriggerEnabled passes the old row as the inner tuple, the new one as the outer.
 */
Datum capture_row(ExprState *state, ExprContext *econtext, bool *isnull)
{
	*isnull = false;
	RowCaptureTarget *target = static_cast<RowCaptureTarget *>(state->evalfunc_private);
	switch (invalidation_capture_row(target->relid, econtext->ecxt_innertuple, econtext->ecxt_outertuple)) {
	case RowCapture::QueueEvent:
		return BoolGetDatum(true);
	case RowCapture::TableFlushed:
		/* Once: where another AFTER ROW trigger keeps the event, the clause still runs per row. */
		if (!target->stopped) {
			stop_row_events(target->result, target->capture_function);
			target->stopped = true;
		}
		break;
	case RowCapture::Recorded:
		break;
	}
	return BoolGetDatum(false);
}

/* The clause of one statement's result relation, evaluated by capture_row; in the statement's
 * memory. */
ExprState *capture_clause(EState *estate, ResultRelInfo *result, Oid capture_function)
{
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	RowCaptureTarget *target = static_cast<RowCaptureTarget *>(palloc(sizeof(RowCaptureTarget)));
	*target = {RelationGetRelid(result->ri_RelationDesc), result, capture_function, false};
	ExprState *state = makeNode(ExprState);
	state->flags = EEO_FLAG_IS_QUAL;
	state->evalfunc = pg_entry<capture_row>;
	state->evalfunc_private = target;
	MemoryContextSwitchTo(old);
	return state;
}

/* What TriggerEnabled builds from a WHEN clause's text, unless it is the capture's own clause;
 * built in `memory`. */
void compile_when(PreparedWhen *entry, Oid relid, const char *tgqual, MemoryContext memory)
{
	MemoryContext old = MemoryContextSwitchTo(memory);
	Node *qual = static_cast<Node *>(stringToNode(tgqual));
	entry->capture_clause = is_capture_keys_call(qual, relid);
	entry->qual = nullptr;
	if (!entry->capture_clause) {
		ChangeVarNodes(qual, PRS2_OLD_VARNO, INNER_VAR, 0);
		ChangeVarNodes(qual, PRS2_NEW_VARNO, OUTER_VAR, 0);
		List *quals = make_ands_implicit(reinterpret_cast<Expr *>(qual));
		entry->qual = ExecInitQual(reinterpret_cast<List *>(expression_planner(reinterpret_cast<Expr *>(quals))), NULL);
	}
	MemoryContextSwitchTo(old);
}

const PreparedWhen *prepared_when(Oid relid, const char *tgqual)
{
	if (prepared == nullptr)
		prepared = relation_hash_create("local_cache prepared WHEN clauses", sizeof(PreparedWhen));
	PreparedWhen *entry = last_prepared;
	if (entry == nullptr || entry->relid != relid)
		entry = static_cast<PreparedWhen *>(hash_search(prepared, &relid, HASH_FIND, NULL));
	if (entry != nullptr && strcmp(entry->tgqual, tgqual) == 0)
		return last_prepared = entry;
	/* Built under the transaction's memory first: an error while building leaves nothing behind. */
	MemoryContext memory = AllocSetContextCreate(CurrentMemoryContext, "local_cache WHEN clause", ALLOCSET_SMALL_SIZES);
	PreparedWhen built;
	compile_when(&built, relid, tgqual, memory);
	built.relid = relid;
	built.memory = memory;
	built.tgqual = MemoryContextStrdup(memory, tgqual);
	MemoryContextSetParent(memory, CacheMemoryContext);
	if (entry != nullptr)
		retire(entry->memory);
	entry = static_cast<PreparedWhen *>(hash_search(prepared, &relid, HASH_ENTER, NULL));
	*entry = built;
	return last_prepared = entry;
}

/* Whether PostgreSQL fires the trigger in this session (TriggerEnabled's test of tgenabled). */
bool fires_in_session(const Trigger &trigger)
{
	if (SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA)
		return trigger.tgenabled != TRIGGER_FIRES_ON_ORIGIN && trigger.tgenabled != TRIGGER_DISABLED;
	return trigger.tgenabled != TRIGGER_FIRES_ON_REPLICA && trigger.tgenabled != TRIGGER_DISABLED;
}

/*
 * Switches the capture's trigger `i` off in the statement's copy of the table's triggers, and clears
 * the flag of each event (of its level and timing) that no enabled trigger is left for.
 */
void switch_off(TriggerDesc *triggers, int i, int16 level, int16 timing, bool TriggerDesc::*insert_flag,
				bool TriggerDesc::*update_flag, bool TriggerDesc::*delete_flag)
{
	triggers->triggers[i].tgenabled = TRIGGER_DISABLED;
	clear_unneeded_events(triggers, level, timing, insert_flag, update_flag, delete_flag,
						  [](const Trigger &trigger) { return trigger.tgenabled != TRIGGER_DISABLED; });
}

/* The capture's BEFORE STATEMENT trigger, switched off for the statement once its work is done
 * (PostgreSQL's set-up of the call: the updated columns' set, the call). */
void switch_off_statement_trigger(TriggerDesc *triggers, int i)
{
	switch_off(triggers, i, TRIGGER_TYPE_STATEMENT, TRIGGER_TYPE_BEFORE, &TriggerDesc::trig_insert_before_statement,
			   &TriggerDesc::trig_update_before_statement, &TriggerDesc::trig_delete_before_statement);
}

/* The capture's row trigger, switched off for a statement whose plan records the rows' keys. */
void switch_off_row_trigger(TriggerDesc *triggers, int i)
{
	switch_off(triggers, i, TRIGGER_TYPE_ROW, TRIGGER_TYPE_AFTER, &TriggerDesc::trig_insert_after_row,
			   &TriggerDesc::trig_update_after_row, &TriggerDesc::trig_delete_after_row);
}

/* The argument list of a call of capture_row_key in `expr`, if it is one. */
List *capture_row_key_arguments(Expr *expr)
{
	if (!IsA(expr, FuncExpr) || reinterpret_cast<FuncExpr *>(expr)->funcid != capture_row_key_function)
		return NIL;
	return reinterpret_cast<FuncExpr *>(expr)->args;
}

/* The junk column by which a plan hands ExecutorStart the key its WHERE clause names. */
constexpr const char *kStatementKeyColumn = "local_cache_key";

/* How the statement's plan records the keys of the rows it writes (capture_setup_plan). */
struct PlanKeys {
	ResultRelInfo *result = nullptr; /* null: it does not; the row trigger records them */
	bool every_row = false;          /* it writes every row: the table is flushed at commit */
	bool from_where = false;         /* the one key its WHERE clause names, values below */
	int ncolumns = 0;
	bool null_key = false; /* a column's value is NULL: no row can match */
	Datum values[MAX_KEY_COLUMNS] = {};
	Oid types[MAX_KEY_COLUMNS] = {};
};

/* An external parameter's value, as the statement was given it; false if it cannot be had. */
bool external_parameter(ParamListInfo params, const Param *param, Datum *value, bool *isnull)
{
	if (params == nullptr || param->paramkind != PARAM_EXTERN || param->paramid <= 0 ||
		param->paramid > params->numParams)
		return false;
	ParamExternData workspace;
	const ParamExternData *data = params->paramFetch != nullptr
		? params->paramFetch(params, param->paramid, false, &workspace)
		: &params->params[param->paramid - 1];
	if (data == nullptr || data->ptype != param->paramtype)
		return false;
	*value = data->value;
	*isnull = data->isnull;
	return true;
}

/* A key column's value from the WHERE clause, as the plan carries it: a constant or an external
 * parameter. */
bool statement_key_value(QueryDesc *query, Expr *expr, PlanKeys *keys)
{
	if (keys->ncolumns == MAX_KEY_COLUMNS)
		return false;
	Datum value;
	bool isnull;
	if (IsA(expr, Const)) {
		value = reinterpret_cast<Const *>(expr)->constvalue;
		isnull = reinterpret_cast<Const *>(expr)->constisnull;
	} else if (!IsA(expr, Param) || !external_parameter(query->params, reinterpret_cast<Param *>(expr), &value, &isnull)) {
		return false;
	}
	keys->null_key |= isnull;
	keys->types[keys->ncolumns] = exprType(reinterpret_cast<Node *>(expr));
	keys->values[keys->ncolumns++] = value;
	return true;
}

/*
 * How the statement's plan records its rows' keys (capture_setup_plan): the UPDATE or DELETE at
 * the top of the plan, when the plan under it carries the key its WHERE clause names, or computes
 * capture_row_key for the table, or is a sequential scan of the table with no condition (every
 * row is written: the table is flushed at commit, as past the keys a transaction records). A
 * data-modifying WITH query's tables keep the row trigger.
 */
PlanKeys plan_keys(QueryDesc *query)
{
	PlanKeys keys;
	if (!OidIsValid(capture_row_key_function) || query->planstate == nullptr ||
		!IsA(query->planstate, ModifyTableState))
		return keys;
	ModifyTableState *modify = reinterpret_cast<ModifyTableState *>(query->planstate);
	if (modify->mt_nrels != 1 || (modify->operation != CMD_UPDATE && modify->operation != CMD_DELETE))
		return keys;
	Oid relid = RelationGetRelid(modify->resultRelInfo->ri_RelationDesc);
	Plan *rows = outerPlan(modify->ps.plan);
	if (IsA(rows, SeqScan) && rows->qual == NIL &&
		reinterpret_cast<Scan *>(rows)->scanrelid == modify->resultRelInfo->ri_RangeTableIndex) {
		keys.result = modify->resultRelInfo;
		keys.every_row = true;
		return keys;
	}
	bool per_row = false;
	ListCell *cell;
	foreach (cell, rows->targetlist) {
		TargetEntry *entry = static_cast<TargetEntry *>(lfirst(cell));
		if (!entry->resjunk)
			continue;
		if (entry->resname != nullptr && strcmp(entry->resname, kStatementKeyColumn) == 0) {
			if (!statement_key_value(query, entry->expr, &keys))
				return PlanKeys();
			keys.from_where = true;
			continue;
		}
		List *arguments = capture_row_key_arguments(entry->expr);
		per_row |= arguments != NIL && IsA(linitial(arguments), Const) &&
			DatumGetObjectId(static_cast<Const *>(linitial(arguments))->constvalue) == relid;
	}
	if (keys.from_where || per_row)
		keys.result = modify->resultRelInfo;
	return keys;
}

/*
 * What the statement's plan leaves to ExecutorStart, done once the table is marked written: the
 * table flushed at commit, or the key its WHERE clause names recorded. False if it could not be
 * (the row trigger then stays on).
 */
bool take_plan_keys(const PlanKeys &keys)
{
	Oid relid = RelationGetRelid(keys.result->ri_RelationDesc);
	if (keys.every_row)
		return invalidation_flush_at_commit(relid);
	if (keys.from_where && !keys.null_key)
		return invalidation_capture_key(relid, keys.values, keys.types, keys.ncolumns);
	return true;
}

/*
 * Gives each result relation's capture triggers their function and prepared WHEN clause, and does
 * the work of its BEFORE STATEMENT trigger (marking the table written) here, before the statement
 * runs, as the trigger would have at its start; then switches the trigger off for the statement.
 * Every result relation the executor opened that has the trigger is marked (a cached table is
 * never a partition or an inheritance member, so each is a table the statement names, whose
 * statement trigger would fire); marking a table the statement then does not write is always
 * correct (its reads in the transaction go to the table). Where the plan records the rows' keys
 * and the table is marked, the row trigger is switched off too.
 */
void set_up_capture(QueryDesc *query)
{
	EState *estate = query->estate;
	const FmgrInfo *function = nullptr;
	PlanKeys keys;
	ListCell *cell;
	foreach (cell, estate->es_opened_result_relations) {
		ResultRelInfo *result = static_cast<ResultRelInfo *>(lfirst(cell));
		TriggerDesc *triggers = result->ri_TrigDesc;
		if (triggers == nullptr)
			continue;
		if (function == nullptr) {
			if (!OidIsValid((function = &capture_function_info())->fn_oid))
				return;
			keys = plan_keys(query);
		}
		/* The statement trigger first: the row trigger's set-up depends on whether it marked the table. */
		bool marked = false;
		for (int i = 0; i < triggers->numtriggers; i++) {
			const Trigger &trigger = triggers->triggers[i];
			if (trigger.tgfoid == function->fn_oid && TRIGGER_FOR_BEFORE(trigger.tgtype) &&
				!TRIGGER_FOR_ROW(trigger.tgtype) && fires_in_session(trigger)) {
				invalidation_statement_writes(result->ri_RelationDesc);
				switch_off_statement_trigger(triggers, i);
				marked = true;
			}
		}
		for (int i = 0; i < triggers->numtriggers; i++) {
			const Trigger &trigger = triggers->triggers[i];
			if (trigger.tgfoid != function->fn_oid || TRIGGER_FOR_BEFORE(trigger.tgtype))
				continue;
			if (result == keys.result && marked && TRIGGER_FOR_ROW(trigger.tgtype) && take_plan_keys(keys)) {
				switch_off_row_trigger(triggers, i);
				continue;
			}
			if (result->ri_TrigFunctions[i].fn_oid == InvalidOid)
				fmgr_info_copy(&result->ri_TrigFunctions[i], const_cast<FmgrInfo *>(function), estate->es_query_cxt);
			if (trigger.tgqual == nullptr || result->ri_TrigWhenExprs[i] != nullptr)
				continue;
			Oid relid = RelationGetRelid(result->ri_RelationDesc);
			const PreparedWhen *when = prepared_when(relid, trigger.tgqual);
			if (!when->capture_clause) {
				result->ri_TrigWhenExprs[i] = when->qual;
				continue;
			}
			result->ri_TrigWhenExprs[i] = capture_clause(estate, result, function->fn_oid);
			/* An earlier statement went past the rows recorded: none of these are needed. */
			if (invalidation_table_flushed(relid))
				stop_row_events(result, function->fn_oid);
		}
	}
}

void executor_start(QueryDesc *query, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(query, eflags);
	else
		standard_ExecutorStart(query, eflags);
	if (query->estate != nullptr && (eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		set_up_capture(query);
}

/*
 * The key a row of `parse`'s target keeps through the statement, when the capture can take it
 * from the plan: an UPDATE or DELETE of a cached table (its capture row trigger is there), not an
 * inheritance parent, with a key the cache names rows by; for an UPDATE, one that assigns no key
 * column, with no generated column in the key and no other BEFORE ROW UPDATE trigger (which could
 * change the key of the row written).
 */
const PrimaryKey *key_kept_by(Relation rel, Query *parse)
{
	TriggerDesc *triggers = rel->trigdesc;
	if (triggers == nullptr || rel->rd_rel->relhassubclass)
		return nullptr;
	bool update = parse->commandType == CMD_UPDATE;
	bool captured = false;
	for (int i = 0; i < triggers->numtriggers; i++) {
		const Trigger &trigger = triggers->triggers[i];
		if (!TRIGGER_FOR_ROW(trigger.tgtype))
			continue;
		if (trigger.tgfoid == capture_function.fn_oid && TRIGGER_FOR_AFTER(trigger.tgtype))
			captured = update ? TRIGGER_FOR_UPDATE(trigger.tgtype) : TRIGGER_FOR_DELETE(trigger.tgtype);
		else if (update && TRIGGER_FOR_BEFORE(trigger.tgtype) && TRIGGER_FOR_UPDATE(trigger.tgtype))
			return nullptr;
	}
	const PrimaryKey *key = captured ? invalidation_row_key(rel) : nullptr;
	if (key == nullptr)
		return nullptr;
	for (int c = 0; c < key->ncolumns; c++) {
		if (TupleDescAttr(RelationGetDescr(rel), key->attnums[c] - 1)->attgenerated)
			return nullptr;
		ListCell *cell;
		foreach (cell, parse->targetList) {
			TargetEntry *entry = static_cast<TargetEntry *>(lfirst(cell));
			if (update && !entry->resjunk && entry->resno == key->attnums[c])
				return nullptr;
		}
	}
	return key;
}

/* Adds the top-level conjuncts of `qual` to `conjuncts`. */
void add_conjuncts(Node *qual, List **conjuncts)
{
	if (qual == nullptr)
		return;
	if (is_andclause(qual)) {
		ListCell *cell;
		foreach (cell, reinterpret_cast<BoolExpr *>(qual)->args)
			add_conjuncts(static_cast<Node *>(lfirst(cell)), conjuncts);
		return;
	}
	*conjuncts = lappend(*conjuncts, qual);
}

/*
 * The one key every row the statement writes has, when its WHERE clause names it: for each key
 * column a top-level conjunct `column = value`, by the key's own equality (key_equality), with a
 * constant or an external parameter as the value. Each row written satisfies the clause, in the
 * version it writes (EvalPlanQual checks a concurrently updated row's newest version again), and
 * keeps its key; `values` receives the values in key order.
 */
bool key_named_by_where(Query *parse, const PrimaryKey &key, Expr **values)
{
	for (int c = 0; c < key.ncolumns; c++)
		values[c] = nullptr;
	List *conjuncts = NIL;
	add_conjuncts(parse->jointree->quals, &conjuncts);
	ListCell *cell;
	foreach (cell, conjuncts) {
		Node *conjunct = static_cast<Node *>(lfirst(cell));
		if (!IsA(conjunct, OpExpr) || list_length(reinterpret_cast<OpExpr *>(conjunct)->args) != 2)
			continue;
		OpExpr *op = reinterpret_cast<OpExpr *>(conjunct);
		Node *value = static_cast<Node *>(lsecond(op->args));
		Index target = Index(parse->resultRelation);
		int column = key_column_of(static_cast<Node *>(linitial(op->args)), target, key.attnums, key.ncolumns);
		if (column < 0) {
			value = static_cast<Node *>(linitial(op->args));
			column = key_column_of(static_cast<Node *>(lsecond(op->args)), target, key.attnums, key.ncolumns);
		}
		bool constant = IsA(value, Const) ||
			(IsA(value, Param) && reinterpret_cast<Param *>(value)->paramkind == PARAM_EXTERN);
		if (column >= 0 && values[column] == nullptr && constant &&
			key_equality(key, column, op->opno, op->inputcollid, exprType(value)))
			values[column] = reinterpret_cast<Expr *>(value);
	}
	for (int c = 0; c < key.ncolumns; c++)
		if (values[c] == nullptr)
			return false;
	return true;
}

/*
 * A statement with no condition and no other table writes every row: its plan stays PostgreSQL's
 * own, with nothing for the capture to evaluate per row (or for JIT to compile: LLVM's memory and
 * time were most of what a bulk DELETE cost more), and ExecutorStart flushes the table at commit
 * when it sees the plain scan (plan_keys).
 */
bool writes_every_row(const Query *parse)
{
	return parse->jointree->quals == nullptr && list_length(parse->jointree->fromlist) == 1;
}

/* Appends a junk column computing `expr` to the statement's target list. */
void add_junk_column(Query *parse, Expr *expr, const char *name)
{
	parse->targetList = lappend(parse->targetList, makeTargetEntry(expr, AttrNumber(list_length(parse->targetList) + 1),
																   pstrdup(name), true));
}

} // namespace

void capture_setup_plan(Query *parse)
{
	if ((parse->commandType != CMD_UPDATE && parse->commandType != CMD_DELETE) || parse->resultRelation == 0)
		return;
	RangeTblEntry *target = rt_fetch(parse->resultRelation, parse->rtable);
	if (target->rtekind != RTE_RELATION || target->relkind != RELKIND_RELATION)
		return;
	look_up_capture_functions();
	if (!OidIsValid(capture_row_key_function) || !OidIsValid(capture_function.fn_oid))
		return;
	/* Locked by the parser, or by the plan cache before it plans again. */
	Relation rel = table_open(target->relid, NoLock);
	const PrimaryKey *key = key_kept_by(rel, parse);
	if (key != nullptr && !writes_every_row(parse)) {
		Expr *values[MAX_KEY_COLUMNS];
		if (key_named_by_where(parse, *key, values)) {
			for (int c = 0; c < key->ncolumns; c++)
				add_junk_column(parse, static_cast<Expr *>(copyObjectImpl(values[c])), kStatementKeyColumn);
		} else {
			List *arguments = list_make1(makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid),
												   ObjectIdGetDatum(target->relid), false, true));
			for (int c = 0; c < key->ncolumns; c++) {
				Form_pg_attribute column = TupleDescAttr(RelationGetDescr(rel), key->attnums[c] - 1);
				arguments = lappend(arguments, makeVar(parse->resultRelation, key->attnums[c], column->atttypid,
													   column->atttypmod, column->attcollation, 0));
			}
			add_junk_column(parse,
							reinterpret_cast<Expr *>(makeFuncExpr(capture_row_key_function, BOOLOID, arguments,
																  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL)),
							"local_cache_row_key");
		}
	}
	table_close(rel, NoLock);
}

void capture_setup_install_hook(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = pg_entry<executor_start>;
	CacheRegisterSyscacheCallback(PROCOID, pg_entry<functions_changed>, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, pg_entry<functions_changed>, (Datum) 0);
	CacheRegisterRelcacheCallback(pg_entry<relation_changed>, (Datum) 0);
}

} // namespace local_cache

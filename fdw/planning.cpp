/*
 * planning.cpp — which conditions become cache lookups, and what the paths cost.
 *
 * Conditions on the key columns are executed as a lookup when every key column has one of
 * the form
 *     column = expr        or (a one-column key)        column = ANY (array expr)
 * with the primary key's equality operator (its btree family, so bigint = integer works
 * too; for strings under a deterministic collation) and an expr that the executor can
 * evaluate before the scan: no Vars of this table, nothing volatile. Restriction clauses give plain lookup paths; join clauses, including
 * those implied by equivalence classes (i.id = o.item_id), give parameterized paths, so a
 * nested loop probes the cache once per outer row. Every other condition is evaluated
 * locally on the returned rows. Without a key condition the path is a full scan of the
 * source table under the query's snapshot (no cache fill), costed like its sequential scan
 * so the planner avoids it where it has a choice.
 */
#include "fdw/fdw.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_opfamily.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
}

namespace local_cache {

namespace {

/* Planner state kept in baserel->fdw_private between the planning callbacks. */
struct LookupPlanState {
	ForeignTableInfo *table;
	double source_tuples;
	BlockNumber source_pages;
};

/* Estimated keys of = ANY($1) when the array is not known at plan time. */
constexpr double UNKNOWN_ARRAY_KEYS = 10;
/* Cost of one key lookup: a hash probe under a shared lock and a copy. */
constexpr double LOOKUP_COST_FACTOR = 2.0; /* × cpu_tuple_cost */

/* nodeFuncs.h declares walkers K&R style, as taking no arguments. */
bool (*as_walker(bool (*walker)(Node *, void *)))()
{
	return reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker));
}

/* A condition usable as a lookup of key column `column`. */
struct KeyClause {
	Expr *value;     /* the side the executor evaluates */
	bool is_array;   /* column = ANY (value): single-column keys only */
	int column;
	RestrictInfo *rinfo;
};

/* One clause per key column, in key order: what a lookup needs. */
struct KeyConditions {
	KeyClause columns[MAX_KEY_COLUMNS];
	int ncolumns; /* the key's */

	bool complete() const
	{
		for (int c = 0; c < ncolumns; c++)
			if (columns[c].rinfo == nullptr)
				return false;
		return ncolumns > 0;
	}
	void clear(int n)
	{
		ncolumns = n;
		for (int c = 0; c < MAX_KEY_COLUMNS; c++)
			columns[c] = {nullptr, false, c, nullptr};
	}
};

/* Which key column the node is (a Var of this table, perhaps relabeled), or -1. */
int key_column_of(Node *node, Index relid, const ForeignTableInfo *table)
{
	return table->key_mapped ? local_cache::key_column_of(node, relid, table->key_attnums, table->key.ncolumns) : -1;
}

bool evaluable_before_scan(Node *value, Index relid)
{
	return !bms_is_member(relid, pull_varnos(nullptr, value)) && !contain_volatile_functions(value);
}

/* Recognizes column = expr and (one-column keys) column = ANY(expr), either side around for
 * the scalar form. */
bool match_key_clause(RestrictInfo *rinfo, Index relid, const ForeignTableInfo *table, KeyClause *out)
{
	Expr *clause = rinfo->clause;
	if (IsA(clause, OpExpr)) {
		OpExpr *op = reinterpret_cast<OpExpr *>(clause);
		if (list_length(op->args) != 2)
			return false;
		Node *left = static_cast<Node *>(linitial(op->args));
		Node *right = static_cast<Node *>(lsecond(op->args));
		int column = key_column_of(left, relid, table);
		Node *value = right;
		if (column < 0) {
			column = key_column_of(right, relid, table);
			value = left;
		}
		if (column < 0 || !key_equality(table->key, column, op->opno, op->inputcollid, exprType(value)) ||
			!evaluable_before_scan(value, relid))
			return false;
		*out = {reinterpret_cast<Expr *>(value), false, column, rinfo};
		return true;
	}
	if (IsA(clause, ScalarArrayOpExpr)) {
		ScalarArrayOpExpr *op = reinterpret_cast<ScalarArrayOpExpr *>(clause);
		if (!op->useOr || list_length(op->args) != 2 || table->key.ncolumns != 1)
			return false;
		Node *left = static_cast<Node *>(linitial(op->args));
		Node *right = static_cast<Node *>(lsecond(op->args));
		if (key_column_of(left, relid, table) != 0 ||
			!key_equality(table->key, 0, op->opno, op->inputcollid, get_element_type(exprType(right))) ||
			!evaluable_before_scan(right, relid))
			return false;
		*out = {reinterpret_cast<Expr *>(right), true, 0, rinfo};
		return true;
	}
	return false;
}

double estimated_keys(const KeyConditions &conditions)
{
	const KeyClause &key = conditions.columns[0];
	if (!key.is_array)
		return 1;
	if (IsA(key.value, Const)) {
		Const *c = reinterpret_cast<Const *>(key.value);
		if (c->constisnull)
			return 0;
		ArrayType *array = DatumGetArrayTypeP(c->constvalue);
		return ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	}
	if (IsA(key.value, ArrayExpr))
		return list_length(reinterpret_cast<ArrayExpr *>(key.value)->elements);
	return UNKNOWN_ARRAY_KEYS;
}

/* Takes the clause for its column unless the column has one already. */
void offer_clause(KeyConditions *conditions, RestrictInfo *rinfo, Index relid, const ForeignTableInfo *table)
{
	KeyClause key;
	if (!rinfo->pseudoconstant && match_key_clause(rinfo, relid, table, &key) &&
		conditions->columns[key.column].rinfo == nullptr)
		conditions->columns[key.column] = key;
}

/* The restriction clauses usable as a lookup, one per key column; whether every column has one. */
bool find_key_restrictions(List *clauses, Index relid, const ForeignTableInfo *table, KeyConditions *conditions)
{
	conditions->clear(table->key_mapped ? table->key.ncolumns : 0);
	ListCell *cell;
	foreach (cell, clauses)
		offer_clause(conditions, static_cast<RestrictInfo *>(lfirst(cell)), relid, table);
	return conditions->complete();
}

/* The clauses of `clauses` that the lookup does not use. */
List *other_clauses(List *clauses, const KeyConditions &conditions)
{
	List *other = list_copy(clauses);
	for (int c = 0; c < conditions.ncolumns; c++)
		other = list_delete_ptr(other, conditions.columns[c].rinfo);
	return other;
}

void add_lookup_path(PlannerInfo *root, RelOptInfo *baserel, double keys, Relids required_outer,
					 List *other_clauses)
{
	double selectivity = clauselist_selectivity(root, other_clauses, baserel->relid, JOIN_INNER, NULL);
	double rows = clamp_row_est(keys * selectivity);
	QualCost qual_cost;
	cost_qual_eval(&qual_cost, other_clauses, root);
	Cost startup = qual_cost.startup + cpu_operator_cost * 10; /* evaluate keys, lock, look up */
	Cost total = startup + keys * (cpu_tuple_cost * LOOKUP_COST_FACTOR + qual_cost.per_tuple) +
		rows * cpu_tuple_cost;
	add_path(baserel, reinterpret_cast<Path *>(create_foreignscan_path(
						  root, baserel, NULL, rows, startup, total, NIL, required_outer, NULL, NIL)));
}

struct KeyMemberOf {
	const ForeignTableInfo *table;
	int column;
};

bool key_member(PlannerInfo *, RelOptInfo *rel, EquivalenceClass *, EquivalenceMember *em, void *arg)
{
	KeyMemberOf *of = static_cast<KeyMemberOf *>(arg);
	return key_column_of(reinterpret_cast<Node *>(em->em_expr), rel->relid, of->table) == of->column;
}

/* Expressions deparse_expression() can print without a plan: no Vars, no subplans. */
bool deparsable_alone(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Var) || IsA(node, SubPlan) || IsA(node, AlternativeSubPlan) || IsA(node, SubLink) ||
		(IsA(node, Param) && reinterpret_cast<Param *>(node)->paramkind != PARAM_EXTERN))
		return true; /* stops the walk: not deparsable */
	return expression_tree_walker(node, as_walker(deparsable_alone), context);
}

/* "(key = value)" / "(key = ANY (value))" for EXPLAIN, with the query's names for Vars;
 * the columns of a composite key joined by AND. */
char *display_key(PlannerInfo *root, Oid foreigntableid, const ForeignTableInfo *table,
				  const KeyConditions &conditions)
{
	StringInfoData out;
	initStringInfo(&out);
	for (int c = 0; c < conditions.ncolumns; c++) {
		const KeyClause &key = conditions.columns[c];
		Node *value_node = reinterpret_cast<Node *>(key.value);
		if (IsA(value_node, RelabelType))
			value_node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(value_node)->arg);
		char *value;
		if (IsA(value_node, Var) && reinterpret_cast<Var *>(value_node)->varlevelsup == 0) {
			Var *var = reinterpret_cast<Var *>(value_node);
			RangeTblEntry *rte = planner_rt_fetch(var->varno, root);
			value = psprintf("%s.%s", quote_identifier(rte->eref->aliasname),
							 quote_identifier(get_rte_attribute_name(rte, var->varattno)));
		} else if (!deparsable_alone(value_node, nullptr)) {
			value = deparse_expression(value_node, NIL, false, false);
		} else {
			value = pstrdup("(expression)");
		}
		const char *column = quote_identifier(get_attname(foreigntableid, table->key_attnums[c], false));
		if (c > 0)
			appendStringInfoString(&out, " AND ");
		if (key.is_array)
			appendStringInfo(&out, "(%s = ANY (%s))", column, value);
		else
			appendStringInfo(&out, "(%s = %s)", column, value);
	}
	return out.data;
}

} // namespace

void fdw_get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	LookupPlanState *state = static_cast<LookupPlanState *>(palloc0(sizeof(LookupPlanState)));
	state->table = foreign_table_info(foreigntableid);
	/* Plans depend on the source too: its DDL must replan queries on the foreign table. */
	root->glob->relationOids = lappend_oid(root->glob->relationOids, state->table->source_relid);

	Relation source = relation_open(state->table->source_relid, NoLock);
	state->source_tuples = source->rd_rel->reltuples >= 0 ? source->rd_rel->reltuples : 1000;
	state->source_pages = source->rd_rel->relpages;
	relation_close(source, NoLock);
	baserel->fdw_private = state;

	KeyConditions key;
	double selectivity = clauselist_selectivity(root, baserel->baserestrictinfo, 0, JOIN_INNER, NULL);
	if (find_key_restrictions(baserel->baserestrictinfo, baserel->relid, state->table, &key))
		baserel->rows = clamp_row_est(Min(estimated_keys(key), state->source_tuples));
	else
		baserel->rows = clamp_row_est(state->source_tuples * selectivity);
	baserel->tuples = state->source_tuples;
}

void fdw_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid)
{
	LookupPlanState *state = static_cast<LookupPlanState *>(baserel->fdw_private);
	const ForeignTableInfo *table = state->table;

	KeyConditions restrictions;
	if (find_key_restrictions(baserel->baserestrictinfo, baserel->relid, table, &restrictions)) {
		add_lookup_path(root, baserel, Min(estimated_keys(restrictions), state->source_tuples), NULL,
						other_clauses(baserel->baserestrictinfo, restrictions));
	} else {
		/* Full scan: the source's sequential scan, plus building each row. */
		QualCost qual_cost;
		cost_qual_eval(&qual_cost, baserel->baserestrictinfo, root);
		Cost startup = qual_cost.startup;
		Cost total = startup + seq_page_cost * state->source_pages +
			state->source_tuples * (cpu_tuple_cost * 2 + qual_cost.per_tuple);
		add_path(baserel, reinterpret_cast<Path *>(create_foreignscan_path(
							  root, baserel, NULL, baserel->rows, startup, total, NIL, NULL, NULL, NIL)));
	}

	if (!table->key_mapped)
		return;

	/* Parameterized lookups: key column = outer expression, from join clauses and equivalences;
	 * the columns without one take a restriction. */
	List *join_clauses = NIL;
	ListCell *cell;
	foreach (cell, baserel->joininfo) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		KeyClause key;
		if (join_clause_is_movable_to(rinfo, baserel) && match_key_clause(rinfo, baserel->relid, table, &key))
			join_clauses = lappend(join_clauses, rinfo);
	}
	if (baserel->has_eclass_joins) {
		for (int c = 0; c < table->key.ncolumns; c++) {
			KeyMemberOf of = {table, c};
			join_clauses = list_concat(join_clauses, generate_implied_equalities_for_column(
														 root, baserel, key_member, &of, baserel->lateral_referencers));
		}
	}
	/* One path per join clause; the other columns of a composite key take a restriction, or
	 * else the first join clause of theirs. */
	foreach (cell, join_clauses) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		KeyConditions key;
		key.clear(table->key.ncolumns);
		KeyClause clause;
		if (!match_key_clause(rinfo, baserel->relid, table, &clause))
			continue;
		key.columns[clause.column] = clause;
		for (int c = 0; c < key.ncolumns; c++)
			if (c != clause.column)
				key.columns[c] = restrictions.columns[c];
		ListCell *more;
		foreach (more, join_clauses)
			offer_clause(&key, static_cast<RestrictInfo *>(lfirst(more)), baserel->relid, table);
		Relids required_outer = bms_copy(baserel->lateral_relids);
		for (int c = 0; c < key.ncolumns; c++)
			if (key.columns[c].rinfo != nullptr)
				required_outer = bms_union(required_outer, key.columns[c].rinfo->clause_relids);
		required_outer = bms_del_member(required_outer, baserel->relid);
		if (!key.complete() || bms_is_empty(required_outer) || bms_overlap(required_outer, baserel->relids))
			continue;
		ParamPathInfo *param = get_baserel_parampathinfo(root, baserel, required_outer);
		List *other = other_clauses(list_concat(list_copy(baserel->baserestrictinfo), param->ppi_clauses), key);
		add_lookup_path(root, baserel, estimated_keys(key), required_outer, other);
	}
}

ForeignScan *fdw_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
						  ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	LookupPlanState *state = static_cast<LookupPlanState *>(baserel->fdw_private);
	const ForeignTableInfo *table = state->table;

	/*
	 * Choose the key clauses among the clauses this scan must enforce: restrictions first
	 * (they need no outer row), else join clauses of the parameterization.
	 */
	KeyConditions key;
	key.clear(table->key_mapped ? table->key.ncolumns : 0);
	bool parameterized = best_path->path.param_info != nullptr;
	for (int pass = 0; pass < 2; pass++) {
		ListCell *cell;
		foreach (cell, scan_clauses) {
			RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
			bool is_join = !bms_is_empty(bms_del_member(bms_copy(rinfo->clause_relids), baserel->relid));
			if (is_join == (pass == 1) && (!is_join || parameterized))
				offer_clause(&key, rinfo, baserel->relid, table);
		}
	}
	bool lookup = key.complete();

	List *local_quals = NIL;
	ListCell *cell;
	foreach (cell, scan_clauses) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		bool used = false;
		for (int c = 0; lookup && c < key.ncolumns; c++)
			used |= key.columns[c].rinfo == rinfo;
		if (!used && !rinfo->pseudoconstant)
			local_quals = lappend(local_quals, rinfo->clause);
	}

	/* Columns the query reads: the target list and the local conditions. */
	Bitmapset *attrs = NULL;
	pull_varattnos(reinterpret_cast<Node *>(baserel->reltarget->exprs), baserel->relid, &attrs);
	pull_varattnos(reinterpret_cast<Node *>(local_quals), baserel->relid, &attrs);
	List *needed = NIL;
	bool whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
	for (int i = 1; i <= state->table->natts; i++)
		if (whole_row || bms_is_member(i - FirstLowInvalidHeapAttributeNumber, attrs))
			needed = lappend_int(needed, i);

	List *fdw_exprs = NIL;
	List *fdw_private = NIL;
	/* EvalPlanQual rechecks (UPDATE ... FROM in READ COMMITTED) must test the key clause too. */
	List *recheck_quals = NIL;
	if (lookup) {
		for (int c = 0; c < key.ncolumns; c++) {
			recheck_quals = lappend(recheck_quals, key.columns[c].rinfo->clause);
			fdw_exprs = lappend(fdw_exprs, key.columns[c].value);
		}
		fdw_private = list_make3(makeInteger(key.columns[0].is_array ? 1 : 0),
								 makeString(display_key(root, foreigntableid, table, key)),
								 needed);
	} else {
		fdw_private = list_make3(makeInteger(-1), makeString(pstrdup("")), needed);
	}
	return make_foreignscan(tlist, local_quals, baserel->relid, fdw_exprs, fdw_private, NIL,
							recheck_quals, outer_plan);
}

} // namespace local_cache

/*
 * planning.cpp — which conditions become cache lookups, and what the paths cost.
 *
 * A condition on the key column is executed as a lookup when it has the form
 *     key = expr        or        key = ANY (array expr)
 * with an integer equality operator (btree integer_ops family, so bigint = integer works
 * too) and an expr that the executor can evaluate before the scan: no Vars of this table,
 * nothing volatile. Restriction clauses give plain lookup paths; join clauses, including
 * those implied by equivalence classes (i.id = o.item_id), give parameterized paths, so a
 * nested loop probes the cache once per outer row. Every other condition is evaluated
 * locally on the returned rows. Without a key condition the path is a full scan of the
 * source table under the query's snapshot (no cache fill), costed like its sequential scan
 * so the planner avoids it where it has a choice.
 */
#include "fdw.h"

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

struct KeyClause {
	Expr *value;     /* the side the executor evaluates */
	bool is_array;
};

bool is_key_var(Node *node, Index relid, AttrNumber key_attnum)
{
	if (node != nullptr && IsA(node, RelabelType))
		node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg);
	if (node == nullptr || !IsA(node, Var))
		return false;
	Var *var = reinterpret_cast<Var *>(node);
	return Index(var->varno) == relid && var->varattno == key_attnum && var->varlevelsup == 0;
}

bool is_integer_equality(Oid opno)
{
	return get_op_opfamily_strategy(opno, INTEGER_BTREE_FAM_OID) == BTEqualStrategyNumber;
}

bool evaluable_before_scan(Node *value, Index relid)
{
	return !bms_is_member(relid, pull_varnos(nullptr, value)) && !contain_volatile_functions(value);
}

/* Recognizes key = expr and key = ANY(expr), either side around for the scalar form. */
bool match_key_clause(Expr *clause, Index relid, AttrNumber key_attnum, KeyClause *out)
{
	if (key_attnum == 0)
		return false;
	if (IsA(clause, OpExpr)) {
		OpExpr *op = reinterpret_cast<OpExpr *>(clause);
		if (list_length(op->args) != 2 || !is_integer_equality(op->opno))
			return false;
		Node *left = static_cast<Node *>(linitial(op->args));
		Node *right = static_cast<Node *>(lsecond(op->args));
		if (is_key_var(left, relid, key_attnum) && evaluable_before_scan(right, relid))
			*out = {reinterpret_cast<Expr *>(right), false};
		else if (is_key_var(right, relid, key_attnum) && evaluable_before_scan(left, relid))
			*out = {reinterpret_cast<Expr *>(left), false};
		else
			return false;
		return true;
	}
	if (IsA(clause, ScalarArrayOpExpr)) {
		ScalarArrayOpExpr *op = reinterpret_cast<ScalarArrayOpExpr *>(clause);
		if (!op->useOr || list_length(op->args) != 2 || !is_integer_equality(op->opno))
			return false;
		Node *left = static_cast<Node *>(linitial(op->args));
		Node *right = static_cast<Node *>(lsecond(op->args));
		if (!is_key_var(left, relid, key_attnum) || !evaluable_before_scan(right, relid))
			return false;
		*out = {reinterpret_cast<Expr *>(right), true};
		return true;
	}
	return false;
}

double estimated_keys(const KeyClause &key)
{
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

/* The first restriction clause usable as a lookup. */
RestrictInfo *find_key_restriction(List *clauses, Index relid, AttrNumber key_attnum, KeyClause *key)
{
	ListCell *cell;
	foreach (cell, clauses) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		if (!rinfo->pseudoconstant && match_key_clause(rinfo->clause, relid, key_attnum, key))
			return rinfo;
	}
	return nullptr;
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

bool key_member(PlannerInfo *, RelOptInfo *rel, EquivalenceClass *, EquivalenceMember *em, void *arg)
{
	return is_key_var(reinterpret_cast<Node *>(em->em_expr), rel->relid,
					  *static_cast<AttrNumber *>(arg));
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

/* "(key = value)" / "(key = ANY (value))" for EXPLAIN, with the query's names for Vars. */
char *display_key(PlannerInfo *root, Oid foreigntableid, AttrNumber key_attnum, const KeyClause &key)
{
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
	const char *column = quote_identifier(get_attname(foreigntableid, key_attnum, false));
	return key.is_array ? psprintf("(%s = ANY (%s))", column, value) : psprintf("(%s = %s)", column, value);
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

	KeyClause key;
	double selectivity = clauselist_selectivity(root, baserel->baserestrictinfo, 0, JOIN_INNER, NULL);
	if (find_key_restriction(baserel->baserestrictinfo, baserel->relid, state->table->key_attnum, &key))
		baserel->rows = clamp_row_est(Min(estimated_keys(key), state->source_tuples));
	else
		baserel->rows = clamp_row_est(state->source_tuples * selectivity);
	baserel->tuples = state->source_tuples;
}

void fdw_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid)
{
	LookupPlanState *state = static_cast<LookupPlanState *>(baserel->fdw_private);
	AttrNumber key_attnum = state->table->key_attnum;

	KeyClause key;
	RestrictInfo *key_rinfo = find_key_restriction(baserel->baserestrictinfo, baserel->relid, key_attnum, &key);
	if (key_rinfo != nullptr) {
		add_lookup_path(root, baserel, Min(estimated_keys(key), state->source_tuples), NULL,
						list_delete_ptr(list_copy(baserel->baserestrictinfo), key_rinfo));
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

	if (key_attnum == 0)
		return;

	/* Parameterized lookups: key = outer expression, from join clauses and equivalences. */
	List *join_clauses = NIL;
	ListCell *cell;
	foreach (cell, baserel->joininfo) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		if (join_clause_is_movable_to(rinfo, baserel) &&
			match_key_clause(rinfo->clause, baserel->relid, key_attnum, &key))
			join_clauses = lappend(join_clauses, rinfo);
	}
	if (baserel->has_eclass_joins)
		join_clauses = list_concat(join_clauses,
								   generate_implied_equalities_for_column(root, baserel, key_member, &key_attnum,
																		  baserel->lateral_referencers));
	foreach (cell, join_clauses) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		Relids required_outer = bms_union(rinfo->clause_relids, baserel->lateral_relids);
		required_outer = bms_del_member(required_outer, baserel->relid);
		if (bms_is_empty(required_outer) || bms_overlap(required_outer, baserel->relids))
			continue;
		if (!match_key_clause(rinfo->clause, baserel->relid, key_attnum, &key))
			continue;
		ParamPathInfo *param = get_baserel_parampathinfo(root, baserel, required_outer);
		List *other = list_concat(list_copy(baserel->baserestrictinfo),
								  list_delete_ptr(list_copy(param->ppi_clauses), rinfo));
		add_lookup_path(root, baserel, estimated_keys(key), required_outer, other);
	}
}

ForeignScan *fdw_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
						  ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	LookupPlanState *state = static_cast<LookupPlanState *>(baserel->fdw_private);
	AttrNumber key_attnum = state->table->key_attnum;

	/*
	 * Choose the key clause among the clauses this scan must enforce: a restriction first
	 * (it needs no outer row), else a join clause of the parameterization.
	 */
	KeyClause key = {nullptr, false};
	RestrictInfo *key_rinfo = nullptr;
	bool parameterized = best_path->path.param_info != nullptr;
	for (int pass = 0; pass < 2 && key_rinfo == nullptr; pass++) {
		ListCell *cell;
		foreach (cell, scan_clauses) {
			RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
			bool is_join = !bms_is_empty(bms_del_member(bms_copy(rinfo->clause_relids), baserel->relid));
			if (rinfo->pseudoconstant || is_join != (pass == 1) || (is_join && !parameterized))
				continue;
			if (match_key_clause(rinfo->clause, baserel->relid, key_attnum, &key)) {
				key_rinfo = rinfo;
				break;
			}
		}
	}

	List *local_quals = NIL;
	ListCell *cell;
	foreach (cell, scan_clauses) {
		RestrictInfo *rinfo = static_cast<RestrictInfo *>(lfirst(cell));
		if (rinfo != key_rinfo && !rinfo->pseudoconstant)
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
	if (key_rinfo != nullptr) {
		recheck_quals = list_make1(key_rinfo->clause);
		fdw_exprs = list_make1(key.value);
		fdw_private = list_make3(makeInteger(key.is_array ? 1 : 0),
								 makeString(display_key(root, foreigntableid, key_attnum, key)),
								 needed);
	} else {
		fdw_private = list_make3(makeInteger(-1), makeString(pstrdup("")), needed);
	}
	return make_foreignscan(tlist, local_quals, baserel->relid, fdw_exprs, fdw_private, NIL,
							recheck_quals, outer_plan);
}

} // namespace local_cache

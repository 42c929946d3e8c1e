/*
 * planner.cpp — planner_hook that turns array_to_json(local_cache.mget(r, k)) into
 * local_cache.mget_json(r, k), and lets the capture record an UPDATE's or DELETE's keys from its
 * plan (capture_setup_plan).
 *
 * The two are equal byte for byte (that is mget_json's contract), but the second serves
 * the JSON rendered at fill time instead of rendering every row of every call, which is
 * where a 64-key array_to_json(mget(...)) spends most of its time. EXPLAIN VERBOSE shows
 * the rewritten call.
 */
#include "extension/planner.h"

#include "extension/boundary.h"
#include "extension/capture_setup.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

namespace local_cache {

namespace {

planner_hook_type prev_planner_hook = nullptr;

/* nodeFuncs.h declares walkers and mutators K&R style, as taking no arguments. */
using Walker = bool (*)();
using Mutator = Node *(*)();
template <typename To, typename From> To as_callback(From function)
{
	return reinterpret_cast<To>(reinterpret_cast<void (*)()>(function));
}

/* The functions' OIDs in the current database; looked up again after catalog changes. */
struct MgetFunctions {
	bool looked_up;
	Oid mget;
	Oid mget_json;
};
MgetFunctions functions = {false, InvalidOid, InvalidOid};

void functions_changed(Datum, int, uint32)
{
	functions.looked_up = false;
}

/* The keys are anycompatiblearray since 1.3, bigint[] in the versions before (a database may
 * not have run ALTER EXTENSION UPDATE yet). */
Oid lookup(const char *name)
{
	List *qualified = list_make2(makeString(pstrdup("local_cache")), makeString(pstrdup(name)));
	const Oid key_types[] = {ANYCOMPATIBLEARRAYOID, INT8ARRAYOID};
	for (Oid keys : key_types) {
		Oid args[2] = {REGCLASSOID, keys};
		Oid function = LookupFuncName(qualified, 2, args, true);
		if (OidIsValid(function))
			return function;
	}
	return InvalidOid;
}

const MgetFunctions &mget_functions(void)
{
	if (!functions.looked_up) {
		functions.mget = InvalidOid;
		functions.mget_json = InvalidOid;
		if (OidIsValid(get_namespace_oid("local_cache", true))) {
			functions.mget = lookup("mget");
			functions.mget_json = lookup("mget_json");
		}
		functions.looked_up = true;
	}
	return functions;
}

FuncExpr *rewritable_call(Node *node)
{
	if (node == nullptr || !IsA(node, FuncExpr))
		return nullptr;
	FuncExpr *outer = reinterpret_cast<FuncExpr *>(node);
	if (outer->funcid != F_ARRAY_TO_JSON_ANYARRAY || list_length(outer->args) != 1)
		return nullptr;
	Node *arg = static_cast<Node *>(linitial(outer->args));
	if (!IsA(arg, FuncExpr) || reinterpret_cast<FuncExpr *>(arg)->funcid != functions.mget)
		return nullptr;
	return reinterpret_cast<FuncExpr *>(arg);
}

bool contains_rewritable(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node),
								 as_callback<Walker>(pg_entry<contains_rewritable>), context, 0);
	if (rewritable_call(node) != nullptr)
		return true;
	return expression_tree_walker(node, as_callback<Walker>(pg_entry<contains_rewritable>), context);
}

Node *rewrite(Node *node, void *context)
{
	if (node == nullptr)
		return nullptr;
	if (IsA(node, Query))
		return reinterpret_cast<Node *>(
			query_tree_mutator(reinterpret_cast<Query *>(node), as_callback<Mutator>(pg_entry<rewrite>),
							   context, 0));
	if (FuncExpr *mget = rewritable_call(node)) {
		FuncExpr *call = makeFuncExpr(functions.mget_json, JSONOID,
									  reinterpret_cast<List *>(rewrite(reinterpret_cast<Node *>(mget->args), context)),
									  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		call->location = reinterpret_cast<FuncExpr *>(node)->location;
		return reinterpret_cast<Node *>(call);
	}
	return expression_tree_mutator(node, as_callback<Mutator>(pg_entry<rewrite>), context);
}

PlannedStmt *plan_query(Query *parse, const char *query_string, int cursor_options,
						ParamListInfo bound_params)
{
	throw_point("planner");
	const MgetFunctions &f = mget_functions();
	if (OidIsValid(f.mget) && OidIsValid(f.mget_json) && contains_rewritable(reinterpret_cast<Node *>(parse), nullptr))
		parse = reinterpret_cast<Query *>(rewrite(reinterpret_cast<Node *>(parse), nullptr));
	capture_setup_plan(parse);
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursor_options, bound_params);
	return standard_planner(parse, query_string, cursor_options, bound_params);
}

} // namespace

void planner_install_hook(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = pg_entry<plan_query>;
	CacheRegisterSyscacheCallback(PROCOID, pg_entry<functions_changed>, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, pg_entry<functions_changed>, (Datum) 0);
}

} // namespace local_cache

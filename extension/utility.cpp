/*
 * utility.cpp — the ProcessUtility hook: what DDL means for cached tables.
 *
 * - DDL that may change how a cached table's writes are captured (any ALTER TABLE of it —
 *   ENABLE/DISABLE TRIGGER among them —, CREATE [OR REPLACE] TRIGGER, DROP TRIGGER, ALTER
 *   TRIGGER ... RENAME, and ALTER EVENT TRIGGER of the extension's event triggers) marks the
 *   table altered (invalidation_table_altered): flushed at pre-commit with a capture change,
 *   logged for standbys. This runs for every such statement however it is issued (SPI, inside
 *   functions) and cannot be disabled like an event trigger; the ALTER TABLE event trigger and
 *   the shape signature (cached_table.cpp) notice the same changes on their own.
 * - DDL that would put a cached table into an inheritance tree or a partitioned table
 *   (CREATE TABLE ... INHERITS, ALTER TABLE ... INHERIT, ALTER TABLE ... ATTACH PARTITION) is
 *   refused: statement triggers fire only on the table a statement names, so writes through
 *   the parent would not be seen.
 * - CHECKPOINT writes the WAL switch record local_cache.wal_invalidations calls for first.
 * - A transaction that ran a statement that can change catalogs advances the catalog epoch
 *   (store.h) when it commits, after its invalidation messages are sent and before its COMMIT
 *   returns; COMMIT PREPARED always does.
 */
#include "extension/utility.h"

#include "extension/boundary.h"
#include "extension/invalidation.h"
#include "extension/registry.h"
#include "extension/store.h"
#include "extension/wal.h"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "nodes/parsenodes.h"
#include "storage/lockdefs.h"
#include "tcop/utility.h"
#include "utils/resowner.h"
}

namespace local_cache {

namespace {

ProcessUtility_hook_type prev_process_utility = nullptr;

/* The current transaction ran a statement that can change catalogs; then, that it committed
 * and the epoch is to advance once its invalidation messages are out. */
bool changed_catalogs = false;
bool committed_catalog_changes = false;

/* Statements that change no catalog a cached read depends on (privileges, tables, types,
 * roles, the registry); every other utility statement counts as a catalog change. */
bool leaves_catalogs_alone(const Node *stmt)
{
	switch (nodeTag(stmt)) {
	case T_TransactionStmt:
	case T_VariableSetStmt:
	case T_VariableShowStmt:
	case T_ExplainStmt:
	case T_PrepareStmt:
	case T_ExecuteStmt:
	case T_DeallocateStmt:
	case T_DiscardStmt:
	case T_NotifyStmt:
	case T_ListenStmt:
	case T_UnlistenStmt:
	case T_CheckPointStmt:
	case T_LockStmt:
	case T_CopyStmt:
	case T_DeclareCursorStmt:
	case T_FetchStmt:
	case T_ClosePortalStmt:
	case T_VacuumStmt:
	case T_ReindexStmt:
	case T_ClusterStmt:
	case T_LoadStmt:
	case T_DoStmt:   /* the statements inside come through this hook themselves */
	case T_CallStmt: /* likewise */
	case T_ConstraintsSetStmt:
		return true;
	default:
		return false;
	}
}

bool is_commit_prepared(const Node *stmt)
{
	return IsA(stmt, TransactionStmt) &&
		   reinterpret_cast<const TransactionStmt *>(stmt)->kind == TRANS_STMT_COMMIT_PREPARED;
}

void xact_event(XactEvent event, void *)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
		committed_catalog_changes = changed_catalogs;
		changed_catalogs = false;
		break;
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PREPARE: /* COMMIT PREPARED advances the epoch, whoever runs it */
		changed_catalogs = false;
		committed_catalog_changes = false;
		break;
	default:
		break;
	}
}

/*
 * The commit's last steps: XACT_EVENT_COMMIT comes before the transaction sends its
 * invalidation messages (AtEOXact_Inval), the release of its locks after. Advancing the epoch
 * here, before COMMIT returns, means whoever sees the new epoch finds the messages queued.
 */
void resources_released(ResourceReleasePhase phase, bool is_commit, bool is_top_level, void *)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !is_top_level)
		return;
	if (is_commit && committed_catalog_changes && store_available())
		store_advance_catalog_epoch();
	committed_catalog_changes = false;
}

Oid cached_relation(const RangeVar *relation)
{
	if (relation == nullptr)
		return InvalidOid;
	Oid relid = RangeVarGetRelid(relation, NoLock, true);
	return OidIsValid(relid) && registry_lookup(relid) ? relid : InvalidOid;
}

void refuse_inheritance(const RangeVar *relation, const char *what)
{
	if (OidIsValid(cached_relation(relation)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s: table \"%s\" is cached by local_cache", what, relation->relname),
				 errdetail("Statement triggers fire only on the table a statement names: writes through "
						   "a parent would not reach the cache."),
				 errhint("Call local_cache.disable('%s') first.", relation->relname)));
}

void refuse_create_inheriting(const CreateStmt *stmt)
{
	ListCell *cell;
	foreach (cell, stmt->inhRelations)
		refuse_inheritance(static_cast<RangeVar *>(lfirst(cell)), "inherit from it");
}

/* Before the statement runs. */
void check_inheritance(Node *stmt)
{
	if (IsA(stmt, CreateStmt))
		refuse_create_inheriting(reinterpret_cast<CreateStmt *>(stmt));
	else if (IsA(stmt, CreateForeignTableStmt))
		refuse_create_inheriting(&reinterpret_cast<CreateForeignTableStmt *>(stmt)->base);
	else if (IsA(stmt, AlterTableStmt)) {
		AlterTableStmt *alter = reinterpret_cast<AlterTableStmt *>(stmt);
		ListCell *cell;
		foreach (cell, alter->cmds) {
			AlterTableCmd *cmd = static_cast<AlterTableCmd *>(lfirst(cell));
			if (cmd->subtype == AT_AddInherit) {
				refuse_inheritance(alter->relation, "make it inherit");
				refuse_inheritance(reinterpret_cast<RangeVar *>(cmd->def), "inherit from it");
			} else if (cmd->subtype == AT_AttachPartition) {
				refuse_inheritance(reinterpret_cast<PartitionCmd *>(cmd->def)->name, "attach it as a partition");
			}
		}
	}
}

void mark_altered(const RangeVar *relation)
{
	Oid relid = cached_relation(relation);
	if (OidIsValid(relid))
		invalidation_table_altered(relid);
}

/* After the statement ran (names resolve to what it changed). */
void note_capture_changes(Node *stmt)
{
	if (IsA(stmt, AlterTableStmt)) {
		mark_altered(reinterpret_cast<AlterTableStmt *>(stmt)->relation);
	} else if (IsA(stmt, CreateTrigStmt)) {
		mark_altered(reinterpret_cast<CreateTrigStmt *>(stmt)->relation);
	} else if (IsA(stmt, RenameStmt)) {
		RenameStmt *rename = reinterpret_cast<RenameStmt *>(stmt);
		if (rename->renameType == OBJECT_TRIGGER)
			mark_altered(rename->relation);
	} else if (IsA(stmt, DropStmt)) {
		DropStmt *drop = reinterpret_cast<DropStmt *>(stmt);
		if (drop->removeType != OBJECT_TRIGGER)
			return;
		ListCell *cell;
		foreach (cell, drop->objects) {
			/* [schema.]table.trigger: the table is all but the last name. */
			List *names = list_copy(static_cast<List *>(lfirst(cell)));
			names = list_truncate(names, list_length(names) - 1);
			mark_altered(makeRangeVarFromNameList(names));
		}
	} else if (IsA(stmt, AlterEventTrigStmt)) {
		/* Switching the extension's own event triggers off or on: what they guard may have
		 * been missed meanwhile. */
		if (strncmp(reinterpret_cast<AlterEventTrigStmt *>(stmt)->trigname, "local_cache_", 12) == 0)
			registry_scan([](const RegistryEntry &entry) { invalidation_table_altered(entry.relid); });
	}
}

void process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
					 ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *query_env,
					 DestReceiver *dest, QueryCompletion *qc)
{
	Node *stmt = pstmt->utilityStmt;
	if (IsA(stmt, CheckPointStmt))
		wal_before_checkpoint();
	else
		check_inheritance(stmt);
	if (!leaves_catalogs_alone(stmt))
		changed_catalogs = true;
	if (prev_process_utility)
		prev_process_utility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
	else
		standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
	note_capture_changes(stmt);
	/* Committed by now, and visible; the client has not been told yet. */
	if (is_commit_prepared(stmt) && store_available())
		store_advance_catalog_epoch();
}

} // namespace

void utility_install_hook(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = pg_entry<process_utility>;
	RegisterXactCallback(pg_entry<xact_event>, NULL);
	RegisterResourceReleaseCallback(pg_entry<resources_released>, NULL);
}

} // namespace local_cache

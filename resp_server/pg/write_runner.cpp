/*
 * write_runner.cpp — how a RESP write runs (write_runner.h): the role's settings and
 * statement_timeout around it, its errors, the session state discarded after it, and the plans
 * of its statements kept for the worker's life.
 */
#include "resp_server/pg/write_runner.h"

#include "extension/cached_table.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_db_role_setting.h"
#include "catalog/indexing.h"
#include "catalog/pg_type.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "storage/proc.h"
#include "storage/sinval.h"
#include "common/hashfn.h"
#include "storage/lock.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc_tables.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
}

#include <string>

namespace local_cache::resp {

LookupResult write_failure(const PgError &error, bool statement_timed_out)
{
	LookupResult result = statement_timed_out ? LookupResult::failed(error.message) : failure(error);
	if (result.status == LookupResult::Status::Failed)
		result.message += std::string(" (SQLSTATE ") + unpack_sql_state(error.sqlerrcode) + ")";
	return result;
}

namespace {

bool statement_timeout_armed = false;

/*
 * The settings a new session of a role would take from pg_db_role_setting: the rows of the
 * server, the database, the role and the role in the database, from the least specific to the
 * most, each overriding the one before. Read once per role and kept while no shared invalidation
 * has been processed since: ALTER ROLE / ALTER DATABASE ... SET changes pg_db_role_setting, whose
 * every change sends a snapshot invalidation to every process (this one too, which reads its own
 * messages back), counted by SharedInvalidMessageCounter as the next transaction starts — before
 * any command that could see the change. Four catalog index scans per write were a tenth of a
 * RESP SET's CPU.
 */
struct RoleSettings {
	Oid role; /* hash key */
	int count;
	char **names; /* in role_settings_context, as are values */
	char **values;
};
constexpr long kMaxRoleSettings = 256;
HTAB *role_settings = nullptr;
MemoryContext role_settings_context = nullptr;
uint64 role_settings_read_at = 0; /* SharedInvalidMessageCounter when they were read */

/* Appends the settings of one row (database, role) to `settings`, but lock_timeout: the worker's
 * own bound on lock waits stays (lock_table in session_runtime.h). */
void read_settings_row(Relation catalog, Snapshot snapshot, Oid database, Oid role, List **names, List **values)
{
	ScanKeyData keys[2];
	ScanKeyInit(&keys[0], Anum_pg_db_role_setting_setdatabase, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(database));
	ScanKeyInit(&keys[1], Anum_pg_db_role_setting_setrole, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(role));
	SysScanDesc scan = systable_beginscan(catalog, DbRoleSettingDatidRolidIndexId, true, snapshot, 2, keys);
	HeapTuple tuple;
	while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
		bool isnull;
		Datum config = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig, RelationGetDescr(catalog), &isnull);
		if (isnull)
			continue;
		Datum *items;
		bool *nulls;
		int count;
		deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &count);
		for (int i = 0; i < count; i++) {
			char *name = nullptr, *value = nullptr;
			if (!nulls[i])
				ParseLongOption(TextDatumGetCString(items[i]), &name, &value);
			if (value != nullptr && strcmp(name, "lock_timeout") != 0) {
				*names = lappend(*names, name);
				*values = lappend(*values, value);
			}
		}
	}
	systable_endscan(scan);
}

const RoleSettings &settings_of(Oid role)
{
	if (role_settings == nullptr || role_settings_read_at != SharedInvalidMessageCounter ||
		hash_get_num_entries(role_settings) >= kMaxRoleSettings) {
		if (role_settings_context == nullptr)
			role_settings_context = AllocSetContextCreate(TopMemoryContext, "local_cache RESP role settings",
														  ALLOCSET_SMALL_SIZES);
		MemoryContextReset(role_settings_context);
		role_settings = blob_hash_create("local_cache RESP role settings", sizeof(Oid), sizeof(RoleSettings),
										 role_settings_context);
		role_settings_read_at = SharedInvalidMessageCounter;
	}
	bool found;
	RoleSettings *entry = static_cast<RoleSettings *>(hash_search(role_settings, &role, HASH_FIND, &found));
	if (found)
		return *entry;
	List *names = NIL, *values = NIL;
	Relation catalog = table_open(DbRoleSettingRelationId, AccessShareLock);
	Snapshot snapshot = RegisterSnapshot(GetCatalogSnapshot(DbRoleSettingRelationId));
	read_settings_row(catalog, snapshot, InvalidOid, InvalidOid, &names, &values);
	read_settings_row(catalog, snapshot, MyDatabaseId, InvalidOid, &names, &values);
	read_settings_row(catalog, snapshot, InvalidOid, role, &names, &values);
	read_settings_row(catalog, snapshot, MyDatabaseId, role, &names, &values);
	UnregisterSnapshot(snapshot);
	table_close(catalog, AccessShareLock);
	/* Taking the catalog's lock may have processed invalidations: what was read is current, and
	 * what was kept before, read earlier, is dropped at the next command. */
	entry = static_cast<RoleSettings *>(hash_search(role_settings, &role, HASH_ENTER, nullptr));
	entry->count = list_length(names);
	entry->names = static_cast<char **>(MemoryContextAlloc(role_settings_context, sizeof(char *) * (entry->count + 1)));
	entry->values = static_cast<char **>(MemoryContextAlloc(role_settings_context, sizeof(char *) * (entry->count + 1)));
	for (int i = 0; i < entry->count; i++) {
		entry->names[i] = MemoryContextStrdup(role_settings_context, static_cast<char *>(list_nth(names, i)));
		entry->values[i] = MemoryContextStrdup(role_settings_context, static_cast<char *>(list_nth(values, i)));
	}
	return *entry;
}

} // namespace

void begin_role_statement(Oid role)
{
	/* Applied as SET applies them, so that the GUC nest level undoes them (applied from a source
	 * up to PGC_S_OVERRIDE, as a backend applies them at its start, they would become the
	 * worker's own defaults), with a WARNING for one that cannot be set, as a new session warns. */
	const RoleSettings &settings = settings_of(role);
	for (int i = 0; i < settings.count; i++)
		(void) set_config_option(settings.names[i], settings.values[i], PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SET, true,
								 WARNING, false);
	/* The transaction has started: its read-only flag is taken from the setting now, as it
	 * would have been at its start in such a session. */
	if (DefaultXactReadOnly)
		XactReadOnly = true;
	if (StatementTimeout > 0) {
		enable_timeout_after(STATEMENT_TIMEOUT, StatementTimeout);
		statement_timeout_armed = true;
	}
}

namespace {

/* The settings RecordTransactionCommit reads: each one's variable, found once by name (the
 * lookup by name, GetConfigOption's, cost about 0.5 µs per write for the three), and its value
 * when the body ended. All three are integers or enums, whose variable is an int. */
struct CommitSetting {
	const char *name;
	config_generic *record;
	int *variable;
	int value;
};
CommitSetting commit_settings[] = {
	{"synchronous_commit", nullptr, nullptr, 0}, {"commit_delay", nullptr, nullptr, 0}, {"commit_siblings", nullptr, nullptr, 0}};
bool commit_settings_found = false;

void find_commit_settings()
{
	config_generic **records = get_guc_variables();
	for (CommitSetting &setting : commit_settings)
		for (int i = 0; i < GetNumConfigOptions() && setting.variable == nullptr; i++) {
			if (strcmp(records[i]->name, setting.name) != 0)
				continue;
			setting.record = records[i];
			if (records[i]->vartype == PGC_ENUM)
				setting.variable = reinterpret_cast<config_enum *>(records[i])->variable;
			else if (records[i]->vartype == PGC_INT)
				setting.variable = reinterpret_cast<config_int *>(records[i])->variable;
		}
	for (const CommitSetting &setting : commit_settings)
		if (setting.variable == nullptr)
			elog(ERROR, "local_cache: no integer setting \"%s\"", setting.name);
	commit_settings_found = true;
}

} // namespace

void remember_commit_settings()
{
	if (!commit_settings_found)
		find_commit_settings();
	for (CommitSetting &setting : commit_settings)
		setting.value = *setting.variable;
}

void restore_commit_settings()
{
	for (const CommitSetting &setting : commit_settings) {
		if (*setting.variable == setting.value)
			continue;
		char number[16];
		snprintf(number, sizeof(number), "%d", setting.value);
		const char *text = setting.record->vartype == PGC_ENUM
			? config_enum_lookup_by_value(reinterpret_cast<config_enum *>(setting.record), setting.value)
			: number;
		(void) set_config_option(setting.name, text, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	}
}

bool end_role_statement()
{
	if (!statement_timeout_armed)
		return false;
	statement_timeout_armed = false;
	/* A timeout that fired is no longer active (and its cancel became the write's error). */
	bool fired = !get_timeout_active(STATEMENT_TIMEOUT);
	disable_timeout(STATEMENT_TIMEOUT, false);
	return fired;
}

void discard_session_leftovers()
{
	PgError ignored;
	(void) run_or_abort_transaction([]() noexcept {
		DropAllPreparedStatements();
		LockReleaseSession(USER_LOCKMETHOD);
		ResetSequenceCaches();
	}, &ignored);
}

bool on_standby(PgError *error)
{
	bool standby = false;
	error->sqlerrcode = 0;
	if (!outside_transaction([&]() noexcept { standby = RecoveryInProgress(); }, error))
		return true;
	return standby;
}

namespace {

/*
 * The plans of the statements the writes run, by their text, parameter types and table. Kept
 * for the worker's life, at most kMaxPlans of them. The plan cache replans a statement after
 * DDL on the relations it reads, but not one that names the table only as a type
 * (json_populate_record(NULL::t, ...)), and never changes the parameter types it was prepared
 * with: so the plans of a table are dropped when it has a relcache invalidation (ALTER, DROP,
 * and a new table of the same name is another relid), and its parameter types are part of the
 * key (ALTER TYPE of a key column).
 *
 * Each is a generic plan from its first run (CURSOR_OPT_GENERIC_PLAN): the statements find rows
 * by their key, a plan no parameter's value changes, and the plan cache's own choice planned an
 * MSET of fewer rows than its estimate of an array's length (10) again at every run, a custom
 * plan that costs less than the generic one (the planner was a quarter of the worker's CPU for an
 * MSET of 2 rows).
 */
struct KeptPlan {
	uint64 hash;   /* hash key: of the text, the types and the table */
	char *sql;     /* in TopMemoryContext, as are types */
	Oid relid;     /* the table it writes; InvalidOid: none */
	int nargs;
	Oid *types;
	SPIPlanPtr plan;
	bool stale;    /* its table had an invalidation: freed at the next run() */
};
constexpr long kMaxPlans = 1024;
HTAB *kept_plans = nullptr;
/* Some kept plan is marked stale (walking every kept plan on every write was 0.5% of the RESP
 * worker's samples at 4 connections). */
bool stale_plans = false;

/* A relcache callback may run while a kept plan executes: it only marks plans stale. */
void mark_plans_stale(Datum, Oid relid)
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, kept_plans);
	while (KeptPlan *kept = static_cast<KeptPlan *>(hash_seq_search(&status)))
		if (!OidIsValid(relid) || kept->relid == relid)
			stale_plans = kept->stale = true;
}

void free_stale_plans()
{
	if (!stale_plans)
		return;
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, kept_plans);
	while (KeptPlan *kept = static_cast<KeptPlan *>(hash_seq_search(&status))) {
		if (!kept->stale)
			continue;
		SPI_freeplan(kept->plan);
		pfree(kept->sql);
		pfree(kept->types);
		hash_search(kept_plans, &kept->hash, HASH_REMOVE, nullptr);
	}
	stale_plans = false;
}

} // namespace

uint64 run(Oid relid, const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	if (kept_plans == nullptr) {
		kept_plans = blob_hash_create("local_cache RESP write plans", sizeof(uint64), sizeof(KeptPlan), TopMemoryContext);
		CacheRegisterRelcacheCallback(pg_entry<mark_plans_stale>, (Datum) 0);
	}
	free_stale_plans();
	uint64 hash = hash_bytes_extended(reinterpret_cast<const unsigned char *>(sql), int(strlen(sql)), relid);
	hash = hash_bytes_extended(reinterpret_cast<const unsigned char *>(types), int(sizeof(Oid) * nargs), hash);
	KeptPlan *kept = static_cast<KeptPlan *>(hash_search(kept_plans, &hash, HASH_FIND, nullptr));
	if (kept == nullptr && hash_get_num_entries(kept_plans) < kMaxPlans) {
		SPIPlanPtr plan = SPI_prepare_cursor(sql, nargs, types, CURSOR_OPT_GENERIC_PLAN);
		if (plan == nullptr)
			elog(ERROR, "SPI_prepare_cursor failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		kept = static_cast<KeptPlan *>(hash_search(kept_plans, &hash, HASH_ENTER, nullptr));
		kept->sql = MemoryContextStrdup(TopMemoryContext, sql);
		kept->relid = relid;
		kept->nargs = nargs;
		kept->types = static_cast<Oid *>(MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * (nargs + 1)));
		memcpy(kept->types, types, sizeof(Oid) * nargs);
		kept->plan = plan;
		kept->stale = false;
	}
	bool same = kept != nullptr && strcmp(kept->sql, sql) == 0 && kept->relid == relid && kept->nargs == nargs &&
		memcmp(kept->types, types, sizeof(Oid) * nargs) == 0;
	int rc = same ? SPI_execute_plan(kept->plan, values, nulls, false, 0)
				  : SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "SPI failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

char *result_text(uint64 row)
{
	char *text = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1);
	return text != nullptr ? copy_to_results(text, uint32(strlen(text))) : nullptr;
}

} // namespace local_cache::resp

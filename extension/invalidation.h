/*
 * invalidation.h — keeping the cache correct when cached tables are written.
 */
#pragma once

#include "extension/pg.h"

#include "extension/primary_key.h"
#include "extension/shard.h"

extern "C" {
#include "executor/tuptable.h"
#include "utils/relcache.h"
}

namespace local_cache {

void invalidation_register_callbacks(void);

/*
 * The transaction changed the table's definition or how its writes are captured (ALTER TABLE,
 * trigger DDL, enable/disable): flush its entries at pre-commit, with a capture change
 * (store_capture_begin) that makes every reader validate the triggers again once it has
 * committed, and read the table itself until then.
 */
void invalidation_table_altered(Oid relid);

/*
 * For the row trigger's WHEN clause, as a row of the table is written: whether its AFTER ROW event
 * is needed, i.e. the transaction does not flush the table whole at commit (a TRUNCATE, a definition
 * change, or past MAX_KEYS_PER_TABLE rows: then it decides so here, before the statement's events
 * have run). Once false it stays false to the transaction's end, subtransactions' aborts included
 * (flushing more than needed is always correct), so that the rows it skips are covered.
 */
bool invalidation_row_captured(Oid relid);

enum class RowCapture {
	QueueEvent,   /* the table is not marked written: the AFTER ROW event records it */
	Recorded,     /* the row's keys are recorded */
	TableFlushed, /* the table is flushed whole at commit: no row of it needs recording */
};

/*
 * The row trigger's WHEN clause as capture_setup.cpp prepares it, as a row of the table is written
 * (`old_row` null for an INSERT, `new_row` for a DELETE): records the row's keys itself, as its
 * AFTER ROW event would at the statement's end, so that no event need be queued, and counts the
 * row as invalidation_row_captured does. QueueEvent only if nothing marked the table written in
 * this transaction (logical replication's apply fires no statement trigger).
 */
RowCapture invalidation_capture_row(Oid relid, TupleTableSlot *old_row, TupleTableSlot *new_row);

/* The key that names the table's rows in what the capture records, or null: it has none the
 * cache can use (then it is flushed whole at commit). Valid until the next relcache invalidation. */
const PrimaryKey *invalidation_row_key(Relation rel);

/*
 * Records the key of a row the statement writes, from its key columns' values (of `types`, each a
 * type that names its column's keys: primary_key.h, value_kind_for), as invalidation_capture_row
 * records a row's: for local_cache.capture_row_key(), which the plan of an UPDATE or DELETE
 * evaluates for each row it is about to write, and for the key an UPDATE's or DELETE's WHERE
 * clause names (capture_setup.cpp). False, and nothing recorded, if nothing marked the table
 * written in this transaction (then the row trigger stays on).
 */
bool invalidation_capture_key(Oid relid, const Datum *values, const Oid *types, int ncolumns);

/*
 * What the capture's BEFORE STATEMENT trigger does as a statement is about to write the table:
 * marks it written (from now on the transaction reads the table itself, and its rows' keys are
 * recorded as they are written). capture_setup.cpp does it at ExecutorStart instead of the trigger.
 * Errors out without the shared segment: no invalidation could then reach standbys.
 */
void invalidation_statement_writes(Relation rel);

/* For a statement that writes every row of a table the transaction marked written: the table is
 * flushed whole at commit, and its rows need no keys. False if nothing marked it written. */
bool invalidation_flush_at_commit(Oid relid);

/* Whether the transaction marked the table written and flushes it whole at commit. */
bool invalidation_table_flushed(Oid relid);

/* Whether the current transaction has written the table (its reads then bypass the cache). */
bool invalidation_xact_wrote(Oid relid);

/*
 * For the RESP write path, after a command's statement wrote the row `key` of the table itself
 * (not as a side effect: a cascade, a trigger's write): its change is logged for CLIENT TRACKING
 * as the writer's (tracking_log_set_writer), which NOLOOP skips; every other change of the
 * transaction as nobody's. Nothing if the transaction has not changed the key (the statement's
 * AFTER ROW capture has run by now); undone if the subtransaction it was made in aborts.
 */
void invalidation_own_write(Oid relid, KeyBytes key);

} // namespace local_cache

/*
 * row_reader.cpp — what the RESP commands read from PostgreSQL (PgRowReader, row_reader.h);
 * what the calls share is in session_runtime.cpp, hits without a transaction in hit_path.cpp.
 *
 * Every call runs in a short transaction of its own with a fresh snapshot (so a reply never
 * shows a row older than a COMMIT acknowledged before the request arrived), inside
 * run_or_abort_transaction(): a PostgreSQL error becomes a -ERR / -NOPERM / -BUSY reply,
 * never a worker exit.
 * A command never waits for a lock: a table another transaction has locked answers Busy at
 * once (the server retries the request, see connection.cpp), and lock_timeout bounds any other
 * lock wait (catalogs, indexes) to a millisecond.
 * Rows come through fetch_rows(), the lookup/fill path mget and the FDW use, after
 * relinfo_open() has checked that the connection's role may read the table. Results are
 * copied into a memory context that outlives the transaction and handed to the command's
 * sink afterwards, so no C++ code runs inside the guarded region.
 *
 * The exception: GET, MGET and EXISTS whose keys are all cache hits are served without a
 * transaction (serve_hits), from what earlier transactions learned — the prefix map, which
 * role may read which table, the tables' facts — as long as the catalog epoch (store.h) they
 * learned it at is current. Why that is exact: docs/RESP.md, "Cache hits without a
 * transaction".
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/cached_table.h"
#include "extension/fetch.h"
#include "extension/store.h"
#include "resp_server/pg/row_reader.h"
#include "resp_server/pg/hit_path.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/shared_state.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "access/htup_details.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"
}

namespace local_cache::resp {

namespace {

/* The tables read since the command layer last forgot them whose writes are not captured
 * (RowReader::uncaptured_reads). Plain data: noted inside transactions. */
constexpr int kUncapturedKept = 16;
struct {
	Oid relids[kUncapturedKept];
	int count;
	bool overflowed;
} uncaptured;

RelInfo *open_read_table(Oid relid, Oid role)
{
	RelInfo *info = open_table(relid, role);
	if (!info->writes_captured) {
		bool known = false;
		for (int i = 0; i < uncaptured.count && !known; i++)
			known = uncaptured.relids[i] == relid;
		if (!known && uncaptured.count < kUncapturedKept)
			uncaptured.relids[uncaptured.count++] = relid;
		else if (!known)
			uncaptured.overflowed = true;
	}
	return info;
}

struct Collector {
	Found *found;
	const int *positions; /* request position of each fetched key */
	Budget *budget;
};
/* Under a shard lock for hits: only copy. */
void collect(void *context, int position, const FetchedRow &row)
{
	Collector *collector = static_cast<Collector *>(context);
	Found *found = &collector->found[collector->positions[position]];
	if (!budget_take(collector->budget, row.json != nullptr ? row.json_len : row.tuple_len))
		return;
	if (row.json != nullptr)
		*found = {copy_to_results(row.json, row.json_len), row.json_len, false};
	else
		*found = {copy_to_results(row.tuple, row.tuple_len), row.tuple_len, true};
}

void fetch_table(Oid relid, Oid role, const RowKey *keys, const Oid *relids, size_t count, Found *found,
				 Budget *budget)
{
	RelInfo *info = open_read_table(relid, role);
	KeyBytes *bytes = static_cast<KeyBytes *>(palloc(sizeof(KeyBytes) * count));
	int *positions = static_cast<int *>(palloc(sizeof(int) * count));
	int n = 0;
	for (size_t i = 0; i < count; i++) {
		/* An id that is the text of no key of the table names no row. */
		if (relids[i] == relid && key_of_id(info, keys[i].id, &bytes[n])) {
			positions[n] = int(i);
			n++;
		}
	}
	FetchRequest request(info, GetActiveSnapshot(), bytes, n);
	Collector collector = {found, positions, budget};
	fetch_rows(request, collect, &collector);
	budget_check(budget);

	/* Rows of tables whose JSON is not cached (session-dependent types) are rendered here. */
	for (int i = 0; i < n; i++) {
		Found *f = &found[positions[i]];
		if (f->bytes == nullptr || !f->is_tuple)
			continue;
		StringInfoData json;
		initStringInfo(&json);
		render_row_json(f->bytes, &json);
		budget->left += f->length; /* the tuple was counted; count its JSON instead */
		budget_take(budget, size_t(json.len));
		budget_check(budget);
		*f = {copy_to_results(json.data, uint32(json.len)), uint32(json.len), false};
	}
}

/* The row of one key as values/nulls of its table's row type, or false. In a transaction. */
struct RowValues {
	TupleDesc desc;
	Datum *values;
	bool *nulls;
};

/* Under a shard lock for hits: only copy. */
void collect_tuple(void *context, int, const FetchedRow &row)
{
	*static_cast<Found *>(context) = {copy_to_results(row.tuple, row.tuple_len), row.tuple_len, true};
}

bool fetch_row_values(const Session &session, const RowKey &key, RowValues *row)
{
	load_prefixes();
	Oid relid = relid_for_prefix(key.prefix);
	if (!OidIsValid(relid))
		return false;
	RelInfo *info = open_read_table(relid, Oid(session.role->id));
	KeyBytes bytes;
	if (!key_of_id(info, key.id, &bytes))
		return false;
	Found tuple = {nullptr, 0, false};
	FetchRequest request(info, GetActiveSnapshot(), &bytes, 1);
	fetch_rows(request, collect_tuple, &tuple);
	if (tuple.bytes == nullptr)
		return false;
	row->desc = lookup_rowtype_tupdesc_copy(info->rowtype, -1);
	row->values = static_cast<Datum *>(palloc(sizeof(Datum) * row->desc->natts));
	row->nulls = static_cast<bool *>(palloc(sizeof(bool) * row->desc->natts));
	HeapTupleData data;
	data.t_len = tuple.length;
	ItemPointerSetInvalid(&data.t_self);
	data.t_tableOid = relid;
	data.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(tuple.bytes));
	heap_deform_tuple(&data, row->desc, row->values, row->nulls);
	return true;
}

/* A column's value as text (its output function), into results_context. */
Found column_text(const RowValues &row, int column)
{
	Form_pg_attribute att = TupleDescAttr(row.desc, column);
	Oid output;
	bool varlena;
	getTypeOutputInfo(att->atttypid, &output, &varlena);
	char *text = OidOutputFunctionCall(output, row.values[column]);
	return {copy_to_results(text, uint32(strlen(text))), uint32(strlen(text)), false};
}

int column_number(TupleDesc desc, std::string_view name)
{
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute att = TupleDescAttr(desc, i);
		if (!att->attisdropped && strlen(NameStr(att->attname)) == name.size() &&
			memcmp(NameStr(att->attname), name.data(), name.size()) == 0)
			return i;
	}
	return -1;
}
/* SCAN visits tables by Oid, so a position survives tables enabled or disabled in between. */
int compare_relids(const void *a, const void *b)
{
	Oid left = static_cast<const PrefixEntry *>(a)->relid;
	Oid right = static_cast<const PrefixEntry *>(b)->relid;
	return left < right ? -1 : left > right ? 1 : 0;
}

/* Whether the table's keys, "<prefix>:<id>", can begin with `key_start`. */
bool keys_can_start_with(const PrefixEntry &table, std::string_view key_start)
{
	size_t common = std::min(table.length, key_start.size());
	if (memcmp(table.prefix, key_start.data(), common) != 0)
		return false;
	return key_start.size() <= table.length || key_start[table.length] == ':';
}

/* A key SCAN found: its table's prefix (in prefix_context), the table's key shape, and the
 * key's bytes (in results_context). */
struct ScannedKey {
	const char *prefix;
	size_t length;
	KeyShape shape;
	KeyBytes key;
};

/* SCAN goes on after the key position.after_key names in position.table. */
ScanPosition scan_position(Oid relid, const KeyBytes *after)
{
	ScanPosition position;
	position.table = relid;
	position.started = after != nullptr;
	if (after != nullptr) {
		Assert(after->len <= ScanPosition::kMaxKeyBytes);
		memcpy(position.after_key, after->data, after->len);
		position.after_length = uint16(after->len);
	}
	return position;
}
} // namespace

PgRowReader::PgRowReader()
{
	start_session_runtime();
}

LookupResult PgRowReader::get_rows(const Session &session, const RowKey *keys, size_t count,
									ValueSink &sink)
{
	Oid role = Oid(session.role->id);
	Found *found = nullptr;
	Oid *relids = nullptr;
	bool hits = false;
	PgError error;
	if (!outside_transaction([&]() noexcept {
			MemoryContextReset(results_context);
			found = results_array<Found>(count);
			relids = results_array<Oid>(count);
			TableSlotRef *tables = results_array<TableSlotRef>(count);
			bool *negative = results_array<bool>(count);
			hits = serve_hits(role, keys, count, found, tables, negative);
			if (hits)
				count_hits(tables, negative, count);
			else
				memset(found, 0, sizeof(Found) * count);
		}, &error))
		return failure(error);
	if (hits) {
		deliver(found, count, sink);
		return LookupResult::ok();
	}
	Budget budget = output_budget();
	uint64 epoch = store_catalog_epoch(); /* before the transaction learns anything */
	bool ok = in_transaction([&]() noexcept {
		load_prefixes();
		for (size_t i = 0; i < count; i++)
			relids[i] = relid_for_prefix(keys[i].prefix);
		for (size_t i = 0; i < count; i++) {
			if (!OidIsValid(relids[i]))
				continue;
			bool first = true;
			for (size_t j = 0; j < i && first; j++)
				first = relids[j] != relids[i];
			if (first)
				fetch_table(relids[i], role, keys, relids, count, found, &budget);
		}
	}, &error);
	if (!ok)
		return failure(error);
	if (!batch.active)
		learn_readers(epoch, role, relids, count);
	deliver(found, count, sink);
	return LookupResult::ok();
}

LookupResult PgRowReader::get_columns(const Session &session, const RowKey &key,
									   const std::string_view *columns, size_t count, ValueSink &sink)
{
	Found *found = nullptr;
	Budget budget = output_budget();
	PgError error;
	bool ok = in_transaction([&]() noexcept {
		MemoryContextReset(results_context);
		found = results_array<Found>(count);
		RowValues row;
		if (!fetch_row_values(session, key, &row))
			return;
		for (size_t i = 0; i < count; i++) {
			int column = column_number(row.desc, columns[i]);
			if (column >= 0 && !row.nulls[column]) {
				found[i] = column_text(row, column);
				budget_take(&budget, found[i].length);
				budget_check(&budget);
			}
		}
	}, &error);
	if (!ok)
		return failure(error);
	deliver(found, count, sink);
	return LookupResult::ok();
}

LookupResult PgRowReader::get_all_columns(const Session &session, const RowKey &key, FieldSink &sink)
{
	Found *names = nullptr;
	Found *values = nullptr;
	int n = 0;
	PgError error;
	bool ok = in_transaction([&]() noexcept {
		MemoryContextReset(results_context);
		RowValues row;
		if (!fetch_row_values(session, key, &row))
			return;
		names = results_array<Found>(size_t(row.desc->natts));
		values = results_array<Found>(size_t(row.desc->natts));
		for (int i = 0; i < row.desc->natts; i++) {
			Form_pg_attribute att = TupleDescAttr(row.desc, i);
			if (att->attisdropped || row.nulls[i])
				continue;
			const char *name = NameStr(att->attname);
			names[n] = {copy_to_results(name, uint32(strlen(name))), uint32(strlen(name)), false};
			values[n] = column_text(row, i);
			n++;
		}
	}, &error);
	if (!ok)
		return failure(error);
	for (int i = 0; i < n; i++)
		sink.field(std::string_view(names[i].bytes, names[i].length),
				   std::string_view(values[i].bytes, values[i].length));
	return LookupResult::ok();
}

void PgRowReader::uncaptured_reads(std::vector<std::string> &found, bool *every)
{
	found.clear();
	*every = uncaptured.overflowed;
	/* The prefix map is the one the reads used (load_prefixes; rebuilt only inside a
	 * transaction). A table whose prefix went meanwhile names no key read. */
	for (int i = 0; i < uncaptured.count; i++)
		for (int p = 0; p < nprefixes; p++)
			if (prefixes[p].relid == uncaptured.relids[i])
				found.emplace_back(prefixes[p].prefix, prefixes[p].length);
}

void PgRowReader::forget_uncaptured_reads()
{
	uncaptured.count = 0;
	uncaptured.overflowed = false;
}

LookupResult PgRowReader::scan_keys(const Session &session, ScanPosition &position, size_t count,
									 std::string_view key_start, KeySink &sink)
{
	ScannedKey *keys = nullptr;
	size_t n = 0;
	ScanPosition next;
	next.finished = true;
	Oid role = Oid(session.role->id);
	PgError error;
	bool ok = in_transaction([&]() noexcept {
		MemoryContextReset(results_context);
		load_prefixes();
		PrefixEntry *tables = static_cast<PrefixEntry *>(palloc(sizeof(PrefixEntry) * (nprefixes + 1)));
		memcpy(tables, prefixes, sizeof(PrefixEntry) * nprefixes);
		qsort(tables, nprefixes, sizeof(PrefixEntry), compare_relids);
		size_t capacity = count + 1;
		keys = static_cast<ScannedKey *>(MemoryContextAlloc(results_context, sizeof(ScannedKey) * capacity));
		for (int i = 0; i < nprefixes; i++) {
			const PrefixEntry &table = tables[i];
			if (table.relid < position.table)
				continue;
			if (n >= count) {
				next = scan_position(table.relid, nullptr);
				break;
			}
			if (!keys_can_start_with(table, key_start))
				continue;
			lock_table(table.relid);
			if (!relinfo_readable(table.relid, role))
				continue;
			RelInfo *info = relinfo_lookup(table.relid);
			bool continuing = table.relid == position.table && position.started;
			KeyBytes after = {position.after_key, position.after_length};
			const KeyBytes *from = continuing ? &after : nullptr;
			/* The position SCAN goes on from is a key's bytes, carried in the cursor up to
			 * kMaxKeyBytes: past a longer key the batch goes on to the next key that fits. */
			bool table_done = false;
			for (;;) {
				MemoryContext old = MemoryContextSwitchTo(results_context);
				StringInfoData bytes;
				initStringInfo(&bytes);
				size_t limit = n < count ? count - n : 1;
				uint32 *ends = static_cast<uint32 *>(palloc(sizeof(uint32) * (limit + 1)));
				int found = scan_primary_keys(info, GetActiveSnapshot(), from, &bytes, ends, int(limit));
				MemoryContextSwitchTo(old);
				if (n + found >= capacity) {
					capacity = (n + found) * 2;
					keys = static_cast<ScannedKey *>(repalloc(keys, sizeof(ScannedKey) * capacity));
				}
				for (int k = 0; k < found; k++, n++)
					keys[n] = {table.prefix, table.length, info->key.shape,
							   KeyBytes{bytes.data + (k == 0 ? 0 : ends[k - 1]), ends[k] - (k == 0 ? 0 : ends[k - 1])}};
				if (size_t(found) < limit) {
					table_done = true;
					break;
				}
				from = &keys[n - 1].key;
				if (n >= count && from->len <= ScanPosition::kMaxKeyBytes)
					break;
			}
			if (!table_done) {
				next = scan_position(table.relid, &keys[n - 1].key);
				break;
			}
		}
	}, &error);
	if (!ok)
		return failure(error);
	std::string id;
	for (size_t k = 0; k < n; k++) {
		id.clear();
		append_key_text(keys[k].shape, keys[k].key, id);
		sink.key(std::string_view(keys[k].prefix, keys[k].length), id);
	}
	position = next;
	return LookupResult::ok();
}

ScanCursorKey PgRowReader::scan_cursor_key(const Session &session)
{
	ScanCursorKey key;
	memcpy(key.secret, scan_cursor_secret(), sizeof(key.secret));
	key.role = session.role ? session.role->id : InvalidOid;
	key.database = MyDatabaseId;
	return key;
}

uint64_t PgRowReader::count_keys(const Session &session)
{
	uint64 keys = 0;
	Oid role = Oid(session.role->id);
	PgError error;
	in_transaction([&]() noexcept {
		int max = store_max_tables();
		TableCounters *tables = static_cast<TableCounters *>(palloc(sizeof(TableCounters) * max));
		int n = store_table_counters(tables, max);
		for (int i = 0; i < n; i++)
			if (tables[i].dbid == MyDatabaseId && relinfo_readable(tables[i].relid, role))
				keys += tables[i].entries;
	}, &error);
	return keys;
}

} // namespace local_cache::resp

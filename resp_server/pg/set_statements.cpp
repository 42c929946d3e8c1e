/*
 * set_statements.cpp — the statements of SET and MSET (set_statements.h): the JSON object's
 * members read in the worker, the row written by the UPDATE the upsert amounts to where nothing
 * can tell them apart (the members bound as parameters of their columns' types, made as
 * json_populate_record makes them) or by INSERT ... ON CONFLICT, and an MSET's rows in one
 * statement. writes.cpp runs them in the command's transaction.
 */
#include "extension/pg.h"

#include "resp_server/pg/set_statements.h"
#include "resp_server/commands/json_object.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/write_runner.h"
#include "resp_server/pg/write_target.h"

#include "extension/boundary.h"
#include "extension/invalidation.h"

extern "C" {
#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonfuncs.h"
#include "utils/lsyscache.h"
}

#include <algorithm>

namespace local_cache::resp {

namespace {

/*
 * The members of a SET's JSON value, read in the worker rather than by a statement (json_typeof,
 * json_object_keys): a statement's executor start and end less per write. A plain object
 * (read_plain_object) in one pass; any other text by PostgreSQL's own JSON parser, with the same
 * syntax errors as $1::json. Each top-level member's name and, when it is a string or a number,
 * its text (de-escaped, as json_populate_record reads it).
 */
struct ObjectMembers {
	JsonLexContext *lex;
	bool object; /* the value is an object */
	int count;
	int capacity;
	const char **names;
	const char **scalars; /* nullptr: an object, an array, null, true or false */
	bool *nulls;          /* the member is null */
};

void grow_members(ObjectMembers *members)
{
	members->capacity *= 2;
	members->names = static_cast<const char **>(repalloc(members->names, sizeof(char *) * members->capacity));
	members->scalars = static_cast<const char **>(repalloc(members->scalars, sizeof(char *) * members->capacity));
	members->nulls = static_cast<bool *>(repalloc(members->nulls, sizeof(bool) * members->capacity));
}

void member_object_start(void *state)
{
	ObjectMembers *members = static_cast<ObjectMembers *>(state);
	if (members->lex->lex_level == 0)
		members->object = true;
}

void member_field_start(void *state, char *name, bool)
{
	ObjectMembers *members = static_cast<ObjectMembers *>(state);
	if (members->lex->lex_level != 1)
		return;
	if (members->count == members->capacity)
		grow_members(members);
	members->names[members->count] = name;
	members->scalars[members->count] = nullptr;
	members->nulls[members->count] = false;
	members->count++;
}

void member_scalar(void *state, char *token, JsonTokenType type)
{
	ObjectMembers *members = static_cast<ObjectMembers *>(state);
	if (members->lex->lex_level != 1 || members->count == 0)
		return;
	if (type == JSON_TOKEN_STRING || type == JSON_TOKEN_NUMBER)
		members->scalars[members->count - 1] = token;
	members->nulls[members->count - 1] = type == JSON_TOKEN_NULL;
}

ObjectMembers object_members(std::string_view value)
{
	ObjectMembers members{};
	members.capacity = 8;
	members.names = static_cast<const char **>(palloc(sizeof(char *) * members.capacity));
	members.scalars = static_cast<const char **>(palloc(sizeof(char *) * members.capacity));
	members.nulls = static_cast<bool *>(palloc(sizeof(bool) * members.capacity));
	/* Most objects need no more than a glance (read_plain_object); the others, PostgreSQL's
	 * parser and its errors. */
	JsonMember plain[16];
	size_t count;
	if (read_plain_object(value, plain, lengthof(plain), &count)) {
		members.object = true;
		for (size_t i = 0; i < count; i++) {
			if (members.count == members.capacity)
				grow_members(&members);
			members.names[members.count] = pnstrdup(plain[i].name.data(), plain[i].name.size());
			members.scalars[members.count] =
				plain[i].has_scalar ? pnstrdup(plain[i].scalar.data(), plain[i].scalar.size()) : nullptr;
			members.nulls[members.count] = plain[i].is_null;
			members.count++;
		}
		return members;
	}
	members.lex = makeJsonLexContextCstringLen(pnstrdup(value.data(), value.size()), int(value.size()),
											   GetDatabaseEncoding(), true);
	JsonSemAction actions{};
	actions.semstate = &members;
	actions.object_start = pg_entry<member_object_start>;
	actions.object_field_start = pg_entry<member_field_start>;
	actions.scalar = pg_entry<member_scalar>;
	pg_parse_json_or_ereport(members.lex, &actions);
	return members;
}

/* Whether a key column's member is the key's own canonical text (one-column keys of types whose
 * input reads no setting): then it is the key, and no statement need compare them. */
bool spells_the_key(const Target &target, const RowKey &key, const char *scalar)
{
	if (scalar == nullptr || target.nkey != 1)
		return false;
	switch (target.info->key.types[0]) {
	case INT2OID: case INT4OID: case INT8OID: case TEXTOID: case VARCHAROID: case UUIDOID:
		return key.id.size() == strlen(scalar) && memcmp(key.id.data(), scalar, key.id.size()) == 0;
	default:
		return false;
	}
}

/* ON CONFLICT's "UPDATE SET (every other column) = ROW(EXCLUDED's)": the row becomes exactly the
 * proposed one, absent columns at their DEFAULT. */
void append_update_to_proposed(StringInfo sql, const Columns &columns)
{
	appendStringInfoString(sql, "UPDATE SET (");
	for (int i = 0; i < columns.count; i++)
		appendStringInfo(sql, "%s%s", i > 0 ? ", " : "", quote_identifier(columns.names[i]));
	appendStringInfoString(sql, ") = ROW(");
	for (int i = 0; i < columns.count; i++)
		appendStringInfo(sql, "%sEXCLUDED.%s", i > 0 ? ", " : "", quote_identifier(columns.names[i]));
	appendStringInfoString(sql, ")");
}

/* "c = <source>.c, d = DEFAULT, ...": an existing row made exactly the object, each present column
 * from the row `source`, or with `source` nullptr from the parameters $first_param, $first_param
 * + 1, ... in column order; absent columns at their DEFAULT. */
void append_assignments(StringInfo sql, const Columns &columns, const bool *present, const char *source,
						int first_param)
{
	for (int c = 0; c < columns.count; c++) {
		const char *name = quote_identifier(columns.names[c]);
		appendStringInfo(sql, "%s%s = ", c > 0 ? ", " : "", name);
		if (!present[c])
			appendStringInfoString(sql, "DEFAULT");
		else if (source != nullptr)
			appendStringInfo(sql, "%s.%s", source, name);
		else
			appendStringInfo(sql, "$%d", first_param++);
	}
}

/* The assignments from json_populate_record's row r; a table of key columns only sets its key. */
void append_assignments_from_object(StringInfo sql, const Target &target, const Columns &columns, const bool *present)
{
	append_assignments(sql, columns, present, "r", 0);
	if (columns.count == 0)
		appendStringInfo(sql, "%s = t.%s", target.key_columns[0], target.key_columns[0]);
}

/*
 * Whether a SET of rows that exist may run as the UPDATE it amounts to, before the INSERT ... ON
 * CONFLICT that a missing row needs: the upsert first checks its proposed row (each unique index,
 * then a lock of the conflicting row with a WAL record of its own), about 8% of a one-row SET's
 * CPU. Only where nothing can tell the two apart: a table whose writes run only
 * PostgreSQL's own code (no trigger of the user's that would fire for the INSERT, no rule:
 * runs_only_builtin_code, kept in the prefix map: a RESP worker learns it routing the write, a
 * write worker here), written by a role that may INSERT into it, as the upsert requires; and no
 * column GENERATED ALWAYS AS IDENTITY, which the upsert's update may not set (an error) where the
 * UPDATE sets it to its DEFAULT.
 */
bool update_is_the_upsert(const Target &target, const Columns &columns, std::string_view prefix)
{
	PrefixEntry *entry = prefixes_valid ? prefix_entry(prefix) : nullptr;
	if (entry == nullptr || entry->relid != target.info->relid || columns.identity_always)
		return false;
	if (entry->builtin_code_only < 0) /* write_target locked the table: the answer is known */
		entry->builtin_code_only = runs_only_builtin_code(entry->relid);
	return entry->builtin_code_only == 1 &&
		pg_class_aclcheck(target.info->relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK;
}

/*
 * Binding a SET's members as parameters of their columns' types instead of reading the object
 * with json_populate_record in the statement: the plan is then the SQL UPDATE's own (the key's
 * index scan under ModifyTable; for MSET, the join with unnest that a many-row UPDATE has): the
 * join with json_populate_record's function scan, its row mark and the object's second parse were
 * a sixth of a one-row SET. Each value is made as json_populate_record makes it: the type's input
 * function with the column's typmod, from the string de-escaped or the number as written; null is
 * NULL. Made in column order, row after row, so that a value a column refuses fails as it fails
 * there. What only json_populate_record reads keeps it: a member that is true, false, an object
 * or an array, a column of a domain, array, composite or json type (or of one without an array
 * type, which MSET's arrays need): Columns::bindable.
 */
bool bindable_member(const ObjectMembers &members, int member)
{
	return members.scalars[member] != nullptr || members.nulls[member];
}

/* The member's value for the column (bindable_member). */
Datum member_value(const ObjectMembers &members, int member, const Columns &columns, int column, bool *isnull)
{
	*isnull = members.nulls[member];
	if (*isnull)
		return (Datum) 0;
	return columns.value(column, const_cast<char *>(members.scalars[member]));
}

/* set_one's UPDATE with the object's members bound: "UPDATE t SET c = $2, d = DEFAULT WHERE key =
 * $1". False, having bound nothing, when a column or member is not bindable. */
struct BoundUpdate {
	StringInfoData sql;
	int nparams;
	Oid *types;
	Datum *values;
	char *nulls;
};

bool bind_members(const Target &target, const Columns &columns, const ObjectMembers &members, const bool *present,
				  const int *member_of, BoundUpdate *out)
{
	for (int c = 0; c < columns.count; c++)
		if (present[c] && (!bindable_member(members, member_of[c]) || !columns.bindable[c]))
			return false;
	int most = target.nkey + columns.count;
	out->types = static_cast<Oid *>(palloc(sizeof(Oid) * most));
	out->values = static_cast<Datum *>(palloc(sizeof(Datum) * most));
	out->nulls = static_cast<char *>(palloc(most + 1));
	memset(out->nulls, ' ', most);
	out->nulls[most] = '\0';
	target.add_parameters(out->types, out->values, 0);
	out->nparams = target.nkey;
	for (int c = 0; c < columns.count; c++) {
		if (!present[c])
			continue;
		bool isnull;
		out->types[out->nparams] = columns.types[c];
		out->values[out->nparams] = member_value(members, member_of[c], columns, c, &isnull);
		out->nulls[out->nparams] = isnull ? 'n' : ' ';
		out->nparams++;
	}
	initStringInfo(&out->sql);
	appendStringInfo(&out->sql, "UPDATE %s t SET ", target.table);
	append_assignments(&out->sql, columns, present, nullptr, target.nkey + 1);
	appendStringInfo(&out->sql, " WHERE %s", target.condition("t", 1));
	return true;
}

} // namespace

/* One SET: the row `key` becomes the JSON object `value`. Returns whether it was written. */
bool set_one(const RowKey &key, std::string_view value, const SetOptions &options, char **old_value)
{
	verify_text(value);
	Target target = write_target(key);
	const Columns &columns = target.other_columns;
	/* $1 the JSON, $2 ... the key's columns. */
	Oid types[1 + MAX_KEY_COLUMNS] = {TEXTOID};
	Datum values[1 + MAX_KEY_COLUMNS] = {PointerGetDatum(cstring_to_text_with_len(value.data(), int(value.size())))};
	target.add_parameters(types, values, 1);
	int nparams = 1 + target.nkey;

	/* An object, whose members are columns; key columns, if there, must be the key's. */
	ObjectMembers members = object_members(value);
	if (!members.object)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("the value must be a JSON object")));
	bool *present = static_cast<bool *>(palloc0(sizeof(bool) * (columns.count + 1)));
	int *member_of = static_cast<int *>(palloc(sizeof(int) * (columns.count + 1)));
	bool named_twice = false;
	StringInfoData differs;
	initStringInfo(&differs);
	for (int i = 0; i < members.count; i++) {
		const char *name = members.names[i];
		if (int c = key_column_index(target, name); c >= 0) {
			if (!spells_the_key(target, key, members.scalars[i]))
				appendStringInfo(&differs, "%s(r.%s IS NULL OR NOT r.%s OPERATOR(pg_catalog.=) $%d)",
								 differs.len > 0 ? " OR " : "", target.key_columns[c], target.key_columns[c], 2 + c);
			continue;
		}
		int column = column_index(target, name);
		if (column < 0)
			no_such_column(target, name);
		named_twice |= present[column];
		present[column] = true;
		member_of[column] = i;
	}
	StringInfoData sql;
	initStringInfo(&sql);
	if (differs.len > 0) {
		appendStringInfo(&sql, "SELECT %s FROM pg_catalog.json_populate_record(NULL::%s, $1::pg_catalog.json) r", differs.data,
						 target.table);
		if (run(target.info->relid, sql.data, nparams, types, values) == 1 &&
			strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the object's key column %s differs from the key", target.columns())));
	}

	if (options.get_old) {
		resetStringInfo(&sql);
		appendStringInfo(&sql, "SELECT pg_catalog.row_to_json(t)::pg_catalog.text FROM %s t WHERE %s FOR UPDATE", target.table,
						 target.condition("t", 2));
		*old_value = run(target.info->relid, sql.data, nparams, types, values) == 1 ? result_text(0) : nullptr;
	}

	resetStringInfo(&sql);
	bool update_first = options.condition == SetOptions::Condition::Always && columns.count > 0 &&
		update_is_the_upsert(target, columns, key.prefix);
	if (options.condition == SetOptions::Condition::IfPresent || update_first) {
		/* XX, or a SET's UPDATE first: an existing row; absent columns go back to their DEFAULT. */
		uint64 updated;
		if (BoundUpdate bound; update_first && !named_twice && bind_members(target, columns, members, present, member_of, &bound)) {
			updated = run(target.info->relid, bound.sql.data, bound.nparams, bound.types, bound.values, bound.nulls);
		} else {
			appendStringInfo(&sql, "UPDATE %s t SET ", target.table);
			append_assignments_from_object(&sql, target, columns, present);
			appendStringInfo(&sql, " FROM pg_catalog.json_populate_record(NULL::%s, $1::pg_catalog.json) r WHERE %s",
							 target.table, target.condition("t", 2));
			updated = run(target.info->relid, sql.data, nparams, types, values);
		}
		own_row(target, updated);
		if (updated == 1 || !update_first)
			return updated == 1;
		resetStringInfo(&sql);
	}
	/* An INSERT of the present columns (the others take their DEFAULT), which on a conflict
	 * becomes an UPDATE to exactly that new row — unless NX. */
	appendStringInfo(&sql, "INSERT INTO %s AS t (%s", target.table, target.columns());
	for (int i = 0; i < columns.count; i++)
		if (present[i])
			appendStringInfo(&sql, ", %s", quote_identifier(columns.names[i]));
	appendStringInfo(&sql, ") SELECT %s", target.parameters(2));
	for (int i = 0; i < columns.count; i++)
		if (present[i])
			appendStringInfo(&sql, ", r.%s", quote_identifier(columns.names[i]));
	appendStringInfo(&sql, " FROM pg_catalog.json_populate_record(NULL::%s, $1::pg_catalog.json) r ON CONFLICT (%s) DO ", target.table,
					 target.columns());
	if (options.condition == SetOptions::Condition::IfAbsent || columns.count == 0) {
		appendStringInfoString(&sql, "NOTHING");
	} else {
		append_update_to_proposed(&sql, columns);
	}
	uint64 written = run(target.info->relid, sql.data, nparams, types, values);
	own_row(target, written);
	return written == 1 || options.condition == SetOptions::Condition::Always;
}

namespace {

/* Each of the keys' rows, all written by the command, is its own (own_row). */
void own_rows(const Target &target, const RowKey *keys, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		KeyBytes bytes;
		if (key_of_id(target.info, keys[i].id, &bytes))
			invalidation_own_write(target.info->relid, bytes);
	}
}

/* MSET's rows read by json_populate_record: the keys k (parameters $2 ...) beside their objects
 * ($1) as rows r. unnest($2, $1) is ROWS FROM (unnest($2), unnest($1)) only while unqualified. */
const char *object_rows(const Target &target)
{
	StringInfoData rows;
	initStringInfo(&rows);
	appendStringInfoString(&rows, "ROWS FROM (");
	for (int c = 0; c < target.nkey; c++)
		appendStringInfo(&rows, "pg_catalog.unnest($%d), ", 2 + c);
	appendStringInfo(&rows, "pg_catalog.unnest($1)) AS k(%s, v), pg_catalog.json_populate_record(NULL::%s, "
						   "k.v::pg_catalog.json) r",
					 target.columns(), target.table);
	return rows.data;
}

/* "t.a OPERATOR(pg_catalog.=) k.a AND ...": the row of the key k names. */
const char *key_join(const Target &target)
{
	StringInfoData join;
	initStringInfo(&join);
	for (int c = 0; c < target.nkey; c++)
		appendStringInfo(&join, "%st.%s OPERATOR(pg_catalog.=) k.%s", c > 0 ? " AND " : "", target.key_columns[c],
						 target.key_columns[c]);
	return join.data;
}

/*
 * MSET's UPDATE with the rows' members bound (Columns::bindable, bindable_member): one array per
 * column, unnested beside the key arrays, "UPDATE t SET c = k.c, d = DEFAULT FROM ROWS FROM
 * (unnest($1), unnest($2)) AS k(key, c) WHERE t.key = k.key", as a many-row SQL UPDATE is written.
 * The number of rows it updated.
 */
uint64 update_bound_rows(const Target &target, const Columns &columns, const bool *present,
						 const ObjectMembers *row_members, const int *member_of, size_t count, const Oid *key_types,
						 const Datum *key_arrays)
{
	Datum *elements = static_cast<Datum *>(palloc(sizeof(Datum) * count * columns.count));
	bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * count * columns.count));
	for (size_t i = 0; i < count; i++)
		for (int c = 0; c < columns.count; c++)
			if (present[c])
				elements[c * count + i] = member_value(row_members[i], member_of[i * columns.count + c], columns, c,
													   &nulls[c * count + i]);
	Oid *types = static_cast<Oid *>(palloc(sizeof(Oid) * (target.nkey + columns.count)));
	Datum *params = static_cast<Datum *>(palloc(sizeof(Datum) * (target.nkey + columns.count)));
	int nparams = target.nkey;
	memcpy(types, key_types, sizeof(Oid) * target.nkey);
	memcpy(params, key_arrays, sizeof(Datum) * target.nkey);
	StringInfoData sql, assignments, unnests, names;
	initStringInfo(&assignments);
	initStringInfo(&unnests);
	initStringInfo(&names);
	for (int c = 0; c < target.nkey; c++)
		appendStringInfo(&unnests, "%spg_catalog.unnest($%d)", c > 0 ? ", " : "", c + 1);
	append_assignments(&assignments, columns, present, "k", 0);
	for (int c = 0; c < columns.count; c++) {
		if (!present[c])
			continue;
		int16 typlen;
		bool typbyval;
		char typalign;
		get_typlenbyvalalign(columns.types[c], &typlen, &typbyval, &typalign);
		int dims[1] = {int(count)};
		int lbs[1] = {1};
		types[nparams] = get_array_type(columns.types[c]);
		params[nparams] = PointerGetDatum(construct_md_array(&elements[c * count], &nulls[c * count], 1, dims, lbs,
															 columns.types[c], typlen, typbyval, typalign));
		nparams++;
		appendStringInfo(&unnests, ", pg_catalog.unnest($%d)", nparams);
		appendStringInfo(&names, ", %s", quote_identifier(columns.names[c]));
	}
	/* unnest($1, $2) is ROWS FROM (unnest($1), unnest($2)) only while unqualified. */
	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s t SET %s FROM ROWS FROM (%s) AS k(%s%s) WHERE %s", target.table, assignments.data,
					 unnests.data, target.columns(), names.data, key_join(target));
	return run(target.info->relid, sql.data, nparams, types, params);
}

} // namespace

/*
 * MSET of rows of one table whose values name the same columns: one INSERT ... ON CONFLICT of them
 * all, as a 16-row SQL statement writes them, instead of a statement per row (an executor start,
 * the statement triggers and a plan lookup each). The rows are written exactly as set_one writes
 * each: absent columns take their DEFAULT. False, having written nothing, for what needs the
 * per-row statements: several tables, different columns, a key member to compare with the key, a
 * key named twice (the later value wins), an id that spells no key, a value that is not an object,
 * a table with no other column. All rows written: each is the command's own (own_row).
 */
bool set_in_one_statement(const RowKey *keys, const std::string_view *values, size_t count)
{
	Target target = write_target(keys[0]);
	const Columns &columns = target.other_columns;
	if (columns.count == 0)
		return false;
	bool *present = nullptr;
	Datum *texts = static_cast<Datum *>(palloc(sizeof(Datum) * count));
	Oid *relids = static_cast<Oid *>(palloc(sizeof(Oid) * count));
	/* For update_bound_rows: each row's members, and which member is each column's. */
	ObjectMembers *row_members = static_cast<ObjectMembers *>(palloc(sizeof(ObjectMembers) * count));
	int *member_of = static_cast<int *>(palloc(sizeof(int) * count * columns.count));
	bool bindable = true;
	/* A key named twice: its ids side by side once sorted (an MSET may name thousands). */
	size_t *by_id = static_cast<size_t *>(palloc(sizeof(size_t) * count));
	for (size_t i = 0; i < count; i++)
		by_id[i] = i;
	std::sort(by_id, by_id + count, [keys](size_t a, size_t b) { return keys[a].id < keys[b].id; });
	for (size_t i = 1; i < count; i++)
		if (keys[by_id[i]].id == keys[by_id[i - 1]].id)
			return false;
	for (size_t i = 0; i < count; i++) {
		if (keys[i].prefix != keys[0].prefix)
			return false;
		verify_key(keys[i]);
		verify_text(values[i]);
		ObjectMembers members = object_members(values[i]);
		if (!members.object)
			return false;
		bool *row_present = static_cast<bool *>(palloc0(sizeof(bool) * columns.count));
		for (int m = 0; m < members.count; m++) {
			if (key_column_index(target, members.names[m]) >= 0) {
				if (!spells_the_key(target, keys[i], members.scalars[m]))
					return false;
				continue;
			}
			int column = column_index(target, members.names[m]);
			if (column < 0)
				return false;
			bindable &= !row_present[column] && bindable_member(members, m);
			row_present[column] = true;
			member_of[i * columns.count + column] = m;
		}
		row_members[i] = members;
		if (present == nullptr)
			present = row_present;
		else if (memcmp(present, row_present, sizeof(bool) * columns.count) != 0)
			return false;
		texts[i] = PointerGetDatum(cstring_to_text_with_len(values[i].data(), int(values[i].size())));
		relids[i] = target.info->relid;
	}
	/* $1 the values, $2 ... one array per key column. */
	Oid types[1 + MAX_KEY_COLUMNS] = {TEXTARRAYOID};
	Datum params[1 + MAX_KEY_COLUMNS] = {
		PointerGetDatum(construct_array(texts, int(count), TEXTOID, -1, false, TYPALIGN_INT))};
	if (!key_arrays(target, keys, relids, count, &types[1], &params[1]) ||
		size_t(ArrayGetNItems(1, ARR_DIMS(DatumGetArrayTypeP(params[1])))) != count)
		return false;
	StringInfoData sql;
	initStringInfo(&sql);
	if (update_is_the_upsert(target, columns, keys[0].prefix)) {
		/* When every row exists, the UPDATE was the whole write; else the upsert writes them all
		 * (those updated again, to the same values). */
		uint64 updated;
		for (int c = 0; c < columns.count; c++)
			bindable &= !present[c] || columns.bindable[c];
		if (bindable) {
			updated = update_bound_rows(target, columns, present, row_members, member_of, count, &types[1], &params[1]);
		} else {
			appendStringInfo(&sql, "UPDATE %s t SET ", target.table);
			append_assignments_from_object(&sql, target, columns, present);
			appendStringInfo(&sql, " FROM %s WHERE %s", object_rows(target), key_join(target));
			updated = run(target.info->relid, sql.data, 1 + target.nkey, types, params);
		}
		if (updated == count) {
			own_rows(target, keys, count);
			return true;
		}
		resetStringInfo(&sql);
	}
	appendStringInfo(&sql, "INSERT INTO %s AS t (%s", target.table, target.columns());
	for (int i = 0; i < columns.count; i++)
		if (present[i])
			appendStringInfo(&sql, ", %s", quote_identifier(columns.names[i]));
	appendStringInfo(&sql, ") SELECT %s", target.columns("k."));
	for (int i = 0; i < columns.count; i++)
		if (present[i])
			appendStringInfo(&sql, ", r.%s", quote_identifier(columns.names[i]));
	appendStringInfo(&sql, " FROM %s ON CONFLICT (%s) DO ", object_rows(target), target.columns());
	append_update_to_proposed(&sql, columns);
	if (run(target.info->relid, sql.data, 1 + target.nkey, types, params) == count)
		own_rows(target, keys, count);
	return true;
}

} // namespace local_cache::resp

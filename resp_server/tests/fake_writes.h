/*
 * fake_writes.h — the command tests' RowWriter and Batches over FakeTables: writes on the
 * in-memory tables (a value is stored as the row's JSON as given), errors answered as the
 * PostgreSQL side answers them (the message and its SQLSTATE, ReadOnly on a standby), SET's
 * commits shared as the worker shares them, and EXEC's batch as a copy of the tables to roll back
 * to.
 */
#pragma once

#include "resp_server/tests/fake_tables.h"

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <set>
#include <vector>

namespace resp_test {

class FakeRowWriter final : public RowWriter {
public:
	explicit FakeRowWriter(FakeTables &db) : db_(db) {}

	bool replica = false; /* writes answer ReadOnly */
	std::set<std::string, std::less<>> builtin_code_prefixes; /* runs_only_builtin_code */

	bool runs_only_builtin_code(std::string_view prefix) override
	{
		return builtin_code_prefixes.count(prefix) > 0;
	}

	/* Group commit, as the worker's (RowWriter::share_commit): the rows of writes that may share
	 * a commit wait for it, counted in `commits` when it is made; fail_commits makes it fail, and
	 * on_commit runs as it is made. */
	int commits = 0;
	uint64_t joined = 0;
	bool fail_commits = false;
	std::function<void()> on_commit;
	void share_commit(bool may_share) override
	{
		may_share_ = may_share;
		if (!may_share)
			(void) commit();
	}
	uint64_t shared_writes() override { return joined; }
	bool commit_writes() override
	{
		bool committed = commit() && !failed_;
		failed_ = false;
		return committed;
	}

	LookupResult set_rows(const Session &session, const RowKey *keys, const std::string_view *values, size_t count,
						  const SetOptions &options, SetOutcome &outcome) override
	{
		db_.note_role(session);
		outcome = SetOutcome();
		for (size_t i = 0; i < count; i++) {
			if (LookupResult refused = db_.check_write(keys[i], replica); refused.status != LookupResult::Status::Ok)
				return refused;
		}
		bool all_absent = true;
		for (size_t i = 0; i < count; i++)
			all_absent = all_absent && db_.find(keys[i]) == nullptr;
		if (count > 1 && options.condition == SetOptions::Condition::IfAbsent && !all_absent)
			return LookupResult::ok();
		outcome.written = true;
		for (size_t i = 0; i < count; i++) {
			const FakeTables::Row *old = db_.find(keys[i]);
			if (options.get_old && old != nullptr)
				outcome.old_value = old->json;
			if ((options.condition == SetOptions::Condition::IfAbsent && old != nullptr) ||
				(options.condition == SetOptions::Condition::IfPresent && old == nullptr)) {
				outcome.written = false;
				continue;
			}
			row_of(keys[i]) = FakeTables::Row{std::string(values[i]), {}};
			db_.writes++;
		}
		wrote();
		return LookupResult::ok();
	}

	LookupResult delete_rows(const Session &session, const RowKey *keys, size_t count, int64_t *deleted) override
	{
		db_.note_role(session);
		if (replica)
			return LookupResult::read_only();
		*deleted = 0;
		for (size_t i = 0; i < count; i++) {
			auto table = db_.tables.find(keys[i].prefix);
			if (table != db_.tables.end())
				*deleted += int64_t(table->second.erase(FakeTables::split(keys[i]).id));
		}
		db_.writes++;
		return LookupResult::ok();
	}

	LookupResult set_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							 const std::string_view *values, size_t count, int64_t *added) override
	{
		db_.note_role(session);
		if (LookupResult refused = db_.check_write(key, replica); refused.status != LookupResult::Status::Ok)
			return refused;
		auto &rows = db_.tables[std::string(key.prefix)];
		bool inserted = rows.find(FakeTables::split(key).id) == rows.end();
		FakeTables::Row &row = row_of(key);
		for (size_t i = 0; i < count; i++)
			set_column(row, columns[i], std::string(values[i]));
		*added = inserted ? int64_t(count) : 0;
		db_.writes++;
		return LookupResult::ok();
	}

	LookupResult clear_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							   size_t count, int64_t *removed) override
	{
		db_.note_role(session);
		if (LookupResult refused = db_.check_write(key, replica); refused.status != LookupResult::Status::Ok)
			return refused;
		*removed = 0;
		auto table = db_.tables.find(key.prefix);
		if (table == db_.tables.end() || table->second.find(FakeTables::split(key).id) == table->second.end())
			return LookupResult::ok();
		for (auto &column : table->second[FakeTables::split(key).id].columns) {
			for (size_t i = 0; i < count; i++) {
				if (column.first == columns[i] && column.second) {
					column.second.reset();
					++*removed;
				}
			}
		}
		db_.writes++;
		return LookupResult::ok();
	}

	LookupResult increment_column(const Session &session, const RowKey &key, std::string_view column,
								  std::string_view increment, std::string *result) override
	{
		db_.note_role(session);
		if (LookupResult refused = db_.check_write(key, replica); refused.status != LookupResult::Status::Ok)
			return refused;
		FakeTables::Row &row = row_of(key);
		double value = 0;
		for (const auto &c : row.columns)
			if (c.first == column && c.second)
				value = std::stod(*c.second);
		value += std::stod(std::string(increment));
		char text[64];
		snprintf(text, sizeof(text), "%.17g", value);
		set_column(row, column, text);
		*result = text;
		db_.writes++;
		return LookupResult::ok();
	}

private:
	FakeTables::Row &row_of(const RowKey &key)
	{
		return db_.tables[std::string(key.prefix)][FakeTables::split(key).id];
	}

	static void set_column(FakeTables::Row &row, std::string_view column, std::string value)
	{
		for (auto &c : row.columns) {
			if (c.first == column) {
				c.second = std::move(value);
				return;
			}
		}
		row.columns.emplace_back(std::string(column), std::move(value));
	}

	/* SET's rows are written at once; with the commit shared they count when it is made. */
	void wrote()
	{
		if (may_share_) {
			awaiting_commit_ = true;
			joined++;
		} else
			commits++;
	}
	bool commit()
	{
		if (!awaiting_commit_)
			return true;
		awaiting_commit_ = false;
		commits++;
		if (on_commit)
			on_commit();
		failed_ = failed_ || fail_commits;
		return !fail_commits;
	}

	FakeTables &db_;
	bool may_share_ = false;
	bool awaiting_commit_ = false;
	bool failed_ = false; /* since commit_writes() last said */
};

class FakeBatches final : public Batches {
public:
	explicit FakeBatches(FakeTables &db) : db_(db) {}

	int begun = 0;
	int rollbacks = 0;
	bool in_batch = false;
	std::vector<WatchCheck> watch_checks; /* what EXEC asked, in order */
	/* Another client's commit while the batch runs, seen by the BeforeCommit check. */
	std::function<void(FakeTables::Tables &committed)> commit_during_batch;

	LookupResult row_version(const Session &session, const RowKey &key, std::string *version) override
	{
		db_.note_role(session);
		*version = FakeTables::version_in(db_.tables, key);
		return LookupResult::ok();
	}

	/* The copy first: a copy that fails (an allocation test) leaves no batch begun. */
	void begin_batch() override
	{
		FakeTables::Tables before = db_.tables;
		tables_before_batch_.swap(before);
		writes_before_batch_ = db_.writes;
		in_batch = true;
		begun++;
	}
	LookupResult end_batch(bool commit) override
	{
		in_batch = false;
		if (!commit) {
			db_.tables = tables_before_batch_;
			db_.writes = writes_before_batch_;
			rollbacks++;
		}
		return LookupResult::ok();
	}
	/* BeforeCommit reads the rows as committed, the batch's own writes aside: as they were when
	 * the batch began, with what commit_during_batch (another client) changes meanwhile. */
	LookupResult check_versions(const Session &session, const RowKey *keys, const std::string *versions,
								size_t count, WatchCheck when, bool *unchanged) override
	{
		db_.note_role(session);
		watch_checks.push_back(when);
		if (when == WatchCheck::BeforeCommit && commit_during_batch) {
			commit_during_batch(tables_before_batch_);
			commit_during_batch = nullptr;
		}
		*unchanged = true;
		for (size_t i = 0; i < count; i++)
			*unchanged = *unchanged &&
				FakeTables::version_in(when == WatchCheck::BeforeCommit ? tables_before_batch_ : db_.tables,
									   keys[i]) == versions[i];
		return LookupResult::ok();
	}

private:
	FakeTables &db_;
	int writes_before_batch_ = 0;
	FakeTables::Tables tables_before_batch_;
};

} // namespace resp_test

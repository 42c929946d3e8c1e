/*
 * pg_data_source.h — the RESP commands' data-source interfaces (commands/data_source.h), all
 * implemented on PostgreSQL by one object per worker: rows through the shared lookup/fill path,
 * privileges, counters (pg_data_source.cpp), hits without a transaction (hit_path.cpp), logins
 * (auth/logins.h), and writes and batches through SQL (writes.cpp, session_runtime.h). Every PostgreSQL
 * call inside runs within the error boundary (transaction.h). Used by the RESP workers.
 */
#pragma once

#include "resp_server/auth/logins.h"
#include "resp_server/commands/data_source.h"

#include <cstdint>

namespace local_cache::resp {

class PgDataSource final : public RowReader,
						   public CacheHits,
						   public RowWriter,
						   public Batches,
						   public Logins,
						   public ServerInfo {
public:
	explicit PgDataSource(int worker_number);

	LookupResult get_rows(const Session &session, const RowKey *keys, size_t count,
						  ValueSink &sink) override;
	bool reply_hits(const Session &session, const std::string_view *keys, size_t count, ReplyWriter &reply) override;
	LookupResult get_columns(const Session &session, const RowKey &key,
							 const std::string_view *columns, size_t count, ValueSink &sink) override;
	LookupResult get_all_columns(const Session &session, const RowKey &key, FieldSink &sink) override;
	AuthResult authenticate(const Session &session, std::optional<std::string_view> user,
							std::string_view password) override;
	std::optional<AuthenticatedRole> default_role(const Session &session) override;
	void session_ended(const Session &session) override;
	LookupResult scan_keys(const Session &session, ScanPosition &position, size_t count,
						   std::string_view key_start, KeySink &sink) override;
	ScanCursorKey scan_cursor_key(const Session &session) override;
	LookupResult set_rows(const Session &session, const RowKey *keys, const std::string_view *values, size_t count,
						  const SetOptions &options, SetOutcome &outcome) override;
	LookupResult delete_rows(const Session &session, const RowKey *keys, size_t count, int64_t *deleted) override;
	LookupResult set_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							 const std::string_view *values, size_t count, int64_t *added) override;
	LookupResult clear_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							   size_t count, int64_t *removed) override;
	LookupResult increment_column(const Session &session, const RowKey &key, std::string_view column,
								  std::string_view increment, std::string *result) override;
	LookupResult row_version(const Session &session, const RowKey &key, std::string *version) override;
	void begin_batch() override;
	LookupResult end_batch(bool commit) override;
	LookupResult check_versions(const Session &session, const RowKey *keys, const std::string *versions,
								size_t count, WatchCheck when, bool *unchanged) override;
	uint64_t count_keys(const Session &session) override;
	void uncaptured_reads(std::vector<std::string> &prefixes, bool *every) override;
	void forget_uncaptured_reads() override;
	bool sees_activity_of(const Session &session, uint64_t role) override;
	void fill_info(InfoStats &stats) override;

	/* Settings changed (SIGHUP): read pg_hba.conf and the registry again. */
	void settings_changed();

private:
	int worker_number_;
	Authenticator auth_;
};

} // namespace local_cache::resp

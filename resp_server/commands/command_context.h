/*
 * command_context.h — what the command handlers share, internal to the command layer
 * (command_table.cpp, the *_commands.cpp files and glob.cpp include it; nothing outside them does): the
 * CommandContext a handler runs with, the per-worker scratch buffers and the collectors that
 * copy what the data sources hand over, the lookup answers the data commands share, small text
 * helpers, and the handlers the command table names. No PostgreSQL header.
 *
 * Handlers read their arguments from the request, ask their group's data-source interface
 * (data_source.h) for data, and write one reply. Data handlers do all their lookups before
 * writing anything, and copy what the interface hands them into per-worker scratch buffers
 * that keep their capacity between requests, so a cache hit costs no allocation once the
 * worker has warmed up.
 */
#pragma once

#include "resp_server/protocol/buffers.h"
#include "resp_server/commands/cluster.h"
#include "resp_server/commands/command_table.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

/* ---- text helpers: ASCII case folding, client text as printf shows it, numbers ---- */

inline char ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
}

inline char ascii_upper(char c)
{
	return (c >= 'a' && c <= 'z') ? char(c - 'a' + 'A') : c;
}

inline bool equals_ignore_case(std::string_view a, std::string_view b)
{
	if (a.size() != b.size())
		return false;
	for (size_t i = 0; i < a.size(); i++) {
		if (ascii_lower(a[i]) != ascii_lower(b[i]))
			return false;
	}
	return true;
}

/* What printf's "%.Ns" shows of a client-supplied argument: at most `max` bytes, up to a NUL.
 * Redis formats its error messages that way; we show the same text. */
inline std::string_view c_string_prefix(std::string_view text, size_t max)
{
	size_t length = std::min(text.size(), max);
	if (const void *nul = memchr(text.data(), '\0', length))
		length = size_t(static_cast<const char *>(nul) - text.data());
	return text.substr(0, length);
}

inline std::string_view c_string(std::string_view text)
{
	return c_string_prefix(text, text.size());
}

template <typename Integer>
void append_number(std::string &out, Integer value)
{
	char digits[24];
	char *end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
	out.append(digits, size_t(end - digits));
}

/* ---- value collection: what a RowReader finds, copied into reusable storage ---- */

/* Values by reply position. The DataSource numbers its answers by the index of the key (or
 * column) it was given; index_to_position_ maps that index to the reply position. */
class ValueCollector final : public ValueSink {
public:
	void begin(size_t positions)
	{
		trim();
		arena_.clear();
		slots_.assign(positions, Slot{0, 0, false});
		index_to_position_.clear();
	}
	/* The next key handed to the RowReader answers reply position `position`. */
	void map_next_index(size_t position) { index_to_position_.push_back(position); }

	void value(size_t index, std::string_view bytes) override
	{
		/* An index the RowReader was never given is ignored rather than trusted. */
		if (index >= index_to_position_.size())
			return;
		slots_[index_to_position_[index]] = Slot{arena_.size(), bytes.size(), true};
		arena_.append(bytes.data(), bytes.size());
	}

	size_t positions() const { return slots_.size(); }
	bool found(size_t position) const { return slots_[position].found; }
	std::string_view get(size_t position) const
	{
		return std::string_view(arena_.data() + slots_[position].offset, slots_[position].length);
	}

private:
	struct Slot {
		size_t offset;
		size_t length;
		bool found;
	};

	/* Give back the memory of an unusually large reply instead of keeping it for good. */
	void trim()
	{
		release_if_large(arena_);
		release_if_large(slots_);
		release_if_large(index_to_position_);
	}

	std::string arena_;
	std::vector<Slot> slots_;
	std::vector<size_t> index_to_position_;
};

/* A row's columns for HGETALL, in the order the RowReader gives them. */
class FieldCollector final : public FieldSink {
public:
	void begin()
	{
		release_if_large(arena_);
		arena_.clear();
		fields_.clear();
	}
	void field(std::string_view column, std::string_view value) override
	{
		fields_.push_back(Field{arena_.size(), column.size(), value.size()});
		arena_.append(column.data(), column.size());
		arena_.append(value.data(), value.size());
	}
	size_t count() const { return fields_.size(); }
	std::string_view column(size_t i) const
	{
		return std::string_view(arena_.data() + fields_[i].offset, fields_[i].column_length);
	}
	std::string_view value(size_t i) const
	{
		return std::string_view(arena_.data() + fields_[i].offset + fields_[i].column_length,
								fields_[i].value_length);
	}

private:
	struct Field {
		size_t offset;
		size_t column_length;
		size_t value_length;
	};
	std::string arena_;
	std::vector<Field> fields_;
};

/* The keys a SCAN finds, as "<prefix>:<id>", kept when they match the pattern (empty: all). */
class KeyCollector final : public KeySink {
public:
	void begin(std::string_view pattern)
	{
		release_if_large(arena_);
		release_if_large(ends_);
		arena_.clear();
		ends_.clear();
		pattern_ = pattern;
	}

	void key(std::string_view prefix, std::string_view id) override
	{
		size_t start = arena_.size();
		arena_.append(prefix.data(), prefix.size());
		arena_ += ':';
		arena_.append(id.data(), id.size());
		if (!pattern_.empty() &&
			!glob_match(pattern_, std::string_view(arena_).substr(start), false)) {
			arena_.resize(start);
			return;
		}
		ends_.push_back(arena_.size());
	}

	size_t count() const { return ends_.size(); }
	std::string_view get(size_t i) const
	{
		size_t start = i == 0 ? 0 : ends_[i - 1];
		return std::string_view(arena_).substr(start, ends_[i] - start);
	}

private:
	std::string arena_;
	std::vector<size_t> ends_;
	std::string_view pattern_;
};

struct CommandProcessor::Scratch {
	std::vector<RowKey> keys;
	ValueCollector values;
	FieldCollector fields;
	KeyCollector scanned;
	std::string text; /* error messages, INFO, CLIENT INFO */
	std::vector<const CommandSpec *> commands; /* LATENCY HISTOGRAM */
	std::vector<std::string_view> tracked_keys; /* a read's keys, for CLIENT TRACKING */
	std::vector<std::string_view> told_keys;    /* ... those of tables whose writes are not captured */
	std::vector<std::string> uncaptured_prefixes;
};

/* What a handler sees. */
struct CommandContext {
	const Request &request;
	Session &session;
	const DataSources &data; /* each handler group uses its own interface */
	ReplyWriter &reply;
	CommandProcessor::Scratch &scratch;
	const CommandSpec &command; /* the row being run (the subcommand's, for a container) */
	ClientDirectory *clients;   /* nullptr: CLIENT LIST and KILL see only this session */
	CommandMonitor &monitor;    /* the worker's slow log and latencies */
	TrackingTable &tracking;    /* the worker's CLIENT TRACKING table */
	ClusterTopology *cluster = nullptr; /* nullptr: no cluster commands (a write worker) */

	size_t argc() const { return request.argc; }
	std::string_view arg(size_t i) const { return request.argv[i]; }
};

/* ---- dispatch (command_table.cpp), for EXEC ---- */

/* The command or subcommand the request names; nullptr when unknown. */
const CommandSpec *command_for(const Request &request);
/* Runs c.command's handler: one reply, or none when it sets Session::retry_later. A read
 * that succeeded notes its keys for CLIENT TRACKING, unless `note_reads` is false (EXEC notes
 * its reads when it commits). */
void run_command(CommandContext &c, bool note_reads = true);
/* For CLIENT TRACKING: the keys of c.request, a read of c.command that succeeded, at the
 * positions its row gives (as Redis tracks the keys of commands flagged readonly). */
void note_tracked_reads(CommandContext &c);

/* ---- what the data commands share (string_commands.cpp) ---- */

/* Answers a failed lookup; returns false when the command must stop. */
bool lookup_succeeded(CommandContext &c, const LookupResult &result);

/* Looks up the rows of `count` keys into scratch.values, by position; keys that do not parse
 * stay missing without reaching the RowReader. Returns false when the command must stop (its
 * reply is written). */
bool lookup_rows(CommandContext &c, const std::string_view *keys, size_t count);

/* A key a write names; answers the error and returns false when it is not <prefix>:<id>. */
bool parse_write_key(CommandContext &c, std::string_view text, RowKey *key);

/* Replies the value collected at `position`, or nil when none was found. */
void reply_collected_value(CommandContext &c, size_t position);

/* ---- the handlers the command table names, by the file that holds them ---- */

/* string_commands.cpp */
void get_command(CommandContext &c);
void mget_command(CommandContext &c);
void strlen_command(CommandContext &c);
void exists_command(CommandContext &c);
void dbsize_command(CommandContext &c);
void set_command(CommandContext &c);
void setnx_command(CommandContext &c);
void getset_command(CommandContext &c);
void mset_command(CommandContext &c); /* MSET and MSETNX */

/* keyspace_commands.cpp */
void scan_command(CommandContext &c);
void keys_command(CommandContext &c);
void del_command(CommandContext &c); /* DEL and UNLINK */
void type_command(CommandContext &c);
void ttl_command(CommandContext &c); /* TTL and PTTL */
void memory_usage_command(CommandContext &c);

/* hash_commands.cpp */
void hget_command(CommandContext &c);
void hmget_command(CommandContext &c);
void hgetall_command(CommandContext &c);
void hexists_command(CommandContext &c);
void hstrlen_command(CommandContext &c);
void hkeys_command(CommandContext &c);
void hvals_command(CommandContext &c);
void hlen_command(CommandContext &c);
void hset_command(CommandContext &c);    /* HSET and HMSET */
void hdel_command(CommandContext &c);
void hincrby_command(CommandContext &c); /* HINCRBY and HINCRBYFLOAT */

/* transaction_commands.cpp */
void multi_command(CommandContext &c);
/* Whether a MULTI queue holds a write. */
bool queue_writes(const QueuedRequests &multi);
/* EXEC, DISCARD and RESET end the MULTI and forget the WATCHed versions. */
void end_transaction(Session &session);
void exec_command(CommandContext &c);
void discard_command(CommandContext &c);
void watch_command(CommandContext &c);
void unwatch_command(CommandContext &c);

/* connection_commands.cpp */
void ping_command(CommandContext &c);
void echo_command(CommandContext &c);
void hello_command(CommandContext &c);
void auth_command(CommandContext &c);
void select_command(CommandContext &c);
void reset_command(CommandContext &c);
void quit_command(CommandContext &c);
void client_getname_command(CommandContext &c);
void client_id_command(CommandContext &c);
void client_info_command(CommandContext &c);
void client_maint_notifications_command(CommandContext &c);
void client_setinfo_command(CommandContext &c);
void client_setname_command(CommandContext &c);
void client_no_evict_command(CommandContext &c); /* CLIENT NO-EVICT and NO-TOUCH */
void client_list_command(CommandContext &c);
void client_kill_command(CommandContext &c);

/* tracking_commands.cpp */
void client_tracking_command(CommandContext &c);
void client_caching_command(CommandContext &c);
void client_getredir_command(CommandContext &c);
void client_trackinginfo_command(CommandContext &c);
void subscribe_command(CommandContext &c);   /* SUBSCRIBE and PSUBSCRIBE */
void unsubscribe_command(CommandContext &c); /* UNSUBSCRIBE and PUNSUBSCRIBE */
/* RESET and the end of CLIENT TRACKING: tracking off (and the table told). */
void stop_tracking(CommandContext &c);
/* RESET: every channel and pattern unsubscribed, without replies. */
void unsubscribe_all(Session &session);
/* PING in RESP2's subscribed mode: *2 pong <argument or "">. */
bool ping_subscribed(CommandContext &c);
/* CLIENT LIST / INFO's fields from flags= (P, x, t, R, B, or N) to ssub=, for session `s` as
 * `caller` sees it. */
void append_client_flags(std::string &line, const Session &s, const Session &caller, ClientDirectory *clients);

/* server_commands.cpp */
void help_command(CommandContext &c); /* CLIENT HELP, COMMAND HELP, CONFIG HELP */
void command_command(CommandContext &c);
void command_count_command(CommandContext &c);
void command_docs_command(CommandContext &c);
void command_info_command(CommandContext &c);
void command_list_command(CommandContext &c);
void info_command(CommandContext &c);
void config_get_command(CommandContext &c);
void config_set_command(CommandContext &c);
void time_command(CommandContext &c);
void slowlog_get_command(CommandContext &c);
void slowlog_len_command(CommandContext &c);
void slowlog_reset_command(CommandContext &c);
void latency_latest_command(CommandContext &c);
void latency_histogram_command(CommandContext &c);
void latency_reset_command(CommandContext &c);

/* cluster_commands.cpp */
void cluster_myid_command(CommandContext &c);
void cluster_keyslot_command(CommandContext &c);
void cluster_info_command(CommandContext &c);
void cluster_slots_command(CommandContext &c);
void cluster_shards_command(CommandContext &c);
void cluster_nodes_command(CommandContext &c);
void readonly_command(CommandContext &c);
void readwrite_command(CommandContext &c);
void role_command(CommandContext &c);
void wait_command(CommandContext &c);
/* INFO replication's fields: role, the primary or the standbys, WAL offsets. */
void append_replication_info(CommandContext &c, std::string &out);

} // namespace local_cache::resp

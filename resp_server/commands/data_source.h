/*
 * data_source.h — the boundary between the commands and PostgreSQL: the per-connection Session,
 * the parsed row key, what lookups answer, and the small interfaces the command handlers call
 * for everything that needs the database, one per handler group (reading rows, the hit path,
 * writing rows, batches, logins, server information), bundled in DataSources.
 *
 * The PostgreSQL side implements them inside each RESP worker, one class per interface (pg/,
 * and auth/ for the logins); the unit tests implement each with a small fake (tests/). Nothing
 * here includes a PostgreSQL header.
 */
#pragma once

#include "resp_server/commands/client_tracking.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace local_cache::resp {

class ReplyWriter;

/* The role a connection acts as, once authenticated (or the default role, resp_role). */
struct AuthenticatedRole {
	uint64_t id = 0;   /* opaque to this layer; the PostgreSQL side stores the role's Oid */
	std::string name;  /* CLIENT INFO user= */
};

/* MULTI: the requests queued for EXEC, copied (the input they came from is reused). Bounded by
 * what the client sent; the server counts memory() in the connection's buffers. */
struct QueuedRequests {
	bool active = false;  /* between MULTI and EXEC or DISCARD */
	bool refused = false; /* a request was refused while queueing: EXEC answers EXECABORT */
	std::string bytes;            /* every argument, back to back */
	std::vector<size_t> arg_ends; /* where each argument ends in bytes */
	std::vector<size_t> argcs;    /* how many arguments each request has */

	size_t count() const { return argcs.size(); }
	/* What the queue holds, whatever its buffers' capacity: the bound on one MULTI. */
	size_t queued_bytes() const { return bytes.size() + (arg_ends.size() + argcs.size()) * sizeof(size_t); }
	size_t memory() const
	{
		return bytes.capacity() + (arg_ends.capacity() + argcs.capacity()) * sizeof(size_t);
	}
	void clear()
	{
		active = refused = false;
		std::string().swap(bytes);
		std::vector<size_t>().swap(arg_ends);
		std::vector<size_t>().swap(argcs);
	}
};

/* One connection's state. The server creates it at accept and keeps it with the connection. */
struct Session {
	uint64_t id = 0;   /* CLIENT ID, HELLO id: unique per server */
	int protocol = 2;  /* 2 or 3, switched by HELLO */
	std::string name;  /* CLIENT SETNAME; empty = none */
	std::string lib_name;
	std::string lib_version;
	/* Empty: not authenticated; data commands answer NOAUTH until AUTH or HELLO AUTH succeeds.
	 * At accept, or after a TLS handshake (and on RESET), the server sets it to
	 * Logins::default_role(session). */
	std::optional<AuthenticatedRole> role;
	QueuedRequests multi;
	/* WATCH: keys and the row versions seen, until EXEC, DISCARD, UNWATCH or RESET. */
	std::vector<std::pair<std::string, std::string>> watched;
	/* The last SCAN cursor handed to this connection, for clients that cannot give it back
	 * whole (scan_cursor.h, is_truncated_cursor); empty after a walk's end. */
	std::string last_scan_cursor;
	/* CLIENT TRACKING and CACHING (client_tracking.h); the worker's TrackingTable keeps a
	 * copy while tracking is on. */
	TrackingMode tracking;
	/* SUBSCRIBE and PSUBSCRIBE: the channels and patterns, in subscription order. Only
	 * __redis__:invalidate ever carries a message (CLIENT TRACKING's REDIRECT over RESP2); a
	 * RESP2 connection with any subscription runs only the Pub/Sub commands, PING, QUIT, RESET. */
	std::vector<std::string> channels;
	std::vector<std::string> patterns;
	/* READONLY (cluster mode): reads with keys are served on a standby instead of -MOVED;
	 * READWRITE and RESET clear it. */
	bool cluster_readonly = false;
	/* WAIT, while it waits (Session::retry_later): the WAL position it waits for standbys to
	 * replay, and when it gives up (0: never). */
	bool waiting = false;
	uint64_t wait_position = 0;
	int64_t wait_deadline_us = 0;
	/* Set by QUIT (and by the server after a protocol error): write the replies, then close. */
	bool close_after_reply = false;
	/* Set by the server before each request: the request has waited for a locked table as
	 * long as it may (local_cache.resp_lock_timeout), so a busy table now answers -BUSY. */
	bool lock_wait_expired = false;
	/* Set by the command layer: the request found a table locked and wrote no reply; the
	 * server runs it again later. */
	bool retry_later = false;

	/* For CLIENT INFO, filled in by the server. */
	std::string peer_address;  /* "ip:port" */
	std::string local_address; /* "ip:port" */
	int fd = -1;
	int64_t connected_at_ms = 0;    /* when the connection was accepted */
	int64_t last_request_at_ms = 0; /* when the request being executed arrived */
	/* Bytes of replies and pushes not sent yet (the client does not read them), as of the worker's
	 * last second: CLIENT LIST's omem. */
	uint64_t unsent_output = 0;
	/* TLS, filled in by the server: the connection speaks TLS (every connection of a TLS
	 * port); once its handshake is done, whether the client's certificate verified against the
	 * CA, and that certificate's Common Name. */
	bool tls = false;
	bool tls_certificate_verified = false;
	std::string tls_common_name;

	bool authenticated() const { return role.has_value(); }
	/* Redis's CLIENT_PUBSUB: subscribed to a channel or a pattern. */
	bool subscribed() const { return !channels.empty() || !patterns.empty(); }
	/* The client's address without its port ("10.0.0.7" of "10.0.0.7:51234"): what back-offs count by. */
	std::string peer_host() const { return peer_address.substr(0, peer_address.rfind(':')); }
	/* What MULTI, WATCH, subscriptions and tracking prefixes keep, for the connection's share of
	 * local_cache.resp_client_memory. */
	size_t kept_memory() const
	{
		size_t bytes = multi.memory() + watched.capacity() * sizeof(watched[0]) + last_scan_cursor.capacity();
		for (const auto &[key, version] : watched)
			bytes += key.capacity() + version.capacity();
		for (const auto *names : {&channels, &patterns, &tracking.prefixes}) {
			bytes += names->capacity() * sizeof(std::string);
			for (const std::string &name : *names)
				bytes += name.capacity();
		}
		return bytes;
	}
};

/*
 * A data key: "<prefix>:<id>", split at the first ':' (prefixes have none; a text key may),
 * the prefix non-empty. The id is the canonical text of a key of the prefix's table
 * (extension/key_bytes.h), which the RowReader reads. A key that names no row is a missing
 * key (nil), never an error.
 */
struct RowKey {
	std::string_view prefix;
	std::string_view id;
};

std::optional<RowKey> parse_row_key(std::string_view key);

/* Receives the values a RowReader finds, in any order. The bytes are only valid during the
 * call (they may live under a shard lock): the receiver copies them. */
class ValueSink {
public:
	virtual void value(size_t index, std::string_view bytes) = 0;

protected:
	~ValueSink() = default;
};

/* Receives the keys a SCAN finds, in order: the prefix of the key's table and the key's
 * canonical text. Same lifetime rule. */
class KeySink {
public:
	virtual void key(std::string_view prefix, std::string_view id) = 0;

protected:
	~KeySink() = default;
};

/* Where a SCAN stands: at the start (the zero value), after the key whose bytes are
 * after_key[0..after_length) in the table `table` (both only the RowReader interprets), or at
 * the end (`finished`). The cursor carries it (scan_cursor.h), so its size bounds a cursor's. */
struct ScanPosition {
	static constexpr size_t kMaxKeyBytes = 240;
	uint64_t table = 0;
	bool started = false;
	bool finished = false;
	uint16_t after_length = 0;
	char after_key[kMaxKeyBytes] = {};
};

/* What a SCAN cursor is signed with (scan_cursor.h): the server's secret, and what a cursor
 * must not cross: the role it was made for, the database. */
struct ScanCursorKey {
	static constexpr size_t kSecretBytes = 32;
	unsigned char secret[kSecretBytes] = {};
	uint64_t role = 0;
	uint64_t database = 0;
};

/* Receives a row's columns for HGETALL, in column order. Same lifetime rule. */
class FieldSink {
public:
	virtual void field(std::string_view column, std::string_view value) = 0;

protected:
	~FieldSink() = default;
};

/* What a data lookup answers: every key of the command is served, or the command fails. */
struct LookupResult {
	enum class Status {
		Ok,
		NoPermission, /* the role lacks SELECT on a table: -NOPERM <message> */
		Busy,         /* another transaction holds a lock on a table: retry, or -BUSY <message> */
		Failed,       /* anything else that went wrong: -ERR <message> */
		ReadOnly,     /* a write on a hot standby: -READONLY */
	};
	Status status = Status::Ok;
	std::string message;

	static LookupResult ok() { return LookupResult(); }
	static LookupResult no_permission(std::string text)
	{
		return LookupResult{Status::NoPermission, std::move(text)};
	}
	static LookupResult busy(std::string text) { return LookupResult{Status::Busy, std::move(text)}; }
	static LookupResult failed(std::string text) { return LookupResult{Status::Failed, std::move(text)}; }
	static LookupResult read_only()
	{
		return LookupResult{Status::ReadOnly, "You can't write against a read only replica."};
	}
};

/* SET's conditions and what it answers. */
struct SetOptions {
	enum class Condition { Always, IfAbsent /* NX */, IfPresent /* XX */ };
	Condition condition = Condition::Always;
	bool get_old = false; /* GET: answer the row as it was */
};
struct SetOutcome {
	bool written = false;
	std::optional<std::string> old_value; /* with get_old: the old row's JSON, if there was one */
};

/* What a login answers. */
struct AuthResult {
	enum class Status { Ok, Denied, Pending };
	Status status = Status::Denied;
	AuthenticatedRole role;  /* Ok */
	std::string error_code;  /* Denied: the reply's code (WRONGPASS, ERR) */
	std::string message;

	static AuthResult ok(AuthenticatedRole role) { return AuthResult{Status::Ok, std::move(role), {}, {}}; }
	static AuthResult denied(std::string code, std::string text)
	{
		return AuthResult{Status::Denied, {}, std::move(code), std::move(text)};
	}
	static AuthResult wrong_password()
	{
		return denied("WRONGPASS", "invalid username-password pair or user is disabled.");
	}
	static AuthResult pending() { return AuthResult{Status::Pending, {}, {}, {}}; }
};

/* Counters and settings INFO and CONFIG GET report. Zero where unknown. */
struct InfoStats {
	std::string local_cache_version;
	std::string postgresql_version; /* of the server the workers run in */
	int64_t process_id = 0;
	int tcp_port = 0;               /* 0 on a TLS port, as Redis with tls-port only */
	int tls_port = 0;
	std::string tls_auth_clients;   /* a TLS port's local_cache.resp_tls_auth_clients */
	std::string bind_addresses;     /* CONFIG GET bind */
	/* Since the latest start of a RESP worker or write worker (the server's start at the
	 * latest): a worker's restart shows as Redis's restart does, uptime_in_seconds going back. */
	int64_t uptime_seconds = 0;
	int64_t idle_timeout_seconds = 0; /* CONFIG GET timeout; 0 = never */

	uint64_t connected_clients = 0;
	uint64_t max_clients = 0;
	uint64_t total_connections_received = 0;
	uint64_t total_commands_processed = 0;
	uint64_t rejected_connections = 0;
	uint64_t batch_pauses = 0; /* local_cache.resp_batch_delay's pauses, every worker's */
	/* client_recent_max_output_buffer: the most bytes one connection had not been sent (replies
	 * or CLIENT TRACKING pushes it does not read), as every worker saw it at its last second. */
	uint64_t largest_output_buffer = 0;

	uint64_t used_memory = 0; /* bytes of the cache in use */
	uint64_t max_memory = 0;  /* the cache's size (local_cache.memory) */

	uint64_t keyspace_hits = 0;
	uint64_t keyspace_misses = 0;
	uint64_t evicted_keys = 0;

	uint64_t proto_max_bulk_len = 0;
	uint64_t client_query_buffer_limit = 0;

	/* A hot standby: role:slave, and its WAL receiver's primary. */
	bool replica = false;
	bool master_link_up = false;
	std::string master_host;
	int master_port = 0;
	/* WAL positions (LSNs, in bytes). A standby: master_repl_offset, where the primary's WAL ends
	 * as the primary last said; slave_repl_offset, how far it replayed, so how far its cache was
	 * invalidated (the invalidations are WAL records replayed in order). A primary: its WAL's end
	 * (master_repl_offset). */
	uint64_t master_repl_offset = 0;
	uint64_t slave_repl_offset = 0;
};

/*
 * The connections of one worker, for CLIENT LIST, CLIENT KILL and CLIENT TRACKING REDIRECT. Each
 * worker is a process of its own and sees only its own connections (INFO's counters cover every
 * worker).
 */
class ClientDirectory {
public:
	virtual ~ClientDirectory() = default;
	/* Calls `visit` with the session of every open connection. */
	virtual void each_session(const std::function<void(const Session &)> &visit) = 0;
	/* Closes another connection at once; its unsent replies are dropped. */
	virtual void close_session(uint64_t id) = 0;
	/* Whether a connection with this CLIENT ID is open on any worker (CLIENT TRACKING
	 * REDIRECT's check): this worker's connections, or a running worker's for its ids. */
	virtual bool client_exists(uint64_t id) = 0;
};

/*
 * What the commands need from PostgreSQL, split by the handler groups that use it: each group
 * sees only its interface (CommandContext::data names them all). The PostgreSQL side implements
 * each in a class of its own (pg/, and auth/logins.h for Logins), one object of each per
 * worker; the unit tests implement each with a small fake (tests/fake_*.h). Every call comes from the worker's loop thread, one at a time.
 * Failures are answers, never exceptions: a LookupResult (or AuthResult) with its status and
 * message, as a PostgreSQL error comes back from the error boundary. Lookups check that the
 * session's role may read the tables involved (SELECT on all columns, no row-level security)
 * and answer NoPermission otherwise; keys of unknown prefixes and ids without a row are simply
 * not found. The only exception a call may throw is std::bad_alloc from C++ memory
 * (CommandProcessor answers it with -ERR).
 */

/* Reading rows and keys: the string, hash and keyspace commands' reads, DBSIZE and INFO
 * keyspace. */
class RowReader {
public:
	/* MGET, GET, EXISTS: for each keys[i] that has a row, call sink.value(i, row_json) with the
	 * row's JSON (row_to_json's text). Duplicated keys are each answered. */
	virtual LookupResult get_rows(const Session &session, const RowKey *keys, size_t count,
								  ValueSink &sink) = 0;

	/* HGET, HMGET: for each columns[i] that names a column of the row whose value is not NULL,
	 * call sink.value(i, text) with the value as text (the column's output function). */
	virtual LookupResult get_columns(const Session &session, const RowKey &key,
									 const std::string_view *columns, size_t count,
									 ValueSink &sink) = 0;

	/* HGETALL: every non-NULL column of the row, in column order; nothing if there is no row. */
	virtual LookupResult get_all_columns(const Session &session, const RowKey &key,
										 FieldSink &sink) = 0;

	/*
	 * SCAN and KEYS: from `position`, the keys of every enabled table the session's role may
	 * read (tables it may not read are skipped, not refused), a table at a time and each in key
	 * order, as of one snapshot: at most `count` keys. Tables whose keys cannot start with
	 * `key_start` are skipped. Advances `position`; sets position.finished after the last table.
	 */
	virtual LookupResult scan_keys(const Session &session, ScanPosition &position, size_t count,
								   std::string_view key_start, KeySink &sink) = 0;

	/* What the session's SCAN cursors are signed with: the server's secret (made at start, the
	 * same in every worker), the session's role, the database. */
	virtual ScanCursorKey scan_cursor_key(const Session &session) = 0;

	/* DBSIZE and INFO keyspace: the number of cached keys of the tables the session's role may
	 * read, as SCAN decides it (tables it may not read are not counted). */
	virtual uint64_t count_keys(const Session &session) = 0;

	/* CLIENT TRACKING: the prefixes of the tables read since forget_uncaptured_reads() whose
	 * writes are not captured now (their capture triggers disabled): nothing will tell of their
	 * changes, so a tracking connection that read one of their keys is told at once. `every`
	 * is set when more tables than kept were. */
	virtual void uncaptured_reads(std::vector<std::string> &prefixes, bool *every)
	{
		prefixes.clear();
		*every = false;
	}
	virtual void forget_uncaptured_reads() {}

protected:
	~RowReader() = default;
};

/* The fast hit path of GET and MGET: one virtual call per command, none per key. */
class CacheHits {
public:
	/*
	 * GET and MGET when every key can be answered from the cache as it stands: writes one value
	 * per key into `reply` (the row's JSON as a bulk string; nil for a key without a row, one
	 * that does not parse, or of no table), copied once, straight from the cache. Returns
	 * false, having written nothing, when any key needs RowReader::get_rows (which also
	 * answers any error).
	 */
	virtual bool reply_hits(const Session &session, const std::string_view *keys, size_t count,
							ReplyWriter &reply) = 0;

protected:
	~CacheHits() = default;
};

/*
 * Writing rows, each write a transaction of its own (or part of EXEC's batch) as the session's
 * role, through the table's constraints and triggers, so the cache is invalidated the ordinary
 * way; the call returns after COMMIT. Keys that name no enabled table are errors. A hot
 * standby answers ReadOnly; a row or table lock held by another transaction answers Busy.
 */
class RowWriter {
public:
	/* SET / MSET: the rows become exactly the JSON objects values[i] (absent columns take
	 * their DEFAULT). With more than one key, all or nothing; with IfAbsent, none is written
	 * unless all are absent (MSETNX). */
	virtual LookupResult set_rows(const Session &session, const RowKey *keys, const std::string_view *values,
								  size_t count, const SetOptions &options, SetOutcome &outcome) = 0;
	/* DEL: deletes the rows; *deleted counts the rows that existed. */
	virtual LookupResult delete_rows(const Session &session, const RowKey *keys, size_t count,
									 int64_t *deleted) = 0;
	/* HSET: sets columns from their text; a missing row is inserted (other columns DEFAULT) and
	 * *added is then the number of columns set, else 0. */
	virtual LookupResult set_columns(const Session &session, const RowKey &key, const std::string_view *columns,
									 const std::string_view *values, size_t count, int64_t *added) = 0;
	/* HDEL: sets the columns to NULL; *removed counts those that were not NULL. */
	virtual LookupResult clear_columns(const Session &session, const RowKey &key, const std::string_view *columns,
									   size_t count, int64_t *removed) = 0;
	/* HINCRBY / HINCRBYFLOAT: adds `increment` (a number's text) to a numeric column (a missing
	 * row is inserted with the column at the increment); *result is the new value as text. */
	virtual LookupResult increment_column(const Session &session, const RowKey &key, std::string_view column,
										  std::string_view increment, std::string *result) = 0;
	/* Whether a write to the table of `prefix` runs only PostgreSQL's own code (no trigger but
	 * the cache's, no default, check, index expression or column type of a user's, no commit
	 * waiting for a synchronous standby or a WAL flush to disk): such a write cannot hold the
	 * loop for long, so the worker runs it itself rather than pay the write worker's hop. False
	 * when not known. */
	virtual bool runs_only_builtin_code(std::string_view prefix)
	{
		(void) prefix;
		return false;
	}
	/* Group commit, for such writes the worker runs itself: told before each command whether its
	 * writes may share a transaction with the writes run before it (true), or must come after
	 * their commit (false: they commit now). shared_writes() counts the writes that joined a
	 * shared commit so far: their replies must not be sent before commit_writes() has made it,
	 * which is false if a shared commit failed since it was last called (the writes whose replies
	 * waited may not have committed). */
	virtual void share_commit(bool may_share) { (void) may_share; }
	virtual uint64_t shared_writes() { return 0; }
	virtual bool commit_writes() { return true; }

protected:
	~RowWriter() = default;
};

/* MULTI/EXEC and WATCH: batches and row versions. */
class Batches {
public:
	/* WATCH: a token that changes whenever the row is written, deleted or inserted. */
	virtual LookupResult row_version(const Session &session, const RowKey &key, std::string *version) = 0;

	/*
	 * EXEC: the calls between begin_batch() and end_batch() are one transaction with one
	 * snapshot, so the queued reads of a MULTI are one consistent read and its writes commit
	 * together. end_batch(true) commits; end_batch(false) rolls everything back. A
	 * begin_batch() that throws (std::bad_alloc) has begun no batch.
	 * check_versions() answers whether the watched rows are all still at the versions WATCH
	 * saw (false: the caller ends the batch without committing), `when`:
	 *   Reads         first, for a batch of reads only: in the batch's snapshot, which is exact
	 *                 (the batch reads nothing else).
	 *   BeforeWrites  first, for a batch that writes: in the batch's snapshot, each row locked
	 *                 where the role may lock it (UPDATE privilege), so no commit can change it
	 *                 until the batch ends.
	 *   BeforeCommit  after the batch's calls, just before end_batch(true): the rows again, as
	 *                 the latest commits left them (the batch's own writes aside), so a change
	 *                 committed while the batch ran to a row it could not lock is not missed.
	 */
	enum class WatchCheck { Reads, BeforeWrites, BeforeCommit };
	virtual void begin_batch() = 0;
	virtual LookupResult end_batch(bool commit) = 0;
	virtual LookupResult check_versions(const Session &session, const RowKey *keys, const std::string *versions,
										size_t count, WatchCheck when, bool *unchanged) = 0;

protected:
	~Batches() = default;
};

/* Logins: AUTH, HELLO ... AUTH, the default role, and the end of a connection. */
class Logins {
public:
	/*
	 * A login of the session as a PostgreSQL role. `user` empty means the default role (AUTH
	 * <password>, or the user name "default" that Redis clients send when configured with a
	 * password only). Pending: the answer is not known yet; the command writes no reply and
	 * runs again later (Session::retry_later). Never logs the password.
	 */
	virtual AuthResult authenticate(const Session &session, std::optional<std::string_view> user,
									std::string_view password) = 0;

	/* The role the session acts as before it authenticates, if any: the role its verified TLS
	 * client certificate logs in as (a `cert` line of pg_hba.conf), else local_cache.resp_role.
	 * A TLS connection's is set once its handshake is done. */
	virtual std::optional<AuthenticatedRole> default_role(const Session &session) = 0;

	/* The connection closed. */
	virtual void session_ended(const Session &session) = 0;

protected:
	~Logins() = default;
};

/* What INFO, CONFIG GET, CLIENT LIST, SLOWLOG and TIME report about the server. */
class ServerInfo {
public:
	/* What sees_activity_of asks about for what only members of pg_read_all_stats see. */
	static constexpr uint64_t kEveryRole = 0;

	/*
	 * CLIENT LIST, INFO replication and SLOWLOG show another role's activity as
	 * pg_stat_activity and pg_stat_wal_receiver do: whether the session's role may see what
	 * connections acting as role `role` do (their addresses, names, state, commands), being a
	 * member of that role or having the privileges of pg_read_all_stats. `role` kEveryRole:
	 * whether it may see every role's (connections not authenticated yet, the primary's
	 * address, other roles' slow requests): pg_read_all_stats only.
	 */
	virtual bool sees_activity_of(const Session &session, uint64_t role) = 0;

	virtual void fill_info(InfoStats &stats) = 0;

	/* TIME, and the slow log's clock: the server's clock, in microseconds since the Unix epoch. */
	virtual int64_t now_microseconds()
	{
		return std::chrono::duration_cast<std::chrono::microseconds>(
				   std::chrono::system_clock::now().time_since_epoch())
			.count();
	}

protected:
	~ServerInfo() = default;
};

/* The interfaces one worker's commands use, each implemented by an object of its own (the
 * worker's main makes them). */
class DataSources {
public:
	DataSources(RowReader &rows, CacheHits &hits, RowWriter &writes, Batches &batches, Logins &logins,
				ServerInfo &server)
		: rows(rows), hits(hits), writes(writes), batches(batches), logins(logins), server(server)
	{
	}

	RowReader &rows;
	CacheHits &hits;
	RowWriter &writes;
	Batches &batches;
	Logins &logins;
	ServerInfo &server;
};

} // namespace local_cache::resp

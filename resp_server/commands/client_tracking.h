/*
 * client_tracking.h — server-assisted client-side caching (Redis's CLIENT TRACKING), the part
 * that knows no PostgreSQL: each connection's tracking mode, and the worker's tracking table of
 * which connections read which keys (default mode) or asked for which prefixes (BCAST).
 *
 * The command layer fills it: CLIENT TRACKING / CACHING turn a session's mode on and off, and
 * every read command that succeeded notes the keys it read (nil keys included, never the keys
 * of a request that failed). The feed (resp_server/pg/tracking_feed.cpp) tells it what
 * committed: a key changed, a table was flushed (TRUNCATE, disable(), schema change), or
 * everything must be dropped (the commit log overflowed, a prefix was enabled). It answers with
 * invalidations to send, each for one connection (the one tracking, or its REDIRECT target);
 * the event layer renders and delivers them (a RESP3 push `>2 invalidate [keys]`, or a Pub/Sub
 * message on `__redis__:invalidate` for a RESP2 redirect target, possibly on another worker).
 *
 * As in Redis: a key is tracked once per connection, until its invalidation (after which the
 * client must read it again to be told again); tracking is not forgotten when a connection turns
 * it off (its ids are skipped when found); the table is bounded by max_keys and evicts keys by
 * sending their invalidation.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace local_cache::resp {

struct Session;

/* One connection's CLIENT TRACKING options, kept in its Session. */
struct TrackingMode {
	bool on = false;
	bool bcast = false;
	bool optin = false;
	bool optout = false;
	bool noloop = false;
	uint64_t redirect = 0;             /* 0: the invalidations go to the connection itself */
	std::vector<std::string> prefixes; /* BCAST's PREFIX options (empty: every key) */
	/* CLIENT CACHING YES (with OPTIN) or NO (with OPTOUT): for the next command, or for the
	 * whole MULTI ... EXEC it starts; cleared after it. */
	bool caching_yes = false;
	bool caching_no = false;
	/* The connection ran SUBSCRIBE __redis__:invalidate: RESP2 redirect targets receive their
	 * invalidations as Pub/Sub messages of that channel. */
	bool subscribed_invalidate = false;
};

/* What to send one connection. */
struct Invalidation {
	uint64_t target;                /* the connection to write to: the tracking one or its redirect */
	uint64_t tracking_client;       /* the connection that tracked the keys */
	bool flush_all = false;         /* Redis's null invalidation: drop every cached key */
	std::vector<std::string> keys;  /* when !flush_all */
};

/* Sizes INFO reports as tracking_total_keys, _items and _prefixes. */
struct TrackingStats {
	uint64_t keys = 0;     /* distinct keys tracked */
	uint64_t items = 0;    /* (key, connection) pairs */
	uint64_t prefixes = 0; /* distinct BCAST prefixes */
};

class TrackingTable {
public:
	explicit TrackingTable(size_t max_keys = 1000000) : max_keys_(max_keys) {}

	/* local_cache.resp_tracking_max_keys, at start and reload (0: unbounded); lowering it
	 * evicts at the next note_read. */
	void set_max_keys(size_t max_keys);

	/* CLIENT TRACKING ON / OFF, and a connection that closed (its mode is gone with it). */
	void session_started_tracking(const Session &session);
	void session_stopped_tracking(uint64_t client);

	/* After a read command of `session` succeeded: the keys it read, as the client named them.
	 * Honours OPTIN/OPTOUT and CLIENT CACHING; nothing in BCAST mode or with tracking off. */
	void note_read(const Session &session, const std::string_view *keys, size_t count);
	/* The same for keys of tables whose writes nothing captures now (their capture triggers
	 * disabled): no change of theirs would be told, so they are not tracked; a connection that
	 * would have tracked them (or, in BCAST mode, whose prefixes match) is told at once, after
	 * the reply, that they may change. */
	void note_uncaptured_read(const Session &session, const std::string_view *keys, size_t count);
	/* A write worker's table (resp_server/write_worker.cpp) after one job: the keys its EXEC
	 * noted, taken out (the table is then empty). The RESP worker notes them for the
	 * connection as they were decided there (note_reads_of). */
	std::vector<std::string> take_noted_keys();
	void note_reads_of(uint64_t client, const std::vector<std::string> &keys);
	/* The same for note_uncaptured_read's keys: a write worker's table, where the session is
	 * not registered, keeps those it decided to tell; the RESP worker tells them. */
	std::vector<std::string> take_uncaptured_keys();
	void note_uncaptured_reads_of(uint64_t client, const std::vector<std::string> &keys);

	/*
	 * What committed, in commit order. `writer` is the connection whose write it was (0: SQL
	 * or another server), for NOLOOP. `readable(client)` says whether a BCAST connection's role
	 * may learn of changes to this key's table (the feed's tenant rule); default-mode
	 * connections read the key, so they always may.
	 */
	void key_changed(std::string_view key, uint64_t writer, const std::function<bool(uint64_t client)> &readable);
	/* Every connection tracking a key with this table prefix ("items" for items:1) gets the
	 * null invalidation. */
	void table_flushed(std::string_view table_prefix);
	/* Every tracking connection gets the null invalidation. */
	void everything_flushed();

	/* The invalidations collected since the last call, at most one per (target, tracking
	 * client); BCAST and default-mode keys batched per connection, as Redis does per loop turn. */
	void take_invalidations(std::vector<Invalidation> &out);
	/* Whether take_invalidations has something: also after a read (an eviction past max_keys). */
	bool has_invalidations() const { return !invalidations_.empty(); }

	TrackingStats stats() const;

private:
	/* Where a tracking connection's invalidations go: its REDIRECT target, or itself. */
	static uint64_t target_of(uint64_t client, const TrackingMode &mode)
	{
		return mode.redirect != 0 ? mode.redirect : client;
	}
	struct Pending;
	Pending &pending_for(uint64_t client, const TrackingMode &mode);
	void queue_key(uint64_t client, const TrackingMode &mode, std::string_view key);
	void queue_flush(uint64_t client, const TrackingMode &mode);
	/* A default-mode key is invalidated for every connection tracking it (skipping `skip`,
	 * NOLOOP's writer) and forgotten. */
	void invalidate_tracked(std::unordered_map<std::string, std::vector<uint64_t>>::iterator entry, uint64_t skip,
							bool flush);
	void evict_one();
	void track(std::string_view key, uint64_t client);
	void forget_prefixes(uint64_t client, const TrackingMode &mode);

	size_t max_keys_;
	/* The connections with tracking on, with a copy of their mode (NOLOOP, REDIRECT, BCAST and
	 * its prefixes are needed when a change arrives, long after their command ran). */
	std::unordered_map<uint64_t, TrackingMode> clients_;
	/* Default mode: key -> the connections that read it, sorted. Ids of connections that
	 * turned tracking off or closed stay until the key's invalidation (as in Redis: forgetting
	 * them eagerly would cost a walk of the whole table per connection). */
	std::unordered_map<std::string, std::vector<uint64_t>> keys_;
	uint64_t items_ = 0;
	/* Eviction's clock hand over keys_'s buckets: a cheap, roughly random order. */
	size_t evict_bucket_ = 0;
	/* BCAST: prefix -> the connections that asked for it ("" matches every key). */
	std::unordered_map<std::string, std::vector<uint64_t>> prefixes_;
	/* A write worker's note_uncaptured_read keys (take_uncaptured_keys). */
	std::vector<std::string> uncaptured_noted_;
	/* What take_invalidations hands over, one entry per (target, tracking connection), with
	 * the keys already in each (a key changed twice is sent once). */
	struct Pending {
		size_t index;
		std::unordered_set<std::string> keys;
	};
	std::vector<Invalidation> invalidations_;
	std::unordered_map<uint64_t, std::unordered_map<uint64_t, Pending>> pending_; /* target -> tracker -> */
};

} // namespace local_cache::resp

/*
 * command_table.cpp — the command table (one row per command; the handlers are in the *_commands.cpp
 * files, by command group), its lookup, and the dispatcher that checks a request against its
 * row, in Redis's order, before running the row's handler (and, after a read, notes its keys
 * for CLIENT TRACKING).
 */
#include "resp_server/commands/command_context.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

namespace local_cache::resp {

namespace {

/* Every command flagged CMD_UNSUPPORTED. */
void refuse_write_command(CommandContext &c)
{
	c.reply.error(kUnsupportedWriteError);
}

/* ---- the table ---- */

constexpr uint32_t kConnection = CMD_LOADING | CMD_STALE | CMD_FAST;
constexpr uint32_t kRead = CMD_READONLY | CMD_FAST;
/* Redis's CLIENT TRACKING family and the Pub/Sub commands are not flagged fast. */
constexpr uint32_t kTracking = CMD_LOADING | CMD_STALE;
constexpr uint32_t kPubsub = CMD_PUBSUB | CMD_LOADING | CMD_STALE;

constexpr CommandSpec kClientSubcommands[] = {
	/* full name, arity, flags, first key, last key, step, group, since, summary, complexity,
	 * handler, subcommands */
	{"client|caching", 3, kTracking, 0, 0, 0, "connection", "6.0.0",
	 "Instructs the server whether to track the keys in the next request.", "O(1)",
	 client_caching_command, nullptr, 0},
	{"client|getname", 2, kConnection, 0, 0, 0, "connection", "2.6.9",
	 "Returns the name of the connection.", "O(1)", client_getname_command, nullptr, 0},
	{"client|getredir", 2, kTracking, 0, 0, 0, "connection", "6.0.0",
	 "Returns the client ID to which the connection's tracking notifications are redirected.", "O(1)",
	 client_getredir_command, nullptr, 0},
	{"client|help", 2, kConnection, 0, 0, 0, "connection", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"client|id", 2, kConnection, 0, 0, 0, "connection", "5.0.0",
	 "Returns the unique client ID of the connection.", "O(1)", client_id_command, nullptr, 0},
	{"client|info", 2, kConnection, 0, 0, 0, "connection", "6.2.0",
	 "Returns information about the connection.", "O(1)", client_info_command, nullptr, 0},
	{"client|kill", -3, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "connection", "2.4.0",
	 "Closes connections of the serving worker: by address, or by ID/ADDR/LADDR/USER/MAXAGE/SKIPME.",
	 "O(N) where N is the number of client connections", client_kill_command, nullptr, 0},
	{"client|list", -2, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "connection", "2.4.0",
	 "Lists the connections of the serving worker (each worker lists its own).",
	 "O(N) where N is the number of client connections", client_list_command, nullptr, 0},
	{"client|maint_notifications", -3, kConnection, 0, 0, 0, "connection", "8.0.0",
	 "Accepts maintenance notifications settings; there are no maintenance events to announce.",
	 "O(1)", client_maint_notifications_command, nullptr, 0},
	{"client|no-evict", 3, kConnection | CMD_ADMIN, 0, 0, 0, "connection", "7.0.0",
	 "Accepted without effect: past resp_client_memory the biggest clients are evicted, whatever they set.",
	 "O(1)", client_no_evict_command, nullptr, 0},
	{"client|no-touch", 3, kConnection, 0, 0, 0, "connection", "7.2.0",
	 "Accepted without effect: reads leave no trace a client could see.", "O(1)",
	 client_no_evict_command, nullptr, 0},
	{"client|setinfo", 4, kConnection, 0, 0, 0, "connection", "7.2.0",
	 "Sets information specific to the client or connection.", "O(1)", client_setinfo_command,
	 nullptr, 0},
	{"client|setname", 3, kConnection, 0, 0, 0, "connection", "2.6.9",
	 "Sets the connection name.", "O(1)", client_setname_command, nullptr, 0},
	{"client|tracking", -3, kTracking, 0, 0, 0, "connection", "6.0.0",
	 "Controls server-assisted client-side caching for the connection: invalidations at each commit.",
	 "O(1). Some options may introduce additional complexity.", client_tracking_command, nullptr, 0},
	{"client|trackinginfo", 2, kTracking, 0, 0, 0, "connection", "6.2.0",
	 "Returns information about server-assisted client-side caching for the connection.", "O(1)",
	 client_trackinginfo_command, nullptr, 0},
};

constexpr CommandSpec kCommandSubcommands[] = {
	{"command|count", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns a count of commands.", "O(1)", command_count_command, nullptr, 0},
	{"command|docs", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "7.0.0",
	 "Returns documentary information about one, multiple or all commands.",
	 "O(N) where N is the number of commands to look up", command_docs_command, nullptr, 0},
	{"command|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"command|info", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns information about one, multiple or all commands.",
	 "O(N) where N is the number of commands to look up", command_info_command, nullptr, 0},
	{"command|list", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "7.0.0",
	 "Returns a list of command names.", "O(N) where N is the total number of commands",
	 command_list_command, nullptr, 0},
};

/* Redis Cluster's topology of the one shard (cluster_commands.cpp); only in cluster mode. */
constexpr uint32_t kCluster = CMD_LOADING | CMD_STALE;

constexpr CommandSpec kClusterSubcommands[] = {
	{"cluster|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "cluster", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"cluster|info", 2, kCluster, 0, 0, 0, "cluster", "3.0.0",
	 "Returns the state of the shard: all 16384 slots, served while the primary is reachable.", "O(1)",
	 cluster_info_command, nullptr, 0},
	{"cluster|keyslot", 3, kCluster, 0, 0, 0, "cluster", "3.0.0", "Returns the hash slot for a key.",
	 "O(N) where N is the number of bytes in the key", cluster_keyslot_command, nullptr, 0},
	{"cluster|myid", 2, kCluster, 0, 0, 0, "cluster", "3.0.0", "Returns the ID of a node.", "O(1)",
	 cluster_myid_command, nullptr, 0},
	{"cluster|nodes", 2, kCluster, 0, 0, 0, "cluster", "3.0.0",
	 "Returns the primary and its standbys, as this node knows them.",
	 "O(N) where N is the total number of Cluster nodes", cluster_nodes_command, nullptr, 0},
	{"cluster|shards", 2, kCluster, 0, 0, 0, "cluster", "7.0.0",
	 "Returns the one shard: all slots, the primary and its standbys with their WAL offsets and health.",
	 "O(N) where N is the total number of cluster nodes", cluster_shards_command, nullptr, 0},
	{"cluster|slots", 2, kCluster, 0, 0, 0, "cluster", "3.0.0",
	 "Returns the mapping of all slots to the primary and its streaming standbys.",
	 "O(N) where N is the total number of Cluster nodes", cluster_slots_command, nullptr, 0},
};

constexpr CommandSpec kMemorySubcommands[] = {
	{"memory|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "4.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"memory|usage", -3, CMD_READONLY, 2, 2, 1, "server", "4.0.0",
	 "Estimates the memory a key's row takes: its JSON, its key and Redis's per-key overhead.",
	 "O(1)", memory_usage_command, nullptr, 0},
};

constexpr CommandSpec kConfigSubcommands[] = {
	{"config|get", -3, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.0.0",
	 "Returns the effective values of configuration parameters.",
	 "O(N) when N is the number of configuration parameters provided", config_get_command,
	 nullptr, 0},
	{"config|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"config|resetstat", 2, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.0.0",
	 "Resets INFO's command statistics (commandstats, errorstats, latencystats) of every role.", "O(1)",
	 config_resetstat_command, nullptr, 0},
	{"config|set", -4, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.0.0",
	 "Refused: local_cache is configured through PostgreSQL settings.", "O(1)",
	 config_set_command, nullptr, 0},
};

constexpr uint32_t kMonitor = CMD_ADMIN | CMD_LOADING | CMD_STALE;

constexpr CommandSpec kLatencySubcommands[] = {
	{"latency|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"latency|histogram", -2, kMonitor, 0, 0, 0, "server", "7.0.0",
	 "Returns the cumulative distribution of the serving worker's latencies, per command.",
	 "O(N) where N is the number of commands with latency information being retrieved.",
	 latency_histogram_command, nullptr, 0},
	{"latency|latest", 2, kMonitor, 0, 0, 0, "server", "2.8.13",
	 "Returns the latest and the longest request at or above resp_slowlog_log_slower_than (event command).",
	 "O(1)", latency_latest_command, nullptr, 0},
	{"latency|reset", -2, kMonitor, 0, 0, 0, "server", "2.8.13",
	 "Resets the latency data of the serving worker (needs pg_read_all_stats).", "O(1)",
	 latency_reset_command, nullptr, 0},
};

constexpr CommandSpec kSlowlogSubcommands[] = {
	{"slowlog|get", -2, kMonitor, 0, 0, 0, "server", "2.2.12",
	 "Returns the serving worker's slow log entries: the caller's role's, every role's for pg_read_all_stats.",
	 "O(N) where N is the number of entries returned", slowlog_get_command, nullptr, 0},
	{"slowlog|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "6.2.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"slowlog|len", 2, kMonitor, 0, 0, 0, "server", "2.2.12",
	 "Returns the number of slow log entries SLOWLOG GET would show.", "O(1)", slowlog_len_command,
	 nullptr, 0},
	{"slowlog|reset", 2, kMonitor, 0, 0, 0, "server", "2.2.12",
	 "Clears the serving worker's slow log (needs pg_read_all_stats).",
	 "O(N) where N is the number of entries in the slowlog", slowlog_reset_command, nullptr, 0},
};

template <typename T, size_t N>
constexpr size_t count_of(const T (&)[N])
{
	return N;
}

/* An unsupported write command's row: refused, with the same handler and summary. */
constexpr CommandSpec refused_write(std::string_view name, int arity, int first_key, int last_key,
									int key_step, std::string_view group, std::string_view since,
									std::string_view complexity)
{
	return CommandSpec{name, arity, CMD_WRITE | CMD_UNSUPPORTED, first_key, last_key, key_step, group, since,
					   "Refused: no meaning for rows.", complexity, refuse_write_command, nullptr, 0};
}

constexpr CommandSpec kCommands[] = {
	/* reads */
	{"get", 2, kRead, 1, 1, 1, "string", "1.0.0",
	 "Returns the row the key <prefix>:<id> names, as JSON.", "O(1)", get_command, nullptr, 0},
	{"mget", -2, kRead, 1, -1, 1, "string", "1.0.0",
	 "Returns the rows of several keys, as JSON, nil for missing keys.",
	 "O(N) where N is the number of keys to retrieve.", mget_command, nullptr, 0},
	{"exists", -2, kRead, 1, -1, 1, "generic", "1.0.0",
	 "Counts how many of the keys name an existing row.", "O(N) where N is the number of keys",
	 exists_command, nullptr, 0},
	{"hget", 3, kRead, 1, 1, 1, "hash", "2.0.0", "Returns one column of a row, as text.", "O(1)",
	 hget_command, nullptr, 0},
	{"hmget", -3, kRead, 1, 1, 1, "hash", "2.0.0",
	 "Returns several columns of a row, as text, nil for NULL or unknown columns.",
	 "O(N) where N is the number of columns being requested.", hmget_command, nullptr, 0},
	{"hgetall", 2, CMD_READONLY, 1, 1, 1, "hash", "2.0.0",
	 "Returns the non-NULL columns of a row and their values, as text.",
	 "O(N) where N is the number of columns.", hgetall_command, nullptr, 0},
	{"strlen", 2, kRead, 1, 1, 1, "string", "2.2.0",
	 "Returns the length of the row's JSON; 0 for a missing key.", "O(1)", strlen_command,
	 nullptr, 0},
	{"hexists", 3, kRead, 1, 1, 1, "hash", "2.0.0",
	 "Whether the row has the column with a non-NULL value.", "O(1)", hexists_command, nullptr, 0},
	{"hstrlen", 3, kRead, 1, 1, 1, "hash", "3.2.0",
	 "Returns the length of a column's value as text; 0 for NULL or an unknown column.", "O(1)",
	 hstrlen_command, nullptr, 0},
	{"hkeys", 2, CMD_READONLY, 1, 1, 1, "hash", "2.0.0",
	 "Returns the names of the row's non-NULL columns.", "O(N) where N is the number of columns.",
	 hkeys_command, nullptr, 0},
	{"hvals", 2, CMD_READONLY, 1, 1, 1, "hash", "2.0.0",
	 "Returns the values of the row's non-NULL columns, as text.",
	 "O(N) where N is the number of columns.", hvals_command, nullptr, 0},
	{"hlen", 2, kRead, 1, 1, 1, "hash", "2.0.0", "Returns the number of the row's non-NULL columns.",
	 "O(1)", hlen_command, nullptr, 0},
	{"scan", -2, CMD_READONLY, 0, 0, 0, "generic", "2.8.0",
	 "Iterates over the keys of the rows the role may read, a table at a time in key order.",
	 "O(1) for every call. O(N) for a complete iteration.", scan_command, nullptr, 0},
	{"keys", 2, CMD_READONLY, 0, 0, 0, "generic", "1.0.0",
	 "Returns the keys that match a pattern, from one snapshot; refused past 100000 keys.",
	 "O(N) with N being the number of keys in the database", keys_command, nullptr, 0},
	{"type", 2, kRead, 1, 1, 1, "generic", "1.0.0",
	 "Returns string for a key that names a row, none otherwise.", "O(1)", type_command, nullptr,
	 0},
	{"ttl", 2, kRead, 1, 1, 1, "generic", "1.0.0",
	 "Returns -1 for a key that names a row (rows do not expire), -2 otherwise.", "O(1)",
	 ttl_command, nullptr, 0},
	{"pttl", 2, kRead, 1, 1, 1, "generic", "2.6.0",
	 "Returns -1 for a key that names a row (rows do not expire), -2 otherwise.", "O(1)",
	 ttl_command, nullptr, 0},
	{"dbsize", 1, kRead, 0, 0, 0, "server", "1.0.0", "Returns the number of keys.", "O(1)",
	 dbsize_command, nullptr, 0},

	/* transactions */
	{"multi", 1, kConnection | CMD_NOT_QUEUED, 0, 0, 0, "transactions", "1.2.0",
	 "Starts a transaction: the next requests are queued until EXEC.", "O(1)", multi_command,
	 nullptr, 0},
	{"exec", 1, CMD_LOADING | CMD_STALE | CMD_NOT_QUEUED, 0, 0, 0, "transactions", "1.2.0",
	 "Runs the queued requests in one transaction with one snapshot.",
	 "Depends on commands in the transaction", exec_command, nullptr, 0},
	{"discard", 1, kConnection | CMD_NOT_QUEUED, 0, 0, 0, "transactions", "2.0.0",
	 "Discards the queued requests.", "O(N), when N is the number of queued commands",
	 discard_command, nullptr, 0},
	{"watch", -2, kConnection | CMD_NOT_QUEUED, 1, -1, 1, "transactions", "2.2.0",
	 "Remembers the rows' versions: EXEC runs nothing if one changed.",
	 "O(1) for every key.", watch_command, nullptr, 0},
	{"unwatch", 1, kConnection, 0, 0, 0, "transactions", "2.2.0",
	 "Forgets the watched rows.", "O(1)", unwatch_command, nullptr, 0},

	/* connection */
	{"ping", -1, CMD_FAST, 0, 0, 0, "connection", "1.0.0",
	 "Returns the server's liveliness response.", "O(1)", ping_command, nullptr, 0},
	{"echo", 2, CMD_FAST, 0, 0, 0, "connection", "1.0.0", "Returns the given string.", "O(1)",
	 echo_command, nullptr, 0},
	{"hello", -1, kConnection | CMD_NO_AUTH, 0, 0, 0, "connection", "6.0.0",
	 "Handshakes with the server: protocol version, authentication, connection name.", "O(1)",
	 hello_command, nullptr, 0},
	{"auth", -2, kConnection | CMD_NO_AUTH, 0, 0, 0, "connection", "1.0.0",
	 "Authenticates the connection as a PostgreSQL role.",
	 "O(N) where N is the number of passwords defined for the user", auth_command, nullptr, 0},
	{"select", 2, kConnection, 0, 0, 0, "connection", "1.0.0",
	 "Changes the selected database; only database 0 exists.", "O(1)", select_command, nullptr,
	 0},
	{"reset", 1, kConnection | CMD_NO_AUTH | CMD_NOT_QUEUED, 0, 0, 0, "connection", "6.2.0",
	 "Resets the connection: RESP2, no name, the default role.", "O(1)", reset_command, nullptr,
	 0},
	{"quit", -1, kConnection | CMD_NO_AUTH | CMD_NOT_QUEUED, 0, 0, 0, "connection", "1.0.0",
	 "Closes the connection.", "O(1)", quit_command, nullptr, 0},
	{"client", -2, 0, 0, 0, 0, "connection", "2.4.0", "A container for client connection commands.",
	 "Depends on subcommand.", nullptr, kClientSubcommands, count_of(kClientSubcommands)},

	/* Pub/Sub, for CLIENT TRACKING's REDIRECT over RESP2: only __redis__:invalidate carries messages */
	{"subscribe", -2, kPubsub, 0, 0, 0, "pubsub", "2.0.0", "Listens for messages published to channels.",
	 "O(N) where N is the number of channels to subscribe to.", subscribe_command, nullptr, 0},
	{"unsubscribe", -1, kPubsub, 0, 0, 0, "pubsub", "2.0.0", "Stops listening to messages posted to channels.",
	 "O(N) where N is the number of channels to unsubscribe.", unsubscribe_command, nullptr, 0},
	{"psubscribe", -2, kPubsub, 0, 0, 0, "pubsub", "2.0.0",
	 "Listens for messages published to channels that match one or more patterns.",
	 "O(N) where N is the number of patterns to subscribe to.", subscribe_command, nullptr, 0},
	{"punsubscribe", -1, kPubsub, 0, 0, 0, "pubsub", "2.0.0",
	 "Stops listening to messages published to channels that match one or more patterns.",
	 "O(N) where N is the number of patterns to unsubscribe.", unsubscribe_command, nullptr, 0},

	/* cluster: the replication group as one Redis Cluster shard (cluster_commands.cpp) */
	{"cluster", -2, 0, 0, 0, 0, "cluster", "3.0.0", "A container for Redis Cluster commands.",
	 "Depends on subcommand.", nullptr, kClusterSubcommands, count_of(kClusterSubcommands)},
	{"readonly", 1, kConnection, 0, 0, 0, "cluster", "3.0.0",
	 "Enables read queries for a connection to a standby in cluster mode.", "O(1)", readonly_command,
	 nullptr, 0},
	{"readwrite", 1, kConnection, 0, 0, 0, "cluster", "3.0.0",
	 "Sends a connection's reads on a standby to the primary again (-MOVED).", "O(1)",
	 readwrite_command, nullptr, 0},
	{"wait", 3, 0, 0, 0, 0, "generic", "3.0.0",
	 "Waits until that many standbys have replayed the connection's writes, or the timeout (ms) passes.",
	 "O(1)", wait_command, nullptr, 0},

	/* server */
	{"role", 1, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, "server", "2.8.12",
	 "Returns the replication role: the primary's WAL position and standbys, or a standby's primary.",
	 "O(1)", role_command, nullptr, 0},
	{"command", -1, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns detailed information about all commands.",
	 "O(N) where N is the total number of commands", command_command, kCommandSubcommands,
	 count_of(kCommandSubcommands)},
	{"config", -2, 0, 0, 0, 0, "server", "2.0.0", "A container for server configuration commands.",
	 "Depends on subcommand.", nullptr, kConfigSubcommands, count_of(kConfigSubcommands)},
	{"memory", -2, 0, 0, 0, 0, "server", "4.0.0", "A container for memory diagnostics commands.",
	 "Depends on subcommand.", nullptr, kMemorySubcommands, count_of(kMemorySubcommands)},
	{"time", 1, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, "server", "2.6.0",
	 "Returns the server time.", "O(1)", time_command, nullptr, 0},
	{"info", -1, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "1.0.0",
	 "Returns information and statistics about the server.", "O(1)", info_command, nullptr, 0},
	{"slowlog", -2, 0, 0, 0, 0, "server", "2.2.12", "A container for slow log commands.",
	 "Depends on subcommand.", nullptr, kSlowlogSubcommands, count_of(kSlowlogSubcommands)},
	{"latency", -2, 0, 0, 0, 0, "server", "2.8.13", "A container for latency diagnostics commands.",
	 "Depends on subcommand.", nullptr, kLatencySubcommands, count_of(kLatencySubcommands)},

	/* writes through SQL, as the connection's role; see writes.cpp */
	{"set", -3, CMD_WRITE, 1, 1, 1, "string", "1.0.0",
	 "Makes the row exactly the JSON object (INSERT ... ON CONFLICT DO UPDATE); NX, XX, GET.",
	 "O(1)", set_command, nullptr, 0},
	{"setnx", 3, CMD_WRITE | CMD_FAST, 1, 1, 1, "string", "1.0.0",
	 "Inserts the row from the JSON object unless it exists.", "O(1)", setnx_command, nullptr, 0},
	{"getset", 3, CMD_WRITE | CMD_FAST, 1, 1, 1, "string", "1.0.0",
	 "Makes the row the JSON object and returns the old row.", "O(1)", getset_command, nullptr, 0},
	{"mset", -3, CMD_WRITE, 1, -1, 2, "string", "1.0.1",
	 "Makes several rows the JSON objects, in one transaction.",
	 "O(N) where N is the number of keys to set.", mset_command, nullptr, 0},
	{"msetnx", -3, CMD_WRITE, 1, -1, 2, "string", "1.0.1",
	 "Inserts several rows in one transaction, only if none exists.",
	 "O(N) where N is the number of keys to set.", mset_command, nullptr, 0},
	{"del", -2, CMD_WRITE, 1, -1, 1, "generic", "1.0.0", "Deletes the rows.",
	 "O(N) where N is the number of keys that will be removed.", del_command, nullptr, 0},
	{"unlink", -2, CMD_WRITE | CMD_FAST, 1, -1, 1, "generic", "4.0.0", "Deletes the rows.",
	 "O(N) where N is the number of keys that will be removed.", del_command, nullptr, 0},
	{"hset", -4, CMD_WRITE | CMD_FAST, 1, 1, 1, "hash", "2.0.0",
	 "Sets columns from their text; inserts the row if missing.",
	 "O(N) where N is the number of field/value pairs being set.", hset_command, nullptr, 0},
	{"hmset", -4, CMD_WRITE | CMD_FAST, 1, 1, 1, "hash", "2.0.0",
	 "Sets columns from their text; inserts the row if missing.",
	 "O(N) where N is the number of field/value pairs being set.", hset_command, nullptr, 0},
	{"hdel", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "hash", "2.0.0", "Sets columns to NULL.",
	 "O(N) where N is the number of fields to be removed.", hdel_command, nullptr, 0},
	{"hincrby", 4, CMD_WRITE | CMD_FAST, 1, 1, 1, "hash", "2.0.0",
	 "Adds an integer to a number column.", "O(1)", hincrby_command, nullptr, 0},
	{"hincrbyfloat", 4, CMD_WRITE | CMD_FAST, 1, 1, 1, "hash", "2.6.0",
	 "Adds a number to a number column.", "O(1)", hincrby_command, nullptr, 0},

	/* writes with no meaning for rows: refused, so that clients get a clear answer instead
	 * of "unknown command" (name, arity, first key, last key, key step, group, since, complexity) */
	refused_write("setex", 4, 1, 1, 1, "string", "2.0.0", "O(1)"),
	refused_write("psetex", 4, 1, 1, 1, "string", "2.6.0", "O(1)"),
	refused_write("getdel", 2, 1, 1, 1, "string", "6.2.0", "O(1)"),
	refused_write("getex", -2, 1, 1, 1, "string", "6.2.0", "O(1)"),
	refused_write("append", 3, 1, 1, 1, "string", "2.0.0", "O(1)"),
	refused_write("setrange", 4, 1, 1, 1, "string", "2.2.0", "O(1)"),
	refused_write("incr", 2, 1, 1, 1, "string", "1.0.0", "O(1)"),
	refused_write("incrby", 3, 1, 1, 1, "string", "1.0.0", "O(1)"),
	refused_write("incrbyfloat", 3, 1, 1, 1, "string", "2.6.0", "O(1)"),
	refused_write("decr", 2, 1, 1, 1, "string", "1.0.0", "O(1)"),
	refused_write("decrby", 3, 1, 1, 1, "string", "1.0.0", "O(1)"),
	refused_write("expire", -3, 1, 1, 1, "generic", "1.0.0", "O(1)"),
	refused_write("pexpire", -3, 1, 1, 1, "generic", "2.6.0", "O(1)"),
	refused_write("expireat", -3, 1, 1, 1, "generic", "1.2.0", "O(1)"),
	refused_write("pexpireat", -3, 1, 1, 1, "generic", "2.6.0", "O(1)"),
	refused_write("persist", 2, 1, 1, 1, "generic", "2.2.0", "O(1)"),
	refused_write("rename", 3, 1, 2, 1, "generic", "1.0.0", "O(1)"),
	refused_write("renamenx", 3, 1, 2, 1, "generic", "1.0.0", "O(1)"),
	refused_write("copy", -3, 1, 2, 1, "generic", "6.2.0", "O(N)"),
	refused_write("move", 3, 1, 1, 1, "generic", "1.0.0", "O(1)"),
	refused_write("hsetnx", 4, 1, 1, 1, "hash", "2.0.0", "O(1)"),
	refused_write("lpush", -3, 1, 1, 1, "list", "1.0.0", "O(1)"),
	refused_write("rpush", -3, 1, 1, 1, "list", "1.0.0", "O(1)"),
	refused_write("sadd", -3, 1, 1, 1, "set", "1.0.0", "O(1)"),
	refused_write("zadd", -4, 1, 1, 1, "sorted-set", "1.2.0", "O(log(N))"),
	refused_write("flushdb", -1, 0, 0, 0, "server", "1.0.0", "O(N)"),
	refused_write("flushall", -1, 0, 0, 0, "server", "1.0.0", "O(N)"),
};

/* ---- lookup: an open-addressing hash over the case-folded names, built once ---- */

uint32_t fold_hash(std::string_view name)
{
	uint32_t hash = 2166136261u; /* FNV-1a */
	for (char c : name) {
		hash ^= uint8_t(ascii_lower(c));
		hash *= 16777619u;
	}
	return hash;
}

class CommandIndex {
public:
	CommandIndex()
	{
		static_assert(count_of(kCommands) * 2 <= kSlots, "keep the index at most half full");
		for (const CommandSpec &command : kCommands) {
			size_t slot = fold_hash(command.full_name) & (kSlots - 1);
			while (slots_[slot] != nullptr)
				slot = (slot + 1) & (kSlots - 1);
			slots_[slot] = &command;
			longest_name_ = std::max(longest_name_, command.full_name.size());
		}
	}

	const CommandSpec *find(std::string_view name) const
	{
		/* Hostile or binary argv[0] of any length costs no more than a short compare. */
		if (name.empty() || name.size() > longest_name_)
			return nullptr;
		for (size_t slot = fold_hash(name) & (kSlots - 1); slots_[slot] != nullptr;
			 slot = (slot + 1) & (kSlots - 1)) {
			if (equals_ignore_case(slots_[slot]->full_name, name))
				return slots_[slot];
		}
		return nullptr;
	}

private:
	static constexpr size_t kSlots = 256;
	const CommandSpec *slots_[kSlots] = {};
	size_t longest_name_ = 0;
};

const CommandIndex &command_index()
{
	static const CommandIndex index;
	return index;
}

/* ---- dispatch errors, worded exactly as Redis 7 words them ---- */

void reply_unknown_command(ReplyWriter &reply, const Request &request, std::string &message)
{
	message.assign("unknown command '");
	message.append(c_string_prefix(request[0], 128));
	message.append("', with args beginning with: ");
	size_t args_start = message.size();
	for (size_t i = 1; i < request.argc && message.size() - args_start < 128; i++) {
		size_t room = 128 - (message.size() - args_start);
		message.append("'");
		message.append(c_string_prefix(request[i], room));
		message.append("' ");
	}
	reply.error(message);
}

void reply_unknown_subcommand(ReplyWriter &reply, const Request &request, std::string &message)
{
	message.assign("unknown subcommand '");
	message.append(c_string_prefix(request[1], 128));
	message.append("'. Try ");
	for (char c : c_string(request[0]))
		message += ascii_upper(c);
	message.append(" HELP.");
	reply.error(message);
}

bool arity_matches(const CommandSpec &command, size_t argc)
{
	if (command.arity > 0)
		return argc == size_t(command.arity);
	return argc >= size_t(-command.arity);
}

/* The command the request names, once it passed the checks every request goes through, in
 * Redis's order; nullptr when one failed, with the error replied, and *named the command that
 * was refused (nullptr: the request named none, an unknown command or subcommand). */
const CommandSpec *checked_command(const Request &request, const Session &session, ReplyWriter &reply,
								   std::string &message, const CommandSpec **named)
{
	*named = nullptr;
	const CommandSpec *command = find_command(request[0]);
	if (command == nullptr) {
		reply_unknown_command(reply, request, message);
		return nullptr;
	}
	if (command->is_container() && request.argc >= 2) {
		const CommandSpec *subcommand = find_subcommand(*command, request[1]);
		if (subcommand == nullptr) {
			reply_unknown_subcommand(reply, request, message);
			return nullptr;
		}
		command = subcommand;
	}
	*named = command;
	if (!arity_matches(*command, request.argc) || command->handler == nullptr) {
		message.assign("wrong number of arguments for '");
		message.append(command->full_name);
		message.append("' command");
		reply.error(message);
		return nullptr;
	}
	if (!(command->flags & CMD_NO_AUTH) && !session.authenticated()) {
		reply.error_with_code("NOAUTH", "Authentication required.");
		return nullptr;
	}
	/* A RESP2 connection with subscriptions reads only Pub/Sub replies; RESP3 has no limit. */
	if (session.protocol == 2 && session.subscribed() && !(command->flags & CMD_PUBSUB) &&
		command->full_name != "ping" && command->full_name != "quit" && command->full_name != "reset") {
		message.assign("Can't execute '");
		message.append(command->full_name);
		message.append("': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context");
		reply.error(message);
		return nullptr;
	}
	/* Unsupported writes are refused when queued, not at EXEC, so that EXEC fails as a whole. */
	if (session.multi.active && (command->flags & CMD_UNSUPPORTED)) {
		reply.error(kUnsupportedWriteError);
		return nullptr;
	}
	/* (P)SUBSCRIBE answers once per channel, which EXEC's array of one reply per command
	 * cannot hold (Redis lets it break the array; we refuse it as its NO_MULTI commands). */
	if (session.multi.active && (command->flags & CMD_PUBSUB)) {
		reply.error("Command not allowed inside a transaction");
		return nullptr;
	}
	return command;
}

/* CLIENT CACHING YES/NO covers the next command, or the whole MULTI ... EXEC that follows
 * (Redis clears it in resetClient, outside MULTI, after any other command). */
void end_caching_scope(Session &session, const CommandSpec *command)
{
	if (session.retry_later || session.multi.active ||
		(command != nullptr && command->full_name == "client|caching"))
		return;
	session.tracking.caching_yes = session.tracking.caching_no = false;
}

/* All of the request or, when an allocation fails, none of it: the queue stays in step. */
void queue_request(QueuedRequests &multi, const Request &request)
{
	size_t bytes = multi.bytes.size();
	size_t ends = multi.arg_ends.size();
	try {
		for (std::string_view argument : request) {
			multi.bytes.append(argument.data(), argument.size());
			multi.arg_ends.push_back(multi.bytes.size());
		}
		multi.argcs.push_back(request.argc);
	} catch (...) {
		multi.bytes.resize(bytes);
		multi.arg_ends.resize(ends);
		throw;
	}
}

} // namespace

CommandTable command_table()
{
	return CommandTable{kCommands, count_of(kCommands)};
}

const CommandSpec *find_command(std::string_view name)
{
	return command_index().find(name);
}

const CommandSpec *find_subcommand(const CommandSpec &container, std::string_view name)
{
	for (size_t i = 0; i < container.subcommand_count; i++) {
		if (equals_ignore_case(container.subcommands[i].name(), name))
			return &container.subcommands[i];
	}
	return nullptr;
}

CommandProcessor::CommandProcessor(const DataSources &data) : data_(data), scratch_(new Scratch) {}

CommandProcessor::~CommandProcessor() = default;

const CommandSpec *command_for(const Request &request)
{
	const CommandSpec *command = find_command(request[0]);
	if (command != nullptr && command->is_container() && request.argc >= 2)
		return find_subcommand(*command, request[1]);
	return command;
}

void note_tracked_reads(CommandContext &c)
{
	const CommandSpec &command = c.command;
	if (command.first_key <= 0 || command.key_step <= 0)
		return;
	int64_t last = command.last_key < 0 ? int64_t(c.argc()) + command.last_key : command.last_key;
	std::vector<std::string_view> &keys = c.scratch.tracked_keys;
	std::vector<std::string_view> &told = c.scratch.told_keys;
	std::vector<std::string> &uncaptured = c.scratch.uncaptured_prefixes;
	bool every_uncaptured = false;
	c.data.rows.uncaptured_reads(uncaptured, &every_uncaptured);
	keys.clear();
	told.clear();
	for (int64_t i = command.first_key; i <= last && i < int64_t(c.argc()); i += command.key_step) {
		std::string_view key = c.arg(size_t(i));
		bool captured = !every_uncaptured;
		if (!uncaptured.empty()) {
			std::optional<RowKey> row = parse_row_key(key);
			captured = !row || std::find(uncaptured.begin(), uncaptured.end(), row->prefix) == uncaptured.end();
		}
		(captured ? keys : told).push_back(key);
	}
	c.tracking.note_read(c.session, keys.data(), keys.size());
	if (!told.empty())
		c.tracking.note_uncaptured_read(c.session, told.data(), told.size());
}

void run_command(CommandContext &c, bool note_reads)
{
	ReplyBuffer &out = c.reply.buffer();
	size_t reply_start = out.size();
	c.session.retry_later = false;
	try {
		c.command.handler(c);
		if (c.session.retry_later)
			out.truncate(reply_start);
		else if (note_reads && c.session.tracking.on && (c.command.flags & CMD_READONLY) &&
				 out.size() > reply_start && out.view()[reply_start] != '-')
			note_tracked_reads(c);
	} catch (const std::exception &e) {
		/* The data sources answer PostgreSQL's errors as values: what comes here is a C++
		 * failure, std::bad_alloc above all. It fails this command only (inside EXEC, the
		 * others still run); whatever part of a reply was written goes, and the error's text
		 * is made without allocating. */
		out.truncate(reply_start);
		c.session.retry_later = false;
		char message[160];
		snprintf(message, sizeof(message), "internal error: %s", e.what());
		c.reply.error(dynamic_cast<const std::bad_alloc *>(&e) != nullptr ? "out of memory" : message);
	}
}

void CommandProcessor::execute(const Request &request, Session &session, ReplyBuffer &out)
{
	size_t start = out.size();
	try {
		dispatch(request, session, out);
	} catch (const std::exception &) {
		/* An allocation failed outside a handler (queueing, an error's text): the request
		 * fails as a whole and its partial reply goes; inside MULTI, EXEC then fails as after
		 * any refused request. Should even this reply fail to grow the buffer, the exception
		 * leaves and the server closes the connection. */
		out.truncate(start);
		session.retry_later = false;
		session.multi.refused = session.multi.active;
		ReplyWriter(out, session.protocol).error("out of memory");
	}
}

/* The role INFO's command statistics count a request under: the one it was sent as (AUTH counts
 * under the role before it). */
uint64_t stats_role(const Session &session)
{
	return session.role ? session.role->id : CommandStatsRecorder::kNoRole;
}

bool runs_as_write(const CommandSpec &command, const Session &session)
{
	if (command.flags & CMD_WRITE)
		return true;
	return command.full_name == "exec" && session.multi.active && !session.multi.refused && queue_writes(session.multi);
}

namespace {

/* A write command (not EXEC) whose every key names a table that runs only PostgreSQL's own code
 * (RowWriter::runs_only_builtin_code): the hop to a write worker would cost more CPU than the
 * write itself, and nothing of a role's own can run long in it. */
bool runs_on_loop(const CommandSpec &command, const Request &request, RowWriter &writes)
{
	if (!(command.flags & CMD_WRITE) || command.first_key <= 0 || command.key_step <= 0)
		return false;
	int64_t last = command.last_key < 0 ? int64_t(request.argc) + command.last_key : command.last_key;
	bool any = false;
	for (int64_t i = command.first_key; i <= last && i < int64_t(request.argc); i += command.key_step) {
		std::optional<RowKey> key = parse_row_key(request[size_t(i)]);
		if (!key || !writes.runs_only_builtin_code(key->prefix))
			return false;
		any = true;
	}
	return any;
}

} // namespace

bool CommandProcessor::offloaded(const CommandSpec &command, const Request &request, Session &session,
								 ReplyBuffer &out)
{
	WriteOffload::Outcome outcome = offload_->run(request, session, out);
	if (outcome.status == WriteOffload::Status::RunHere)
		return false;
	session.retry_later = outcome.status == WriteOffload::Status::Pending;
	if (session.retry_later)
		return true;
	/* EXEC ended the transaction where it ran, whatever it answered; its reads are noted here. */
	if (session.multi.active)
		end_transaction(session);
	tracking_.note_reads_of(session.id, outcome.tracked_keys);
	tracking_.note_uncaptured_reads_of(session.id, outcome.uncaptured_keys);
	end_caching_scope(session, &command);
	int64_t ended_us = data_.server.now_microseconds();
	clock_carried_ = false;
	/* INFO's command statistics count it where it ran: the write worker (its commands too). */
	try {
		monitor_.record(command, request, session, ended_us - outcome.duration_us, outcome.duration_us);
	} catch (const std::bad_alloc &) {
	}
	return true;
}

void CommandProcessor::dispatch(const Request &request, Session &session, ReplyBuffer &out)
{
	ReplyWriter reply(out, session.protocol);
	if (request.argc == 0) {
		/* The parser never produces one; answer anyway so replies stay in step. */
		reply.error("empty command");
		return;
	}
	size_t reply_start = out.size();
	const CommandSpec *named;
	const CommandSpec *command = checked_command(request, session, reply, scratch_->text, &named);
	if (command == nullptr) {
		/* Inside MULTI, a refused request makes EXEC fail too (Redis's flagTransaction). */
		session.multi.refused = session.multi.active;
		end_caching_scope(session, nullptr);
		monitor_.stats().rejected(named, stats_role(session), out.view().substr(reply_start));
		return;
	}
	/* A standby in cluster mode sends keyed writes, and reads before READONLY, to the primary;
	 * inside MULTI the request is refused as it is queued, so EXEC fails, as in Redis. */
	if (cluster_redirect(cluster_, *command, request, session, reply, scratch_->text)) {
		session.multi.refused = session.multi.active;
		end_caching_scope(session, nullptr);
		/* Redis Cluster counts a redirection as a rejected call. */
		monitor_.stats().rejected(command, stats_role(session), out.view().substr(reply_start));
		return;
	}
	if (session.multi.active && !(command->flags & CMD_NOT_QUEUED)) {
		queue_request(session.multi, request);
		reply.simple_string("QUEUED");
		return;
	}
	/* A write the worker runs itself may share its commit with the writes run before it; any
	 * other command comes after their commit (RowWriter::share_commit). A tracking connection's
	 * writes commit alone: NOLOOP knows one writer per commit. */
	bool writes = offload_ != nullptr && runs_as_write(*command, session);
	bool on_loop = writes && runs_on_loop(*command, request, data_.writes);
	data_.writes.share_commit(on_loop && !session.tracking.on);
	if (writes && !on_loop && offloaded(*command, request, session, out))
		return;
	CommandContext context{request, session, data_, reply, *scratch_, *command, clients_, monitor_, tracking_, cluster_};
	if (session.tracking.on)
		data_.rows.forget_uncaptured_reads();
	uint64_t role = stats_role(session);
	if (activity_ != nullptr)
		activity_->command_started(*command, request, session);
	int64_t started_us = clock_carried_ ? last_end_us_ : data_.server.now_microseconds();
	run_command(context);
	end_caching_scope(session, command);
	last_end_us_ = data_.server.now_microseconds();
	clock_carried_ = true;
	if (activity_ != nullptr)
		activity_->command_ended(session.retry_later);
	/* A request that will run again is timed when it does; EXEC is timed as a whole (and the
	 * commands it ran each on their own, transaction_commands.cpp). Its reply stands whatever
	 * happens here: an entry the slow log has no memory for is not kept. */
	if (!session.retry_later) {
		monitor_.stats().executed(*command, role, last_end_us_ - started_us, out.view().substr(reply_start));
		try {
			monitor_.record(*command, request, session, started_us, last_end_us_ - started_us);
		} catch (const std::bad_alloc &) {
		}
	}
}

} // namespace local_cache::resp

/*
 * tracking_delivery.cpp — CLIENT TRACKING among a worker's clients: hands what the commit feed
 * collected (CommitFeed, host.h: the worker's reader of the tracking log) to the worker's
 * tracking table (commands/client_tracking.h), and writes the invalidations it answers to their
 * connections: a RESP3 push, or a Pub/Sub message of __redis__:invalidate on a RESP2 connection
 * subscribed to it. An invalidation for a connection
 * of another worker goes there through the tracking log (a relay). An invalidation reaches a
 * REDIRECT target only while it acts as the tracking connection's role.
 *
 * The worker collects when a writer woke it (SIGUSR2, see worker.cpp), then polls while commits
 * keep coming (below), and while the feed holds records whose transaction has not ended
 * (nothing wakes it for those).
 */
#include "resp_server/clients/server.h"

namespace local_cache::resp {

namespace {

/*
 * How a worker learns of commits (TrackingWake). Under a stream of commits a worker woken for
 * each would spend a core on wake-ups on a small machine. So once woken it polls instead, every
 * kBusyTickMicroseconds after a collect (writers then send no signal), and goes back to waiting
 * for a signal after a tick that found nothing: a commit waits for at most one busy tick.
 * Records that wait for their transaction's end (a standby's, replayed just before the commit
 * record, which wakes nobody when it is replayed; a PREPARE's) are looked at again
 * kFirstWaitTickMicroseconds after a collect that a signal brought, when the commit is most
 * likely replayed already; kBusyTickMicroseconds after one that found more records; then every
 * kWaitingTickMicroseconds while only those that waited before are left (a transaction
 * prepared for long). A worker whose connections track nothing is never signalled: it only
 * reads the log every kIdleTickMicroseconds, to stay ahead of the writers, and catches up
 * before a connection's first tracked key can miss anything.
 */
constexpr long kBusyTickMicroseconds = 1000;
constexpr long kFirstWaitTickMicroseconds = 250;
constexpr long kWaitingTickMicroseconds = 2000;
constexpr long kIdleTickMicroseconds = 50000;
constexpr std::string_view kInvalidateChannel = "__redis__:invalidate";

Connection *find_connection(Server *server, uint64_t id)
{
	auto found = server->connections_by_id.find(id);
	return found == server->connections_by_id.end() ? nullptr : found->second;
}

bool is_local(const Server *server, uint64_t id)
{
	return int(id >> 40) == server->worker_number;
}

/* Redis's sendTrackingMessage: false when the connection cannot receive it (RESP2 and not
 * subscribed to the invalidation channel). */
bool render_invalidation(ReplyBuffer &out, const Session &session, bool flush_all, const std::vector<std::string> &keys)
{
	ReplyWriter reply(out, session.protocol);
	if (session.protocol >= 3) {
		out.append(">2\r\n");
		reply.bulk("invalidate");
	} else if (session.tracking.subscribed_invalidate) {
		reply.array(3);
		reply.bulk("message");
		reply.bulk(kInvalidateChannel);
	} else {
		return false;
	}
	if (flush_all) {
		reply.null();
		return true;
	}
	reply.array(keys.size());
	for (const std::string &key : keys)
		reply.bulk(key);
	return true;
}

/* Tenants: an invalidation names keys its tracking connection read, so it goes only to a
 * connection acting as the same role (REDIRECT could name any connection). */
void write_to(Connection *target, uint64_t tracker_role, bool flush_all, const std::vector<std::string> &keys)
{
	if (target->closing || !target->session.role || target->session.role->id != tracker_role ||
		!render_invalidation(target->pending, target->session, flush_all, keys))
		return;
	write_unrequested(target);
}

/* The tracking connection learns that its redirect target is gone, as Redis tells it. */
void redirect_broken(Server *server, uint64_t tracking_client, uint64_t target)
{
	Connection *c = find_connection(server, tracking_client);
	if (c == nullptr || c->closing || c->session.protocol < 3)
		return;
	ReplyWriter reply(c->pending, c->session.protocol);
	c->pending.append(">2\r\n");
	reply.bulk("tracking-redir-broken");
	reply.integer(int64_t(target));
	write_unrequested(c);
}

/* A relay's message: the tracking client and its role, whether it is a flush, the keys. */
std::string encode_relay(const Invalidation &invalidation, uint64_t tracker_role)
{
	std::string message;
	auto put = [&](const void *bytes, size_t length) { message.append(static_cast<const char *>(bytes), length); };
	uint8_t flush_all = invalidation.flush_all ? 1 : 0;
	uint32_t count = uint32_t(invalidation.keys.size());
	put(&invalidation.tracking_client, sizeof(uint64_t));
	put(&tracker_role, sizeof(uint64_t));
	put(&flush_all, 1);
	put(&count, sizeof(count));
	for (const std::string &key : invalidation.keys) {
		uint32_t length = uint32_t(key.size());
		put(&length, sizeof(length));
		put(key.data(), key.size());
	}
	return message;
}

bool decode_relay(const std::string &message, Invalidation *out, uint64_t *tracker_role)
{
	size_t at = 0;
	auto take = [&](void *bytes, size_t length) {
		if (message.size() - at < length)
			return false;
		memcpy(bytes, message.data() + at, length);
		at += length;
		return true;
	};
	uint8_t flush_all = 0;
	uint32_t count = 0;
	if (!take(&out->tracking_client, sizeof(uint64_t)) || !take(tracker_role, sizeof(uint64_t)) ||
		!take(&flush_all, 1) || !take(&count, sizeof(count)))
		return false;
	out->flush_all = flush_all != 0;
	out->keys.clear();
	for (uint32_t i = 0; i < count; i++) {
		uint32_t length = 0;
		if (!take(&length, sizeof(length)) || message.size() - at < length)
			return false;
		out->keys.emplace_back(message.data() + at, length);
		at += length;
	}
	return true;
}

void send(Server *server, const Invalidation &invalidation)
{
	Connection *tracker = find_connection(server, invalidation.tracking_client);
	if (tracker == nullptr || !tracker->session.role)
		return;
	uint64_t tracker_role = tracker->session.role->id;
	if (!is_local(server, invalidation.target)) {
		server->feed->relay(invalidation.target, encode_relay(invalidation, tracker_role));
		return;
	}
	Connection *target = find_connection(server, invalidation.target);
	if (target == nullptr) {
		if (invalidation.target != invalidation.tracking_client)
			redirect_broken(server, invalidation.tracking_client, invalidation.target);
		return;
	}
	write_to(target, tracker_role, invalidation.flush_all, invalidation.keys);
}

constexpr const char *kUnlogged =
	"CLIENT TRACKING: this standby's primary does not log invalidations (local_cache.wal_invalidations)";

/* Clients treat a closed connection as "drop everything", and reconnect. */
void close_trackers(Server *server)
{
	for (Connection *c = server->connections, *next; c != nullptr; c = next) {
		next = c->next;
		if (c->counted_as_tracker)
			disconnect(c, kUnlogged);
	}
}

void send_invalidations(Server *server)
{
	std::vector<Invalidation> invalidations;
	server->processor->tracking().take_invalidations(invalidations);
	for (const Invalidation &invalidation : invalidations)
		send(server, invalidation);
}

void arm_tick(Server *server, long microseconds)
{
	server->tracking_tick->arm(microseconds);
}

/* Whether a change must reach this worker's connections promptly: they track keys or prefixes,
 * or receive redirected invalidations, or records wait for their transaction's end. */
bool needs_prompt(Server *server)
{
	TrackingStats tracked = server->processor->tracking().stats();
	return tracked.keys > 0 || tracked.prefixes > 0 || server->invalidation_subscribers > 0 ||
		server->feed->waiting();
}

/* The next tick of a worker that polls (the rule at the top). */
long next_tick(Server *server, TrackingWake mode, bool after_signal)
{
	CommitFeed &feed = *server->feed;
	if (mode == TrackingWake::Idle)
		return kIdleTickMicroseconds;
	if (feed.has_news() || !feed.waiting())
		return kBusyTickMicroseconds;
	if (!server->tracking_new_waits)
		return kWaitingTickMicroseconds;
	return after_signal ? kFirstWaitTickMicroseconds : kBusyTickMicroseconds;
}

void poll_every(Server *server, TrackingWake mode)
{
	bool after_signal = server->tracking_wake == TrackingWake::Signal;
	if (after_signal)
		server->feed->awake();
	server->tracking_wake = mode;
	arm_tick(server, next_tick(server, mode, after_signal));
}

void on_tick(Server *server)
{
	CommitFeed &feed = *server->feed;
	bool news = feed.has_news();
	if (news || feed.waiting())
		deliver_invalidations(server);
	if (!needs_prompt(server))
		poll_every(server, TrackingWake::Idle);
	else if (news || feed.waiting())
		poll_every(server, TrackingWake::Busy);
	else
		server->tracking_wake = TrackingWake::Signal; /* the next loop turn says it sleeps */
}

} // namespace

void deliver_invalidations(Server *server)
{
	CommitFeed &feed = *server->feed;
	TrackingTable &table = server->processor->tracking();
	std::vector<CommittedChange> changes;
	std::vector<RelayedInvalidation> relays;
	TrackingStats tracked = table.stats();
	bool news = feed.has_news();
	feed.collect(changes, relays, tracked.keys > 0 || tracked.prefixes > 0);
	/* Records may have joined those that wait for their transaction's end (poll_every). */
	server->tracking_new_waits = news && feed.waiting();
	for (const CommittedChange &change : changes) {
		switch (change.kind) {
		case CommittedChange::Kind::Key:
			table.key_changed(change.name, change.writer, [&](uint64_t client) {
				Connection *c = find_connection(server, client);
				return c != nullptr && c->session.role && feed.role_may_read(c->session.role->id, change.relid);
			});
			break;
		case CommittedChange::Kind::Table:
			table.table_flushed(change.name);
			break;
		case CommittedChange::Kind::Everything:
			table.everything_flushed();
			break;
		case CommittedChange::Kind::Unlogged:
			close_trackers(server);
			break;
		}
	}
	send_invalidations(server);
	for (const RelayedInvalidation &relay : relays) {
		Invalidation invalidation;
		uint64_t tracker_role = 0;
		Connection *target = find_connection(server, relay.target);
		if (target != nullptr && decode_relay(relay.message, &invalidation, &tracker_role))
			write_to(target, tracker_role, invalidation.flush_all, invalidation.keys);
	}
}

void tracking_before_blocking(Server *server)
{
	CommitFeed &feed = *server->feed;
	bool prompt = needs_prompt(server);
	switch (server->tracking_wake) {
	case TrackingWake::Busy:
		/* A busy loop turn need not wait for the tick. */
		if (feed.has_news())
			deliver_invalidations(server);
		return;
	case TrackingWake::Idle:
		if (!prompt)
			return;
		/* A key is tracked now: from here on writers signal; what the log holds is caught up
		 * with below, before the loop waits. */
		server->tracking_wake = TrackingWake::Signal;
		[[fallthrough]];
	case TrackingWake::Signal:
		if (!prompt) {
			poll_every(server, TrackingWake::Idle);
			return;
		}
		if (!feed.sleeping() && !feed.waiting())
			return; /* a writer signals the worker from now on */
		deliver_invalidations(server);
		poll_every(server, TrackingWake::Busy);
		return;
	}
}

void tracking_after_wait(Server *server)
{
	if (server->tracking_wake == TrackingWake::Signal)
		server->feed->awake();
}

void start_tracking_delivery(Server *server)
{
	server->tracking_tick = std::make_unique<MicroTimer>(server->loop, [server] { on_tick(server); });
}

void stop_tracking_delivery(Server *server)
{
	if (server->tracking_tick != nullptr)
		server->tracking_tick->close();
}

void note_tracking_mode(Connection *c)
{
	/* A read past resp_tracking_max_keys evicted keys: their invalidations go now. */
	if (c->server->processor->tracking().has_invalidations())
		send_invalidations(c->server);
	if (c->session.tracking.subscribed_invalidate != c->counted_as_subscriber) {
		c->counted_as_subscriber = c->session.tracking.subscribed_invalidate;
		c->server->invalidation_subscribers += c->counted_as_subscriber ? 1 : -1;
	}
	bool on = c->session.tracking.on;
	if (on == c->counted_as_tracker)
		return;
	c->counted_as_tracker = on;
	c->server->feed->count_trackers(on ? 1 : -1);
	if (on && !c->server->feed->changes_logged())
		disconnect(c, kUnlogged);
}

void forget_tracking(Connection *c)
{
	if (c->counted_as_subscriber) {
		c->counted_as_subscriber = false;
		c->server->invalidation_subscribers--;
	}
	if (c->counted_as_tracker) {
		c->server->processor->tracking().session_stopped_tracking(c->session.id);
		c->counted_as_tracker = false;
		c->server->feed->count_trackers(-1);
	}
}

} // namespace local_cache::resp

/*
 * client_tracking.cpp — the worker's CLIENT TRACKING table (client_tracking.h): which
 * connections read which keys (default mode) or asked for which prefixes (BCAST), and the
 * invalidations a commit, a flush or an eviction makes, batched per (target, tracking
 * connection) until the event layer takes them. Redis's tracking.c keeps the same two tables
 * (keys to client ids, prefixes to clients); the rules it follows are written where they apply.
 */
#include "resp_server/commands/client_tracking.h"

#include "resp_server/commands/data_source.h"

#include <algorithm>
#include <utility>

namespace local_cache::resp {

namespace {

bool starts_with(std::string_view text, std::string_view prefix)
{
	return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

/* Adds `id` to a sorted list of ids; false when it was there. */
bool insert_sorted(std::vector<uint64_t> &ids, uint64_t id)
{
	auto at = std::lower_bound(ids.begin(), ids.end(), id);
	if (at != ids.end() && *at == id)
		return false;
	ids.insert(at, id);
	return true;
}

void erase_sorted(std::vector<uint64_t> &ids, uint64_t id)
{
	auto at = std::lower_bound(ids.begin(), ids.end(), id);
	if (at != ids.end() && *at == id)
		ids.erase(at);
}

/* BCAST with no PREFIX asks for every key, as the prefix "" does (Redis registers ""). */
const std::vector<std::string> &bcast_prefixes(const TrackingMode &mode)
{
	static const std::vector<std::string> every_key{std::string()};
	return mode.prefixes.empty() ? every_key : mode.prefixes;
}

} // namespace

void TrackingTable::set_max_keys(size_t max_keys)
{
	max_keys_ = max_keys;
}

void TrackingTable::session_started_tracking(const Session &session)
{
	auto [entry, added] = clients_.try_emplace(session.id);
	if (!added)
		forget_prefixes(session.id, entry->second);
	entry->second = session.tracking;
	entry->second.on = true;
	if (entry->second.bcast) {
		for (const std::string &prefix : bcast_prefixes(entry->second))
			insert_sorted(prefixes_[prefix], session.id);
	}
}

void TrackingTable::session_stopped_tracking(uint64_t client)
{
	auto entry = clients_.find(client);
	if (entry == clients_.end())
		return;
	forget_prefixes(client, entry->second);
	clients_.erase(entry);
}

void TrackingTable::forget_prefixes(uint64_t client, const TrackingMode &mode)
{
	if (!mode.bcast)
		return;
	for (const std::string &prefix : bcast_prefixes(mode)) {
		auto found = prefixes_.find(prefix);
		if (found == prefixes_.end())
			continue;
		erase_sorted(found->second, client);
		if (found->second.empty())
			prefixes_.erase(found);
	}
}

void TrackingTable::note_read(const Session &session, const std::string_view *keys, size_t count)
{
	const TrackingMode &mode = session.tracking;
	if (!mode.on || mode.bcast)
		return;
	/* OPTIN tracks only after CLIENT CACHING YES, OPTOUT all but after CLIENT CACHING NO. */
	if ((mode.optin && !mode.caching_yes) || (mode.optout && mode.caching_no))
		return;
	while (max_keys_ != 0 && keys_.size() > max_keys_)
		evict_one();
	for (size_t i = 0; i < count; i++)
		track(keys[i], session.id);
}

void TrackingTable::note_uncaptured_read(const Session &session, const std::string_view *keys, size_t count)
{
	const TrackingMode &mode = session.tracking;
	if (!mode.on)
		return;
	if (!mode.bcast && ((mode.optin && !mode.caching_yes) || (mode.optout && mode.caching_no)))
		return;
	auto client = clients_.find(session.id);
	for (size_t i = 0; i < count; i++) {
		bool told = !mode.bcast;
		for (size_t p = 0; mode.bcast && p < bcast_prefixes(mode).size() && !told; p++)
			told = starts_with(keys[i], bcast_prefixes(mode)[p]);
		if (!told)
			continue;
		if (client != clients_.end())
			queue_key(session.id, client->second, keys[i]);
		else
			uncaptured_noted_.emplace_back(keys[i]);
	}
}

void TrackingTable::track(std::string_view name, uint64_t client)
{
	std::string key(name);
	auto found = keys_.find(key);
	if (found == keys_.end()) {
		/* Room is made before the key goes in, so a key is never evicted by its own read
		 * (only, past max_keys, by another key of the same command). */
		while (max_keys_ != 0 && !keys_.empty() && keys_.size() >= max_keys_)
			evict_one();
		found = keys_.emplace(std::move(key), std::vector<uint64_t>()).first;
	}
	if (insert_sorted(found->second, client))
		items_++;
}

std::vector<std::string> TrackingTable::take_noted_keys()
{
	std::vector<std::string> keys;
	keys.reserve(keys_.size());
	for (auto &entry : keys_)
		keys.push_back(entry.first);
	keys_.clear();
	items_ = 0;
	return keys;
}

void TrackingTable::note_reads_of(uint64_t client, const std::vector<std::string> &keys)
{
	for (const std::string &key : keys)
		track(key, client);
}

std::vector<std::string> TrackingTable::take_uncaptured_keys()
{
	return std::exchange(uncaptured_noted_, {});
}

void TrackingTable::note_uncaptured_reads_of(uint64_t client, const std::vector<std::string> &keys)
{
	auto found = clients_.find(client);
	if (found == clients_.end())
		return;
	for (const std::string &key : keys)
		queue_key(client, found->second, key);
}

void TrackingTable::key_changed(std::string_view key, uint64_t writer,
								const std::function<bool(uint64_t client)> &readable)
{
	if (!keys_.empty()) {
		auto found = keys_.find(std::string(key));
		if (found != keys_.end())
			invalidate_tracked(found, writer, false);
	}
	for (const auto &[prefix, ids] : prefixes_) {
		if (!starts_with(key, prefix))
			continue;
		for (uint64_t id : ids) {
			auto client = clients_.find(id);
			if (client == clients_.end() || (client->second.noloop && id == writer))
				continue;
			/* A connection learns of changes only to tables its role may read. */
			if (readable && !readable(id))
				continue;
			queue_key(id, client->second, key);
		}
	}
}

void TrackingTable::table_flushed(std::string_view table_prefix)
{
	std::string start(table_prefix);
	start += ':';
	for (auto entry = keys_.begin(); entry != keys_.end();) {
		auto next = std::next(entry);
		if (starts_with(entry->first, start))
			invalidate_tracked(entry, 0, true);
		entry = next;
	}
	/* BCAST connections whose prefixes may name keys of the table drop everything too. */
	for (const auto &[prefix, ids] : prefixes_) {
		if (!starts_with(start, prefix) && !starts_with(prefix, start))
			continue;
		for (uint64_t id : ids) {
			auto client = clients_.find(id);
			if (client != clients_.end())
				queue_flush(id, client->second);
		}
	}
}

void TrackingTable::everything_flushed()
{
	for (const auto &[id, mode] : clients_)
		queue_flush(id, mode);
	keys_.clear();
	items_ = 0;
}

void TrackingTable::take_invalidations(std::vector<Invalidation> &out)
{
	if (out.empty()) {
		out.swap(invalidations_);
	} else {
		for (Invalidation &invalidation : invalidations_)
			out.push_back(std::move(invalidation));
	}
	invalidations_.clear();
	pending_.clear();
}

TrackingStats TrackingTable::stats() const
{
	TrackingStats stats;
	stats.keys = keys_.size();
	stats.items = items_;
	stats.prefixes = prefixes_.size();
	return stats;
}

void TrackingTable::invalidate_tracked(std::unordered_map<std::string, std::vector<uint64_t>>::iterator entry,
									   uint64_t skip, bool flush)
{
	/* The key is forgotten for every connection, NOLOOP's writer too: it must read the key
	 * again to be told again (Redis's trackingInvalidateKey). */
	std::string key = entry->first;
	std::vector<uint64_t> ids = std::move(entry->second);
	items_ -= ids.size();
	keys_.erase(entry);
	for (uint64_t id : ids) {
		auto client = clients_.find(id);
		/* Off, closed, or now in BCAST mode (its default-mode reads are from before). */
		if (client == clients_.end() || client->second.bcast || (id == skip && client->second.noloop))
			continue;
		if (flush)
			queue_flush(id, client->second);
		else
			queue_key(id, client->second, key);
	}
}

void TrackingTable::evict_one()
{
	size_t buckets = keys_.bucket_count();
	for (;;) {
		size_t bucket = evict_bucket_ % buckets;
		auto in_bucket = keys_.begin(bucket);
		if (in_bucket != keys_.end(bucket)) {
			invalidate_tracked(keys_.find(in_bucket->first), 0, false);
			return;
		}
		evict_bucket_ = bucket + 1;
	}
}

TrackingTable::Pending &TrackingTable::pending_for(uint64_t client, const TrackingMode &mode)
{
	uint64_t target = target_of(client, mode);
	auto [pending, added] = pending_[target].try_emplace(client);
	if (added) {
		pending->second.index = invalidations_.size();
		invalidations_.push_back(Invalidation{target, client, false, {}});
	}
	return pending->second;
}

void TrackingTable::queue_key(uint64_t client, const TrackingMode &mode, std::string_view key)
{
	Pending &pending = pending_for(client, mode);
	Invalidation &invalidation = invalidations_[pending.index];
	/* After a flush in the same batch the client drops every key anyway. */
	if (invalidation.flush_all)
		return;
	if (pending.keys.emplace(key).second)
		invalidation.keys.emplace_back(key);
}

void TrackingTable::queue_flush(uint64_t client, const TrackingMode &mode)
{
	Pending &pending = pending_for(client, mode);
	Invalidation &invalidation = invalidations_[pending.index];
	invalidation.flush_all = true;
	std::vector<std::string>().swap(invalidation.keys);
	pending.keys.clear();
}

} // namespace local_cache::resp

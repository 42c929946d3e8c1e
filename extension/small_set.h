/*
 * small_set.h — a small set in front of a dynahash table, for sets that are mostly small and
 * emptied at every transaction's end (see SmallSet).
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "utils/hsearch.h"
}

#include <cstring>

namespace local_cache {

/*
 * A set of a transaction's entries (invalidation.cpp: the tables and keys it changed): the first
 * N in an array, scanned, the rest in a dynahash table that `create` makes once per session. With
 * many connections a backend finds little of its own memory still in the CPU's caches, and a hash
 * table's lookup or removal touches several lines of it (the table, its header, directory, bucket,
 * entry) where a few entries scanned are one or two; most transactions write one table and a few
 * keys. Entries never move (lists point to them). An array entry taken back before the
 * transaction's end (a subtransaction's abort) gets relid InvalidOid, which no probe has, and keeps
 * its slot until the owner empties the array (used = 0) at the transaction's end. Plain data, as
 * the Entry types are: nothing to destroy.
 */
template <typename Entry, typename Probe, int N, bool (*Same)(const Entry &, const Probe &)>
struct SmallSet {
	Entry slots[N];
	int used = 0;
	HTAB *hashed = nullptr; /* made once per session, by `create` */
	long nhashed = 0;

	Entry *find(const Probe &probe)
	{
		for (int i = 0; i < used; i++)
			if (Same(slots[i], probe))
				return &slots[i];
		return nhashed == 0 ? nullptr : static_cast<Entry *>(hash_search(hashed, &probe, HASH_FIND, NULL));
	}
	/* The entry for `probe`; a new one begins with its bytes (as HASH_ENTER copies the key). */
	Entry *enter(const Probe &probe, bool *found, HTAB *(*create)(void))
	{
		Entry *entry = find(probe);
		*found = entry != nullptr;
		if (entry != nullptr)
			return entry;
		if (used < N) {
			entry = &slots[used++];
			memcpy(static_cast<void *>(entry), &probe, sizeof(Probe));
			return entry;
		}
		if (hashed == nullptr)
			hashed = create();
		entry = static_cast<Entry *>(hash_search(hashed, &probe, HASH_ENTER, found));
		nhashed++;
		return entry;
	}
	bool in_slots(const Entry *entry) const { return entry >= slots && entry < slots + N; }
	void remove(Entry *entry)
	{
		if (in_slots(entry)) {
			entry->relid = InvalidOid;
			return;
		}
		hash_search(hashed, entry, HASH_REMOVE, NULL);
		nhashed--;
	}
	/* At most this many entries (array slots taken back included). */
	long count_bound() const { return used + nhashed; }
};

} // namespace local_cache

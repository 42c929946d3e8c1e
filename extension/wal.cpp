/*
 * wal.cpp — the "local_cache" custom WAL resource manager (id 128, RM_EXPERIMENTAL_ID; see
 * https://wiki.postgresql.org/wiki/CustomWALResourceManagers before shipping another id).
 *
 * One record type, INVALIDATE: a database, tables to flush and keys to invalidate. The
 * primary writes it at pre-commit (and pre-prepare) of every transaction that wrote cached
 * tables, so it precedes the commit record in WAL. A hot standby's startup process replays
 * it by invalidating its own cache the same way — before the commit is replayed and the
 * transaction becomes visible to standby readers — which is all the invalidation protocol
 * needs (docs/TECHNICAL.md, "Replicas").
 */
#include "wal.h"

#include "store.h"

extern "C" {
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
}

namespace local_cache {

namespace {

constexpr RmgrId RM_LOCAL_CACHE_ID = RM_EXPERIMENTAL_ID;
constexpr uint8 XLOG_LOCAL_CACHE_INVALIDATE = 0x10;
/* Keys per record: keeps records far below any size limit. */
constexpr int KEYS_PER_RECORD = 8192;

/* Followed by Oid flushed[nflushed], then WalKey keys[nkeys]. */
struct InvalidateRecord {
	Oid dbid;
	uint32 nflushed;
	uint32 nkeys;
};

void read_record(XLogReaderState *reader, InvalidateRecord *header, const Oid **flushed, const WalKey **keys)
{
	const char *data = XLogRecGetData(reader);
	memcpy(header, data, sizeof(*header));
	*flushed = reinterpret_cast<const Oid *>(data + sizeof(*header));
	*keys = reinterpret_cast<const WalKey *>(data + sizeof(*header) + sizeof(Oid) * header->nflushed);
}

void redo(XLogReaderState *reader)
{
	if ((XLogRecGetInfo(reader) & XLR_RMGR_INFO_MASK) != XLOG_LOCAL_CACHE_INVALIDATE)
		elog(PANIC, "local_cache redo: unknown record type %u", XLogRecGetInfo(reader) & XLR_RMGR_INFO_MASK);
	if (!store_available())
		return;
	InvalidateRecord header;
	const Oid *flushed;
	const WalKey *keys;
	read_record(reader, &header, &flushed, &keys);
	for (uint32 i = 0; i < header.nflushed; i++)
		store_flush(header.dbid, flushed[i]);
	for (uint32 i = 0; i < header.nkeys; i++) {
		WalKey key;
		memcpy(&key, &keys[i], sizeof(key));
		store_invalidate(store_key(header.dbid, key.relid, key.key));
	}
}

void describe(StringInfo out, XLogReaderState *reader)
{
	InvalidateRecord header;
	const Oid *flushed;
	const WalKey *keys;
	read_record(reader, &header, &flushed, &keys);
	appendStringInfo(out, "db %u; flush %u tables; invalidate %u keys", header.dbid, header.nflushed, header.nkeys);
	for (uint32 i = 0; i < header.nflushed && i < 8; i++)
		appendStringInfo(out, "%s%u", i == 0 ? ": flush " : ", ", flushed[i]);
	for (uint32 i = 0; i < header.nkeys && i < 8; i++) {
		WalKey key;
		memcpy(&key, &keys[i], sizeof(key));
		appendStringInfo(out, "%s%u/" INT64_FORMAT, i == 0 ? ": keys " : ", ", key.relid, key.key);
	}
	if (header.nkeys > 8)
		appendStringInfoString(out, ", ...");
}

const char *identify(uint8 info)
{
	return (info & XLR_RMGR_INFO_MASK) == XLOG_LOCAL_CACHE_INVALIDATE ? "INVALIDATE" : nullptr;
}

RmgrData rmgr = {
	"local_cache", redo, describe, identify, nullptr, nullptr, nullptr, nullptr,
};

void log_record(Oid dbid, const Oid *flushed, int nflushed, const WalKey *keys, int nkeys)
{
	InvalidateRecord header = {dbid, uint32(nflushed), uint32(nkeys)};
	XLogBeginInsert();
	XLogRegisterData(reinterpret_cast<char *>(&header), sizeof(header));
	if (nflushed > 0)
		XLogRegisterData(const_cast<char *>(reinterpret_cast<const char *>(flushed)), sizeof(Oid) * nflushed);
	if (nkeys > 0)
		XLogRegisterData(const_cast<char *>(reinterpret_cast<const char *>(keys)), sizeof(WalKey) * nkeys);
	XLogInsert(RM_LOCAL_CACHE_ID, XLOG_LOCAL_CACHE_INVALIDATE);
}

} // namespace

void wal_register_rmgr(void)
{
	RegisterCustomRmgr(RM_LOCAL_CACHE_ID, &rmgr);
}

void wal_log_invalidations(Oid dbid, const Oid *flushed, int nflushed, const WalKey *keys, int nkeys)
{
	if (!XLogStandbyInfoActive() || (nflushed == 0 && nkeys == 0))
		return;
	log_record(dbid, flushed, nflushed, keys, Min(nkeys, KEYS_PER_RECORD));
	for (int done = KEYS_PER_RECORD; done < nkeys; done += KEYS_PER_RECORD)
		log_record(dbid, nullptr, 0, keys + done, Min(nkeys - done, KEYS_PER_RECORD));
}

} // namespace local_cache

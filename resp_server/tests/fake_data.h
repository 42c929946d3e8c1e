/*
 * fake_data.h — one fake of each data-source interface over one FakeTables, as a worker has
 * one object of each class of pg/ over one database: what the command tests and the command
 * fuzz target run on.
 */
#pragma once

#include "resp_server/tests/fake_reads.h"
#include "resp_server/tests/fake_server.h"
#include "resp_server/tests/fake_tables.h"
#include "resp_server/tests/fake_writes.h"

namespace resp_test {

struct FakeData {
	FakeTables db;
	FakeRowReader rows{db};
	FakeCacheHits hits{db};
	FakeRowWriter writes{db};
	FakeBatches batches{db};
	FakeLogins logins;
	FakeServerInfo server{db};

	DataSources sources() { return DataSources(rows, hits, writes, batches, logins, server); }
};

} // namespace resp_test

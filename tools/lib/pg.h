// tools/lib/pg.h: owns the libpq helpers the C++ tools share: results that free themselves,
// connecting with the server's error text, preparing, running a statement and telling success
// from an error with its SQLSTATE, and parameters given as text or binary.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

namespace tooling {

struct PgResultFree {
    void operator()(PGresult *r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultFree>;

// A new connection; throws std::runtime_error("connection failed: <libpq's message>").
PGconn *pg_connect(const std::string &conninfo);

// PREPARE name; throws std::runtime_error("PREPARE <sql>: <message>").
void pg_prepare(PGconn *c, const char *name, const char *sql, int nparams);

// A statement without result rows (SET, INSERT, ...) that must succeed; throws
// std::runtime_error("<what>: <message>").
void pg_command(PGconn *c, const std::string &sql, const std::string &what);

// The values, lengths and formats of PQexecPrepared / PQsendQueryPrepared for params, all text
// or all binary (text results either way).
struct PgParams {
    std::vector<const char *> vals;
    std::vector<int> lengths, formats;
    PgParams(const std::vector<std::string> &params, bool binary);
    int n() const { return static_cast<int>(vals.size()); }
};

// What a statement did: ok (tuples or command), else the SQLSTATE and the message (without its
// trailing newline).
struct PgOutcome {
    bool ok = false;
    PgResult res;
    std::string sqlstate;
    std::string error;
};

// Runs sql with text parameters (nullptr: NULL) through PQexecParams.
PgOutcome pg_run(PGconn *c, const char *sql, const std::vector<const char *> &params = {});

// Runs a prepared statement with text parameters (nullptr: NULL).
PgOutcome pg_run_prepared(PGconn *c, const char *name, const std::vector<const char *> &params);

// The value at (row, col), or null_text for SQL NULL, a missing row or no result.
std::string pg_value(const PGresult *r, int row, int col, const char *null_text = "<NULL>");

}  // namespace tooling

// tools/lib/pg.cpp: owns the libpq helpers declared in pg.h.
#include "tools/lib/pg.h"

#include <stdexcept>

namespace tooling {

PGconn *pg_connect(const std::string &conninfo) {
    PGconn *c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        std::string m = PQerrorMessage(c);
        PQfinish(c);
        throw std::runtime_error("connection failed: " + m);
    }
    return c;
}

void pg_prepare(PGconn *c, const char *name, const char *sql, int nparams) {
    PgResult r(PQprepare(c, name, sql, nparams, nullptr));
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK)
        throw std::runtime_error(std::string("PREPARE ") + sql + ": " + PQerrorMessage(c));
}

void pg_command(PGconn *c, const std::string &sql, const std::string &what) {
    PgResult r(PQexec(c, sql.c_str()));
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) throw std::runtime_error(what + ": " + PQerrorMessage(c));
}

PgParams::PgParams(const std::vector<std::string> &params, bool binary) {
    for (auto &p : params) {
        vals.push_back(p.c_str());
        lengths.push_back(static_cast<int>(p.size()));
        formats.push_back(binary ? 1 : 0);
    }
}

namespace {

PgOutcome outcome(PGconn *c, PGresult *r) {
    PgOutcome o;
    o.res.reset(r);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        o.ok = true;
        return o;
    }
    const char *ss = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    o.sqlstate = ss ? ss : "";
    o.error = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
    if (o.error.empty()) o.error = PQerrorMessage(c);
    while (!o.error.empty() && o.error.back() == '\n') o.error.pop_back();
    return o;
}

}  // namespace

PgOutcome pg_run(PGconn *c, const char *sql, const std::vector<const char *> &params) {
    return outcome(c, PQexecParams(c, sql, static_cast<int>(params.size()), nullptr,
                                   params.empty() ? nullptr : params.data(), nullptr, nullptr, 0));
}

PgOutcome pg_run_prepared(PGconn *c, const char *name, const std::vector<const char *> &params) {
    return outcome(c, PQexecPrepared(c, name, static_cast<int>(params.size()), params.empty() ? nullptr : params.data(),
                                     nullptr, nullptr, 0));
}

std::string pg_value(const PGresult *r, int row, int col, const char *null_text) {
    if (!r || row >= PQntuples(r) || col >= PQnfields(r) || PQgetisnull(r, row, col)) return null_text;
    return PQgetvalue(r, row, col);
}

}  // namespace tooling

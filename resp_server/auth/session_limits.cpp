/*
 * session_limits.cpp — the database rules of a login and the connection limits that count
 * PostgreSQL backends and RESP sessions together (session_limits.h).
 */
#include "resp_server/auth/session_limits.h"

#include "extension/boundary.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "libpq/auth.h"
#include "libpq/libpq-be.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/syscache.h"
}

namespace local_cache::resp {

void read_database_facts(Oid role, DatabaseFacts *facts)
{
	HeapTuple tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
	Form_pg_database database = (Form_pg_database) GETSTRUCT(tuple);
	facts->allows_connections = database->datallowconn;
	facts->connection_limit = database->datconnlimit;
	ReleaseSysCache(tuple);
	facts->may_connect = OidIsValid(role) && pg_database_aclcheck(MyDatabaseId, role, ACL_CONNECT) == ACLCHECK_OK;
	facts->sessions = CountDBConnections(MyDatabaseId) + int(resp_sessions());
}

bool database_refuses(const DatabaseFacts &facts, bool superuser, int counted, const char *database,
					  const char **message, const char **detail)
{
	static char text[NAMEDATALEN + 64];
	*detail = "";
	if (!facts.allows_connections)
		snprintf(text, sizeof(text), "database \"%s\" is not currently accepting connections", database);
	else if (!superuser && !facts.may_connect) {
		snprintf(text, sizeof(text), "permission denied for database \"%s\"", database);
		*detail = "User does not have CONNECT privilege.";
	} else if (!superuser && facts.connection_limit >= 0 && facts.sessions - counted >= facts.connection_limit)
		snprintf(text, sizeof(text), "too many connections for database \"%s\"", database);
	else
		return false;
	*message = text;
	return true;
}

namespace {

ClientAuthentication_hook_type prev_client_authentication = nullptr;

/*
 * After a PostgreSQL login's authentication, inside InitPostgres's transaction and before its
 * own limit checks (which count this backend once it has a role and a database): the role's and,
 * for the RESP database, the database's CONNECTION LIMIT with the RESP sessions counted too.
 */
void check_session_limits(Port *port, int status)
{
	if (prev_client_authentication != nullptr)
		prev_client_authentication(port, status);
	if (status != STATUS_OK || port->user_name == nullptr || resp_sessions() == 0)
		return;
	Oid role = get_role_oid(port->user_name, true);
	HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	if (!HeapTupleIsValid(tuple))
		return; /* PostgreSQL refuses it with its own words */
	Form_pg_authid authid = (Form_pg_authid) GETSTRUCT(tuple);
	bool superuser = authid->rolsuper;
	int role_limit = authid->rolconnlimit;
	ReleaseSysCache(tuple);
	if (superuser)
		return;
	if (role_limit >= 0 && CountUserBackends(role) + int(role_sessions(role)) >= role_limit)
		ereport(FATAL, (errcode(ERRCODE_TOO_MANY_CONNECTIONS),
						errmsg("too many connections for role \"%s\"", port->user_name),
						errdetail("Its RESP sessions count against its connection limit.")));
	if (port->database_name == nullptr || strcmp(port->database_name, local_cache_resp_database) != 0)
		return;
	Oid database = get_database_oid(port->database_name, true);
	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(database));
	if (!HeapTupleIsValid(tuple))
		return;
	int database_limit = ((Form_pg_database) GETSTRUCT(tuple))->datconnlimit;
	ReleaseSysCache(tuple);
	if (database_limit >= 0 && CountDBConnections(database) + int(resp_sessions()) >= database_limit)
		ereport(FATAL, (errcode(ERRCODE_TOO_MANY_CONNECTIONS),
						errmsg("too many connections for database \"%s\"", port->database_name),
						errdetail("Its RESP sessions count against its connection limit.")));
}

} // namespace

void install_session_limits_hook()
{
	prev_client_authentication = ClientAuthentication_hook;
	ClientAuthentication_hook = pg_entry<check_session_limits>;
}

} // namespace local_cache::resp

/*
 * logins.cpp — RESP logins (see logins.h). What PostgreSQL knows about a login attempt is read in
 * one short transaction into plain data (LoginFacts); the decision, the password check on the
 * checker's thread, the back-off and the counting of sessions per role happen outside it.
 * Failed logins (and, with log_connections, successful ones) go to the server log as
 * PostgreSQL words them, at LOG level, with the client's address and the pg_hba.conf line.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "resp_server/auth/logins.h"
#include "resp_server/auth/session_limits.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "common/saslprep.h"
#include "common/string.h"
#include "libpq/crypt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/syscache.h"
}

#include <openssl/hmac.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace local_cache::resp {

namespace {

constexpr int64_t kFirstBackoffMs = 50;
constexpr int64_t kMaxBackoffMs = 5000;
/* Failures of one user name from one client address (many clients behind one address are
 * normal, so other names there are not slowed) slow that pair down only past this many within
 * kSourceWindowMs: by kFirstBackoffMs more for each further failure. The same count of one
 * address's failures limits how many it writes to the log. */
constexpr uint32_t kSourceFailuresAllowed = 20;
constexpr int64_t kSourceWindowMs = 10000;
constexpr size_t kMaxRemembered = 4096;

/* What PostgreSQL says about a login attempt; plain data, filled inside a transaction. */
struct LoginFacts {
	Oid role; /* InvalidOid: no such role */
	bool can_login;
	bool superuser;
	int connection_limit;
	int backends;          /* PostgreSQL backends of the role */
	uint32 resp_sessions;  /* RESP sessions of the role, in every worker */
	UserAuth method;       /* uaImplicitReject: no pg_hba.conf line applies */
	int hba_line;
	char hba_text[512];    /* the line as written, for the log */
	bool hba_hostname;     /* the line names a host name */
	int client_certificate; /* the line's clientcert (clientCertOff, clientCertCA, clientCertFull) */
	bool certificate_names_role; /* the verified certificate's name may log in as the role (map= or the same name) */
	bool has_secret;
	char secret[512];
	char no_secret[128];   /* why there is none, for the log: PostgreSQL's DETAIL */
	bool prepared;         /* the password after SASLprep is in the caller's buffer */
	DatabaseFacts database;
};

int64_t now_ms()
{
	return GetCurrentTimestamp() / 1000;
}

/* "ip:port" (Session::peer_address) to an address pg_hba.conf lines compare with. */
bool client_address(const std::string &peer, sockaddr_storage *address)
{
	memset(address, 0, sizeof(*address));
	size_t colon = peer.rfind(':');
	std::string host = peer.substr(0, colon);
	sockaddr_in *in4 = reinterpret_cast<sockaddr_in *>(address);
	sockaddr_in6 *in6 = reinterpret_cast<sockaddr_in6 *>(address);
	if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		return true;
	}
	return false;
}

/*
 * One login's line in the server log: `message` as PostgreSQL words it, then a DETAIL with the
 * client's address, `reason` (may be empty) and the pg_hba.conf line that applied (none when
 * facts is null or names no line). LOG, never FATAL: the worker serves other clients. The
 * texts are cut at a NUL and shown as printable ASCII (the client chose the user name).
 */
void log_login(const Session &session, const std::string &message, const char *reason, const LoginFacts *facts)
{
	char text[256], why[256], host[64], port[16], matched[640] = "";
	strlcpy(text, message.c_str(), sizeof(text));
	pg_clean_ascii(text);
	why[0] = '\n';
	strlcpy(why + 1, reason, sizeof(why) - 1);
	pg_clean_ascii(why + 1);
	const std::string &peer = session.peer_address;
	size_t colon = peer.rfind(':');
	strlcpy(host, peer.c_str(), std::min(sizeof(host), (colon == std::string::npos ? peer.size() : colon) + 1));
	strlcpy(port, colon == std::string::npos ? "" : peer.c_str() + colon + 1, sizeof(port));
	if (facts != nullptr && facts->hba_line > 0)
		snprintf(matched, sizeof(matched), "\nConnection matched pg_hba.conf line %d: \"%s\"", facts->hba_line,
				 facts->hba_text);
	ereport(LOG, (errmsg("%s", text), errdetail_log("RESP client host=%s port=%s.%s%s", host, port,
													 reason[0] != '\0' ? why : "", matched)));
}

/*
 * Reads the facts of `user` logging in over the session's connection (its address, TLS, client
 * certificate); when `password` is given, also its SASLprep'd form into prepared[0..capacity)
 * (PostgreSQL uses it for SCRAM). In a transaction of its own.
 */
bool read_login_facts(const HbaRules &rules, const Session &session, const sockaddr_storage &client, const char *user,
					  const char *password, char *prepared, size_t capacity, LoginFacts *facts, PgError *error)
{
	const char *certificate_name = session.tls_certificate_verified ? session.tls_common_name.c_str() : "";
	memset(facts, 0, sizeof(*facts));
	return in_transaction([&]() noexcept {
		facts->role = get_role_oid(user, true);
		if (OidIsValid(facts->role)) {
			HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(facts->role));
			if (HeapTupleIsValid(tuple)) {
				Form_pg_authid role = (Form_pg_authid) GETSTRUCT(tuple);
				facts->can_login = role->rolcanlogin;
				facts->superuser = role->rolsuper;
				facts->connection_limit = role->rolconnlimit;
				ReleaseSysCache(tuple);
			}
			facts->backends = CountUserBackends(facts->role);
			facts->resp_sessions = role_sessions(facts->role);
		}
		read_database_facts(facts->role, &facts->database);
		const HbaLine *line = rules.match(client, session.tls, local_cache_resp_database, user, facts->role);
		facts->method = line != nullptr ? line->auth_method : uaImplicitReject;
		facts->client_certificate = line != nullptr ? line->clientcert : clientCertOff;
		if (line != nullptr && (line->auth_method == uaCert || line->clientcert == clientCertFull))
			facts->certificate_names_role = rules.certificate_names_role(line, user, certificate_name);
		facts->hba_line = line != nullptr ? line->linenumber : 0;
		if (line != nullptr && line->rawline != nullptr)
			strlcpy(facts->hba_text, line->rawline, sizeof(facts->hba_text));
		facts->hba_hostname = line != nullptr && line->hostname != nullptr;
		if (OidIsValid(facts->role) && password != nullptr) {
			const char *detail = nullptr;
			/* NULL for no password, and for one past VALID UNTIL. */
			char *shadow = get_role_password(user, &detail);
			if (shadow != nullptr && strlen(shadow) < sizeof(facts->secret)) {
				strlcpy(facts->secret, shadow, sizeof(facts->secret));
				facts->has_secret = true;
			} else if (detail != nullptr) {
				strlcpy(facts->no_secret, detail, sizeof(facts->no_secret));
			}
		}
		if (password != nullptr) {
			char *output = nullptr;
			if (pg_saslprep(password, &output) == SASLPREP_SUCCESS && strlen(output) < capacity) {
				strlcpy(prepared, output, capacity);
				facts->prepared = true;
			}
			if (output != nullptr) {
				explicit_bzero(output, strlen(output));
				pfree(output);
			}
		}
	}, error);
}

/* The stored secret read_login_facts copied into the facts (plain data, filled inside the
 * transaction), as a Secret: the facts keep none of its bytes. */
Secret take_secret(LoginFacts &facts)
{
	Secret secret;
	if (facts.has_secret)
		secret = Secret(facts.secret);
	OPENSSL_cleanse(facts.secret, sizeof(facts.secret));
	return secret;
}

/* Sessions this worker counts in role_sessions(), by session id: released when the worker exits
 * (even by FATAL, when no destructor runs). */
std::unordered_map<uint64_t, Oid> *counted_sessions = nullptr;

void release_counted_sessions(int, Datum)
{
	if (counted_sessions == nullptr)
		return;
	for (const auto &entry : *counted_sessions)
		role_sessions_add(entry.second, -1);
	counted_sessions->clear();
}

/* Counts the session under `role` (InvalidOid: under none). */
void count_session(uint64_t session, Oid role)
{
	auto found = counted_sessions->find(session);
	Oid before = found != counted_sessions->end() ? found->second : InvalidOid;
	if (before == role)
		return;
	if (OidIsValid(before))
		role_sessions_add(before, -1);
	if (OidIsValid(role)) {
		role_sessions_add(role, 1);
		(*counted_sessions)[session] = role;
	} else {
		counted_sessions->erase(session);
	}
}

} // namespace

struct Authenticator::Pending {
	std::string request;      /* digest of the credentials: the same AUTH asked again */
	uint64_t ticket = 0;      /* 0: not submitted yet (a back-off is running) */
	int64_t not_before_ms = 0;
	PasswordCheck check;      /* until submitted */
	std::string verified_key; /* remembered when the password matches */
	LoginFacts facts;
	std::string role_name;
};

Authenticator::Authenticator()
{
	if (!pg_strong_random(key_, sizeof(key_)))
		ereport(ERROR, (errmsg("local_cache RESP: could not generate a random key")));
	if (counted_sessions == nullptr) {
		counted_sessions = new std::unordered_map<uint64_t, Oid>();
		on_shmem_exit(pg_entry<release_counted_sessions>, (Datum) 0);
	}
	load_rules();
}

Authenticator::~Authenticator() = default;

void Authenticator::load_rules()
{
	rules_.load();
}

std::string Authenticator::digest(std::string_view a, std::string_view b, std::string_view c) const
{
	constexpr std::string_view separator("\0", 1);
	Secret data;
	for (std::string_view part : {a, separator, b, separator, c})
		data.append(part);
	unsigned char out[32];
	unsigned int length = 0;
	HMAC(EVP_sha256(), key_, sizeof(key_), reinterpret_cast<const unsigned char *>(data.text().data()),
		 data.text().size(), out, &length);
	return std::string(reinterpret_cast<char *>(out), length);
}

namespace {

/* The failures of `key` in the current window, one more of them counted. */
Authenticator::Failures &count_failure(std::unordered_map<std::string, Authenticator::Failures> &failures,
									   const std::string &key, int64_t now)
{
	if (failures.size() >= kMaxRemembered)
		failures.clear();
	Authenticator::Failures &counted = failures[key];
	if (now - counted.last_ms >= kSourceWindowMs)
		counted.count = 0;
	counted.count++;
	counted.last_ms = now;
	return counted;
}

std::string attempt_key(const Session &session, std::string_view user)
{
	return session.peer_host() + '\0' + std::string(user);
}

} // namespace

int64_t Authenticator::backoff_until(const Session &session, std::string_view user) const
{
	int64_t until = 0;
	auto mine = session_failures_.find(session.id);
	if (mine != session_failures_.end() && mine->second.count > 0)
		until = mine->second.last_ms +
			std::min(kMaxBackoffMs, kFirstBackoffMs << std::min<uint32_t>(mine->second.count - 1, 7));
	auto attempt = attempt_failures_.find(attempt_key(session, user));
	if (attempt != attempt_failures_.end() && attempt->second.count > kSourceFailuresAllowed &&
		now_ms() - attempt->second.last_ms < kSourceWindowMs)
		until = std::max(until, attempt->second.last_ms +
							 std::min(kMaxBackoffMs, kFirstBackoffMs * int64_t(attempt->second.count - kSourceFailuresAllowed)));
	return until;
}

bool Authenticator::note_failure(const Session &session, std::string_view user)
{
	int64_t now = now_ms();
	Failures &mine = session_failures_[session.id];
	mine.count++;
	mine.last_ms = now;
	count_failure(attempt_failures_, attempt_key(session, user), now);
	auto logged = address_failures_.find(session.peer_host());
	if (logged != address_failures_.end() && now - logged->second.last_ms >= kSourceWindowMs &&
		logged->second.unlogged > 0) {
		ereport(LOG, (errmsg("local_cache RESP: %u failed logins from host \"%s\" were not logged", logged->second.unlogged,
							 session.peer_host().c_str())));
		logged->second.unlogged = 0;
	}
	Failures &address = count_failure(address_failures_, session.peer_host(), now);
	/* The log is limited per address: a flood from one address writes one more line. */
	if (address.count <= kSourceFailuresAllowed)
		return true;
	if (address.unlogged++ == 0)
		ereport(LOG, (errmsg("local_cache RESP: more than %u failed logins from host \"%s\"; further ones are not "
							 "logged until it has none for %d s",
							 kSourceFailuresAllowed, session.peer_host().c_str(), int(kSourceWindowMs / 1000))));
	return false;
}

AuthResult Authenticator::grant(const Session &session, const Pending &pending)
{
	const LoginFacts &facts = pending.facts;
	auto counted = counted_sessions->find(session.id);
	bool already_counted = counted != counted_sessions->end() && counted->second == facts.role;
	int sessions = facts.backends + int(facts.resp_sessions) - (already_counted ? 1 : 0);
	if (facts.connection_limit >= 0 && !facts.superuser && sessions >= facts.connection_limit) {
		std::string message = "too many connections for role \"" + pending.role_name + "\"";
		if (note_failure(session, pending.role_name))
			log_login(session, message, "", &facts);
		return AuthResult::denied("ERR", message);
	}
	const char *refusal, *detail;
	if (database_refuses(facts.database, facts.superuser, counted != counted_sessions->end() ? 1 : 0,
						 local_cache_resp_database, &refusal, &detail)) {
		if (note_failure(session, pending.role_name))
			log_login(session, refusal, detail, &facts);
		return AuthResult::denied("ERR", refusal);
	}
	count_session(session.id, facts.role);
	session_failures_.erase(session.id);
	if (Log_connections)
		log_login(session, "connection authorized: user=" + pending.role_name + " database=" + local_cache_resp_database,
				  "", &facts);
	return AuthResult::ok(AuthenticatedRole{uint64_t(facts.role), pending.role_name});
}

AuthResult Authenticator::finish(const Session &session, Pending &pending, bool password_ok)
{
	const LoginFacts &facts = pending.facts;
	if (!password_ok || !OidIsValid(facts.role) || !facts.can_login) {
		if (note_failure(session, pending.role_name)) {
			/* PostgreSQL's words: the password is checked first, LOGIN after. */
			char reason[256] = "";
			if (!OidIsValid(facts.role))
				snprintf(reason, sizeof(reason), "Role \"%s\" does not exist.", pending.role_name.c_str());
			else if (!facts.has_secret)
				strlcpy(reason, facts.no_secret, sizeof(reason));
			else if (!password_ok)
				snprintf(reason, sizeof(reason), "Password does not match for user \"%s\".", pending.role_name.c_str());
			log_login(session,
					  password_ok ? "role \"" + pending.role_name + "\" is not permitted to log in"
								  : "password authentication failed for user \"" + pending.role_name + "\"",
					  reason, &facts);
		}
		return AuthResult::wrong_password();
	}
	if (verified_.size() >= kMaxRemembered)
		verified_.clear();
	verified_.insert(pending.verified_key);
	return grant(session, pending);
}

AuthResult Authenticator::authenticate(const Session &session, std::optional<std::string_view> user,
									  std::string_view password)
{
	/* "default" is what Redis clients send for a password-only configuration. */
	if (!user || *user == "default")
		return login(session, local_cache_resp_role, password);
	return login(session, *user, password);
}

std::optional<AuthenticatedRole> Authenticator::default_role(const Session &session)
{
	if (session.tls_certificate_verified) {
		AuthResult result = certificate_login(session);
		if (result.status == AuthResult::Status::Ok)
			return result.role;
	}
	if (local_cache_resp_role == nullptr || local_cache_resp_role[0] == '\0')
		return std::nullopt;
	AuthResult result = default_login(session, local_cache_resp_role);
	if (result.status != AuthResult::Status::Ok)
		return std::nullopt;
	return result.role;
}

AuthResult Authenticator::login(const Session &session, std::string_view user, std::string_view password)
{
	/* C strings from here on: a NUL inside would cut the name or the password short. */
	if (user.empty() || user.size() >= NAMEDATALEN || user.find('\0') != std::string_view::npos ||
		password.find('\0') != std::string_view::npos) {
		if (note_failure(session, user.substr(0, NAMEDATALEN)))
			log_login(session, "password authentication failed for user \"" + std::string(user.substr(0, NAMEDATALEN)) + "\"",
					  "The user name or the password is not valid.", nullptr);
		return AuthResult::wrong_password();
	}
	std::string request = digest(user, password, "");
	auto found = pending_.find(session.id);
	if (found != pending_.end() && found->second->request != request) {
		checker_.cancel(found->second->ticket);
		pending_.erase(found);
		found = pending_.end();
	}
	if (found == pending_.end()) {
		std::string name(user);
		Secret typed_password(password);
		Secret prepared;
		size_t capacity = password.size() * 4 + 16;
		char *prepared_bytes = prepared.buffer(capacity);
		sockaddr_storage client;
		Pending pending;
		PgError error;
		bool read = client_address(session.peer_address, &client) &&
			read_login_facts(rules_, session, client, name.c_str(), typed_password.text().c_str(), prepared_bytes,
							 capacity, &pending.facts, &error);
		Secret stored = take_secret(pending.facts);
		if (!read)
			return AuthResult::denied("ERR", session.peer_address.empty() ? "unknown client address" : error.message);
		const LoginFacts &facts = pending.facts;
		std::string where = "host \"" + session.peer_host() + "\", user \"" + name + "\", database \"" +
			local_cache_resp_database + "\"";
		pending.role_name = name;
		pending.request = request;
		/* clientcert=verify-ca / verify-full on a trust or password line: the certificate first. */
		if ((facts.method == uaTrust || facts.method == uaPassword || facts.method == uaMD5 || facts.method == uaSCRAM) &&
			facts.client_certificate != clientCertOff && !certificate_accepted(session, pending))
			return AuthResult::wrong_password();
		switch (facts.method) {
		case uaImplicitReject:
		case uaReject: {
			std::string message = (facts.method == uaReject ? "pg_hba.conf rejects connection for " : "no pg_hba.conf entry for ") +
				where + (session.tls ? ", SSL encryption" : ", no encryption");
			if (note_failure(session, name))
				log_login(session, message, "", &facts);
			return AuthResult::denied("ERR", message);
		}
		case uaCert:
			/* The certificate is the credential: the password is not looked at. */
			return certificate_grant(session, pending);
		case uaTrust:
			if (facts.hba_hostname)
				break;
			if (!OidIsValid(facts.role) || !facts.can_login) {
				if (note_failure(session, name))
					log_login(session, "role \"" + name + (OidIsValid(facts.role) ? "\" is not permitted to log in" : "\" does not exist"),
							  "", &facts);
				return AuthResult::wrong_password();
			}
			return grant(session, pending);
		case uaPassword:
		case uaMD5:
		case uaSCRAM:
			if (facts.hba_hostname)
				break;
			prepared.truncate(facts.prepared ? strlen(prepared_bytes) : 0);
			pending.check.password = facts.prepared ? std::move(prepared) : std::move(typed_password);
			pending.check.user = name;
			pending.check.method = facts.method == uaSCRAM ? PasswordMethod::ScramOnly : PasswordMethod::Password;
			/* No role, no LOGIN, no password: the check runs all the same (on no secret). */
			if (OidIsValid(facts.role) && facts.can_login)
				pending.check.secret = std::move(stored);
			/* Per method too: an md5 secret passes an md5 line, never a scram-sha-256 one. */
			pending.verified_key = digest(std::to_string(facts.role) + '/' + std::to_string(int(pending.check.method)),
										  pending.check.secret.text(), pending.check.password.text());
			if (!pending.check.secret.empty() && verified_.count(pending.verified_key) > 0)
				return grant(session, pending);
			pending.not_before_ms = backoff_until(session, name);
			found = pending_.emplace(session.id, std::make_unique<Pending>(std::move(pending))).first;
			break;
		default:
			return AuthResult::denied("ERR", std::string("authentication method \"") + hba_authname(facts.method) +
							  "\" (pg_hba.conf line " + std::to_string(facts.hba_line) +
							  ") is not supported by the RESP server");
		}
		if (facts.hba_hostname)
			return AuthResult::denied("ERR", "pg_hba.conf line " + std::to_string(facts.hba_line) +
							  " names a host name, which the RESP server does not look up");
	}

	Pending &pending = *found->second;
	if (pending.ticket == 0) {
		if (now_ms() < pending.not_before_ms)
			return AuthResult::pending();
		pending.ticket = next_ticket_++;
		checker_.submit(pending.ticket, std::move(pending.check));
		return AuthResult::pending();
	}
	bool ok = false;
	if (!checker_.take_result(pending.ticket, &ok))
		return AuthResult::pending();
	AuthResult result = finish(session, pending, ok);
	pending_.erase(found);
	return result;
}

AuthResult Authenticator::default_login(const Session &session, const char *role_name)
{
	sockaddr_storage client;
	Pending pending;
	PgError error;
	if (!client_address(session.peer_address, &client) ||
		!read_login_facts(rules_, session, client, role_name, nullptr, nullptr, 0, &pending.facts, &error) ||
		!OidIsValid(pending.facts.role))
		return AuthResult::wrong_password();
	/* The DBA chose this role for the address: any method but a rejection grants it. */
	UserAuth method = pending.facts.method;
	if (method == uaImplicitReject || method == uaReject || pending.facts.hba_hostname)
		return AuthResult::denied("ERR", "pg_hba.conf rejects the default role for this address");
	pending.role_name = role_name;
	return grant(session, pending);
}

bool Authenticator::certificate_accepted(const Session &session, const Pending &pending)
{
	const LoginFacts &facts = pending.facts;
	const char *reason = nullptr;
	if (!session.tls_certificate_verified)
		reason = "connection requires a valid client certificate";
	else if ((facts.method == uaCert || facts.client_certificate == clientCertFull) && !facts.certificate_names_role)
		reason = "certificate authentication failed for user";
	if (reason == nullptr)
		return true;
	if (note_failure(session, pending.role_name)) {
		std::string message = reason;
		if (session.tls_certificate_verified)
			message += " \"" + pending.role_name + "\"";
		std::string detail = session.tls_certificate_verified
			? "The certificate's name \"" + session.tls_common_name + "\" does not name the role" +
				  (facts.method == uaCert ? " (pg_ident.conf map of the pg_hba.conf line, or the same name)." : ".")
			: std::string();
		log_login(session, message, detail.c_str(), &facts);
	}
	return false;
}

AuthResult Authenticator::certificate_grant(const Session &session, const Pending &pending)
{
	const LoginFacts &facts = pending.facts;
	if (!certificate_accepted(session, pending))
		return AuthResult::wrong_password();
	if (!OidIsValid(facts.role) || !facts.can_login) {
		if (note_failure(session, pending.role_name))
			log_login(session, "role \"" + pending.role_name +
					  (OidIsValid(facts.role) ? "\" is not permitted to log in" : "\" does not exist"), "", &facts);
		return AuthResult::wrong_password();
	}
	return grant(session, pending);
}

AuthResult Authenticator::certificate_login(const Session &session)
{
	const std::string &name = session.tls_common_name;
	if (!session.tls_certificate_verified || name.empty() || name.size() >= NAMEDATALEN)
		return AuthResult::denied("ERR", "no certificate login");
	sockaddr_storage client;
	Pending pending;
	PgError error;
	if (!client_address(session.peer_address, &client) ||
		!read_login_facts(rules_, session, client, name.c_str(), nullptr, nullptr, 0, &pending.facts, &error))
		return AuthResult::denied("ERR", "no certificate login");
	/* Only a `cert` line logs in at the handshake; other lines wait for AUTH. */
	if (pending.facts.method != uaCert || pending.facts.hba_hostname)
		return AuthResult::denied("ERR", "no certificate login");
	pending.role_name = name;
	return certificate_grant(session, pending);
}

void Authenticator::session_ended(const Session &session)
{
	auto found = pending_.find(session.id);
	if (found != pending_.end()) {
		checker_.cancel(found->second->ticket);
		pending_.erase(found);
	}
	session_failures_.erase(session.id);
	count_session(session.id, InvalidOid);
}

} // namespace local_cache::resp

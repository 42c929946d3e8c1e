/*
 * tls_server.cpp — TLS on a worker's RESP port (local_cache.resp_tls): the context built from
 * the settings, and the log lines of failed handshakes.
 *
 * The files are PostgreSQL's own (ssl_cert_file, ssl_key_file, ssl_ca_file: relative to the data
 * directory, the key held to PostgreSQL's permission rule) unless local_cache.resp_tls_*_file
 * name others, and so are the protocol range (ssl_min/max_protocol_version, at least TLSv1.2)
 * and ssl_ciphers. As the postmaster does with its own, a reload builds a new context and a
 * context that fails to load keeps the one before; connections keep the context they began
 * with. A failed handshake closes its own connection only, never another client's from the same
 * address (clients behind one NAT share it): what bounds a client that keeps failing is
 * authentication_timeout and the cap on connections not logged in (admission.cpp); its log lines
 * are limited per address (HandshakeFailureLog, disconnect_log.h).
 */
#include "extension/pg.h"

#include "resp_server/net/server.h"
#include "resp_server/pg/settings.h"

extern "C" {
#include "utils/guc.h"
}

namespace local_cache::resp {

namespace {

std::string setting(const char *own, const char *postgres_setting)
{
	if (own != nullptr && own[0] != '\0')
		return own;
	const char *value = GetConfigOption(postgres_setting, true, false);
	return value != nullptr ? value : "";
}

TlsConfig tls_config()
{
	TlsConfig config;
	config.cert_file = setting(local_cache_resp_tls_cert_file, "ssl_cert_file");
	config.key_file = setting(local_cache_resp_tls_key_file, "ssl_key_file");
	config.ca_file = setting(local_cache_resp_tls_ca_file, "ssl_ca_file");
	config.ciphers = setting(nullptr, "ssl_ciphers");
	/* PostgreSQL may allow TLS 1.0 and 1.1 for its own port; the RESP port starts at 1.2. */
	config.min_protocol = setting(nullptr, "ssl_min_protocol_version");
	if (tls_protocol_version(config.min_protocol) == 0)
		config.min_protocol = "TLSv1.2";
	config.max_protocol = setting(nullptr, "ssl_max_protocol_version");
	config.client_auth = local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_NO ? TlsClientAuth::No
					   : local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_YES ? TlsClientAuth::Yes
					   : TlsClientAuth::Optional;
	return config;
}

} // namespace

bool load_tls_context(Server *server)
{
	if (!local_cache_resp_tls)
		return true;
	std::string error;
	std::shared_ptr<TlsContext> context = TlsContext::load(tls_config(), &error);
	if (context == nullptr) {
		ereport(LOG, (errmsg("local_cache RESP worker %d: %s; %s", server->worker_number, error.c_str(),
							 server->tls != nullptr ? "keeping the TLS settings loaded before"
													: "not listening until a reload loads them")));
		return false;
	}
	server->tls = std::move(context);
	return true;
}

void close_failed_handshake(Connection *c)
{
	Server *server = c->server;
	if (server->handshake_failures.note(c->session.peer_host(), now_ms()))
		ereport(LOG, (errmsg("local_cache RESP: closing client %s: %s", c->session.peer_address.c_str(),
							 c->tls->error().c_str())));
	close_connection(c);
}

void log_left_out_handshake_failures(Server *server)
{
	server->handshake_failures.flush(now_ms(), [](const char *address, uint64_t left_out) {
		if (address != nullptr)
			ereport(LOG, (errmsg("local_cache RESP: %llu more failed TLS handshakes from %s in the last %d s",
								 (unsigned long long) left_out, address,
								 int(HandshakeFailureLog::kWindowMs / 1000))));
		else
			ereport(LOG, (errmsg("local_cache RESP: %llu more failed TLS handshakes in the last %d s from "
								 "addresses past the %zu followed",
								 (unsigned long long) left_out, int(HandshakeFailureLog::kWindowMs / 1000),
								 HandshakeFailureLog::kAddresses)));
	});
}

} // namespace local_cache::resp

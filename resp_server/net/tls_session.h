/*
 * tls_session.h — TLS for RESP connections on OpenSSL memory BIOs: the connection hands the
 * bytes it read from the socket in and writes out the bytes the session leaves in its output,
 * so the handshake and every record are processed without ever blocking the event loop on
 * the socket (OpenSSL never touches it). No PostgreSQL or libuv headers: unit-tested alone.
 *
 * TlsContext is what a configuration loads (certificate, key, CA, protocol versions,
 * ciphers, client-certificate policy); sessions take a reference to its SSL_CTX, so a reload
 * that builds a new context leaves the connections made with the old one as they are.
 */
#pragma once

#include "resp_server/protocol/reply.h"

#include <cstddef>
#include <memory>
#include <string>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace local_cache::resp {

/* local_cache.resp_tls_auth_clients, as Redis's tls-auth-clients. */
enum class TlsClientAuth { No, Optional, Yes };

struct TlsConfig {
	std::string cert_file;
	std::string key_file;
	std::string ca_file;                    /* empty: client certificates cannot be verified */
	std::string ciphers;                    /* TLS 1.2's cipher list (PostgreSQL's ssl_ciphers) */
	std::string min_protocol = "TLSv1.2";   /* PostgreSQL's ssl_min_protocol_version spelling */
	std::string max_protocol;               /* empty: no maximum */
	TlsClientAuth client_auth = TlsClientAuth::Optional;
};

class TlsContext {
public:
	/* Loads the files and settings; nullptr and `error` says why (file, OpenSSL's reason). */
	static std::shared_ptr<TlsContext> load(const TlsConfig &config, std::string *error);
	~TlsContext();
	TlsContext(const TlsContext &) = delete;
	TlsContext &operator=(const TlsContext &) = delete;

	SSL_CTX *ssl_context() const { return context_; }
	TlsClientAuth client_auth() const { return client_auth_; }

private:
	TlsContext(SSL_CTX *context, TlsClientAuth client_auth) : context_(context), client_auth_(client_auth) {}
	SSL_CTX *context_;
	TlsClientAuth client_auth_;
};

/*
 * The key file must be a regular file that only its owner can read, or one owned by root and
 * readable by its group: PostgreSQL's rule for ssl_key_file (be-secure-common.c). False and
 * `error` when it is not.
 */
bool tls_key_file_safe(const std::string &path, std::string *error);

/* TLS 1.2 / 1.3 protocol names as PostgreSQL spells them ("TLSv1.2"); 0 for "" or unknown. */
int tls_protocol_version(const std::string &name);

class TlsSession {
public:
	enum class Status {
		Ok,      /* go on (plaintext may have been produced, output may be waiting) */
		Closed,  /* the peer closed the TLS session (close_notify) */
		Failed,  /* handshake or record error: error() says why; send output(), then close */
	};

	/* A server-side session of `context`. */
	explicit TlsSession(const TlsContext &context);
	~TlsSession();
	TlsSession(const TlsSession &) = delete;
	TlsSession &operator=(const TlsSession &) = delete;

	/* Bytes read from the socket. */
	Status receive(const char *bytes, size_t length);
	/* Decrypted bytes into [buffer, buffer + room): how many (0: none until more arrive). */
	Status read_plaintext(char *buffer, size_t room, size_t *produced);
	/* Plaintext to send: encrypted into the output. */
	Status send(const char *bytes, size_t length);
	/* Moves the bytes waiting for the socket (records, handshake messages, alerts) to `out`. */
	void take_output(ReplyBuffer &out);
	bool has_output() const;

	bool handshake_done() const;
	/* The client's certificate chain was verified against the CA. */
	bool peer_verified() const;
	/* The verified client certificate's Common Name ("" without one). */
	std::string peer_common_name() const;
	const std::string &error() const { return error_; }
	/* "TLSv1.3", once the handshake is done. */
	const char *protocol() const;
	const char *cipher() const;

private:
	Status fail(const char *what);
	SSL *ssl_;
	std::string error_;
};

} // namespace local_cache::resp

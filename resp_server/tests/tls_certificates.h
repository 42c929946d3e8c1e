/*
 * tls_certificates.h — the certificates of the TLS tests (tls_session_test.cpp,
 * transport_test.cpp), made by the test run in a directory of its own: a CA, a server
 * certificate and key (and the same key readable by others), a client signed by the CA, and a
 * client signed by another CA.
 */
#pragma once

#include <boost/test/unit_test.hpp>

#include "resp_server/net/tls_session.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace resp_test {

using local_cache::resp::TlsClientAuth;
using local_cache::resp::TlsConfig;

struct KeyAndCertificate {
	EVP_PKEY *key = nullptr;
	X509 *certificate = nullptr;
	~KeyAndCertificate()
	{
		EVP_PKEY_free(key);
		X509_free(certificate);
	}
};

/* A certificate for `common_name`, signed by `issuer` (nullptr: self-signed, a CA). */
inline void make_certificate(KeyAndCertificate &out, const char *common_name, const KeyAndCertificate *issuer)
{
	out.key = EVP_EC_gen("P-256");
	out.certificate = X509_new();
	X509_set_version(out.certificate, 2);
	static long serial = 1;
	ASN1_INTEGER_set(X509_get_serialNumber(out.certificate), serial++);
	X509_gmtime_adj(X509_getm_notBefore(out.certificate), -60);
	X509_gmtime_adj(X509_getm_notAfter(out.certificate), 3600);
	X509_set_pubkey(out.certificate, out.key);
	X509_NAME *name = X509_get_subject_name(out.certificate);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char *>(common_name), -1, -1, 0);
	X509_set_issuer_name(out.certificate, issuer ? X509_get_subject_name(issuer->certificate) : name);
	if (issuer == nullptr) {
		X509V3_CTX context;
		X509V3_set_ctx(&context, out.certificate, out.certificate, nullptr, nullptr, 0);
		X509_EXTENSION *ca = X509V3_EXT_conf_nid(nullptr, &context, NID_basic_constraints, "critical,CA:TRUE");
		X509_add_ext(out.certificate, ca, -1);
		X509_EXTENSION_free(ca);
	}
	X509_sign(out.certificate, issuer ? issuer->key : out.key, EVP_sha256());
}

/* The files of one test run: CA, server, a client signed by the CA, one signed by another CA. */
struct Certificates {
	std::string dir;
	KeyAndCertificate ca, server, client, stranger_ca, stranger;

	Certificates()
	{
		char pattern[] = "/tmp/tls_session_test.XXXXXX";
		dir = mkdtemp(pattern);
		make_certificate(ca, "test CA", nullptr);
		make_certificate(server, "localhost", &ca);
		make_certificate(client, "alice", &ca);
		make_certificate(stranger_ca, "other CA", nullptr);
		make_certificate(stranger, "alice", &stranger_ca);
		write_certificate("ca.crt", ca);
		write_certificate("server.crt", server);
		write_key("server.key", server, 0600);
		write_key("loose.key", server, 0644);
	}
	~Certificates() { std::system(("rm -rf '" + dir + "'").c_str()); }

	std::string path(const char *name) const { return dir + "/" + name; }
	void write_certificate(const char *name, const KeyAndCertificate &k)
	{
		FILE *f = fopen(path(name).c_str(), "w");
		PEM_write_X509(f, k.certificate);
		fclose(f);
	}
	void write_key(const char *name, const KeyAndCertificate &k, mode_t mode)
	{
		FILE *f = fopen(path(name).c_str(), "w");
		PEM_write_PrivateKey(f, k.key, nullptr, nullptr, 0, nullptr, nullptr);
		fclose(f);
		chmod(path(name).c_str(), mode);
	}
	TlsConfig config(TlsClientAuth auth = TlsClientAuth::Optional) const
	{
		TlsConfig c;
		c.cert_file = path("server.crt");
		c.key_file = path("server.key");
		c.ca_file = path("ca.crt");
		c.client_auth = auth;
		return c;
	}
};

inline Certificates &certificates()
{
	static Certificates files;
	return files;
}

} // namespace resp_test

/*
 * password_check.h — checks passwords against PostgreSQL's stored secrets (SCRAM-SHA-256 and
 * md5) on a thread of its own, so that a SCRAM verification (thousands of HMAC rounds,
 * milliseconds) never stalls the worker's event loop. No PostgreSQL header: the thread calls
 * no PostgreSQL function, and the unit tests drive it alone.
 *
 * The loop thread submits a check under a ticket and polls for its result; a check whose secret
 * is missing, or of a kind the method refuses, still costs one SCRAM verification with a mock
 * salt (as PostgreSQL's own login does), so how long AUTH takes tells nothing about which roles
 * exist. Passwords are wiped from memory as soon as they are checked.
 */
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace local_cache::resp {

/* How a stored secret may be used (the pg_hba.conf method). */
enum class PasswordMethod {
	Password,   /* "password" and "md5": a SCRAM or md5 secret */
	ScramOnly,  /* "scram-sha-256": a SCRAM secret only */
};

/*
 * A password or a stored secret. Its bytes are overwritten before the memory that holds them is
 * freed or reused — when it is destroyed, cleared, assigned over or moved from — so no path can
 * forget the wipe. A move copies the bytes and wipes the source (a moved std::string may keep
 * them in its small buffer); growing reserves first, so no reallocation frees them unwiped.
 */
class Secret {
public:
	Secret() = default;
	explicit Secret(std::string_view text) : text_(text) {}
	Secret(const Secret &) = delete;
	Secret &operator=(const Secret &) = delete;
	Secret(Secret &&other) : text_(other.text_) { other.clear(); }
	Secret &operator=(Secret &&other)
	{
		if (this != &other) {
			clear();
			text_ = other.text_;
			other.clear();
		}
		return *this;
	}
	~Secret() { clear(); }

	void clear();
	const std::string &text() const { return text_; }
	bool empty() const { return text_.empty(); }
	/* `size` zero bytes for a C function to write into. */
	char *buffer(size_t size);
	/* Keeps the first `size` bytes; the others are wiped. */
	void truncate(size_t size);
	void append(std::string_view more);

private:
	std::string text_;
};

struct PasswordCheck {
	Secret secret;   /* pg_authid.rolpassword; empty: no password (or no such role) */
	Secret password; /* as the client sent it, SASLprep'd by the caller for SCRAM */
	std::string user;     /* md5 secrets are salted with the role name */
	PasswordMethod method = PasswordMethod::Password;
};

/* One verification, on the calling thread (the checker's thread calls it; so do the tests). */
bool verify_password(const PasswordCheck &check);

/* PBKDF2 rounds computed so far by this process: what a check costs, counted rather than timed. */
uint64_t password_hash_rounds();

class PasswordChecker {
public:
	PasswordChecker();
	~PasswordChecker();
	PasswordChecker(const PasswordChecker &) = delete;
	PasswordChecker &operator=(const PasswordChecker &) = delete;

	/* Queues a check (its secrets are wiped when it is done or dropped). */
	void submit(uint64_t ticket, PasswordCheck check);
	/* Whether the check of `ticket` is done; then *ok says whether the password matched and the
	 * ticket is forgotten. */
	bool take_result(uint64_t ticket, bool *ok);
	/* Forgets a ticket whose connection went away (its check, if queued, is dropped). */
	void cancel(uint64_t ticket);

private:
	void run();

	std::mutex mutex_;
	std::condition_variable wake_;
	std::deque<std::pair<uint64_t, PasswordCheck>> queue_;
	std::unordered_map<uint64_t, bool> results_;
	std::unordered_set<uint64_t> cancelled_;
	bool stopping_ = false;
	std::thread thread_;
};

} // namespace local_cache::resp

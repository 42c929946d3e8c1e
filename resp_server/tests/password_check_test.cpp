/*
 * password_check_test.cpp — password verification against secrets PostgreSQL 15 made
 * (CREATE ROLE ... PASSWORD 'pencil' with password_encryption scram-sha-256 and md5), and the
 * checker's thread.
 */
#include "resp_server/auth/password_check.h"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

using namespace local_cache::resp;

namespace {

const std::string kScram =
	"SCRAM-SHA-256$4096:IHv3AxccfzfSp2q7Nob4Wg==$/n4w3xZxVOzxbsOkj7Mwu+pcssESWEZLi9CxLBMbjOE=:"
	"oQaeeg87TSG4iVRcXhHK13P5xOb2PeKp7wDcZdQTNDc=";
const std::string kMd5 = "md5d3ebb44626804ca107f3d0cc8e7c93cc"; /* role vec_md5 */

PasswordCheck check(std::string secret, std::string password, std::string user = "vec_md5",
					PasswordMethod method = PasswordMethod::Password)
{
	return PasswordCheck{Secret(secret), Secret(password), std::move(user), method};
}

} // namespace

BOOST_AUTO_TEST_SUITE(password_check)

BOOST_AUTO_TEST_CASE(scram_secrets)
{
	BOOST_TEST(verify_password(check(kScram, "pencil")));
	BOOST_TEST(!verify_password(check(kScram, "pencil2")));
	BOOST_TEST(!verify_password(check(kScram, "")));
	BOOST_TEST(verify_password(check(kScram, "pencil", "", PasswordMethod::ScramOnly)));
}

BOOST_AUTO_TEST_CASE(md5_secrets)
{
	BOOST_TEST(verify_password(check(kMd5, "pencil")));
	BOOST_TEST(!verify_password(check(kMd5, "pencil", "other_user")));
	BOOST_TEST(!verify_password(check(kMd5, "Pencil")));
	/* scram-sha-256 in pg_hba.conf refuses an md5 secret, as PostgreSQL does. */
	BOOST_TEST(!verify_password(check(kMd5, "pencil", "vec_md5", PasswordMethod::ScramOnly)));
}

BOOST_AUTO_TEST_CASE(no_or_malformed_secret_never_matches)
{
	BOOST_TEST(!verify_password(check("", "")));
	BOOST_TEST(!verify_password(check("", "pencil")));
	BOOST_TEST(!verify_password(check("SCRAM-SHA-256$4096:bad$x:y", "pencil")));
	BOOST_TEST(!verify_password(check("SCRAM-SHA-256$99999999999999:IHv3AxccfzfSp2q7Nob4Wg==$a:b", "pencil")));
	BOOST_TEST(!verify_password(check("md5", "pencil")));
	BOOST_TEST(!verify_password(check("pencil", "pencil")));
}

BOOST_AUTO_TEST_CASE(every_check_costs_a_scram_verification)
{
	/* An unknown role (no secret), an md5 secret, a refused md5 secret and a wrong SCRAM
	 * password all cost the same PBKDF2 work: how long AUTH takes tells nothing. */
	auto rounds = [](const PasswordCheck &c) {
		uint64_t before = password_hash_rounds();
		verify_password(c);
		return password_hash_rounds() - before;
	};
	BOOST_TEST(rounds(check(kScram, "wrong")) == 4096u);
	BOOST_TEST(rounds(check("", "wrong")) == 4096u);
	BOOST_TEST(rounds(check(kMd5, "wrong")) == 4096u);
	BOOST_TEST(rounds(check(kMd5, "pencil", "vec_md5", PasswordMethod::ScramOnly)) == 4096u);
}

BOOST_AUTO_TEST_CASE(checker_thread)
{
	PasswordChecker checker;
	checker.submit(1, check(kScram, "pencil"));
	checker.submit(2, check(kScram, "wrong"));
	checker.submit(3, check(kScram, "pencil"));
	checker.cancel(3);
	bool ok1 = false, ok2 = true, done1 = false, done2 = false;
	for (int i = 0; i < 2000 && !(done1 && done2); i++) {
		done1 = done1 || checker.take_result(1, &ok1);
		done2 = done2 || checker.take_result(2, &ok2);
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	BOOST_TEST(done1);
	BOOST_TEST(done2);
	BOOST_TEST(ok1);
	BOOST_TEST(!ok2);
	bool ok3;
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	BOOST_TEST(!checker.take_result(3, &ok3)); /* cancelled */
	BOOST_TEST(!checker.take_result(1, &ok1)); /* taken once */
}

BOOST_AUTO_TEST_SUITE_END()

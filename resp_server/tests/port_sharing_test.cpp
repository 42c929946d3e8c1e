/*
 * port_sharing_test.cpp — only_ours_listen over a procfs of the test's own making: the
 * listening sockets of /proc/net/tcp and tcp6, and the descriptors of "our" pids.
 */
#include "resp_server/net/port_sharing.h"

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace local_cache::resp;

namespace {

constexpr const char *kHeader =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

/* A procfs root in a fresh temporary directory. */
struct FakeProc {
	std::string root;
	FakeProc()
	{
		char dir[] = "/tmp/port_sharing_test.XXXXXX";
		root = mkdtemp(dir);
		mkdir((root + "/net").c_str(), 0700);
		std::ofstream(root + "/net/tcp") << kHeader;
		std::ofstream(root + "/net/tcp6") << kHeader;
	}
	~FakeProc() { std::system(("rm -rf " + root).c_str()); }
	/* A socket in state `state` (0A: listening) at hex address:port, with this inode. */
	void socket(const char *table, const std::string &address, int port, const char *state, unsigned long inode)
	{
		char line[256];
		snprintf(line, sizeof(line), "   0: %s:%04X 00000000:0000 %s 00000000:00000000 00:00000000 00000000   101        0 %lu 1 0 100 0 0 10 0\n",
				 address.c_str(), port, state, inode);
		std::ofstream(root + "/net/" + table, std::ios::app) << line;
	}
	/* Process `pid` holds the socket `inode` as descriptor `fd`. */
	void holds(pid_t pid, int fd, unsigned long inode)
	{
		std::string dir = root + "/" + std::to_string(pid);
		mkdir(dir.c_str(), 0700);
		mkdir((dir + "/fd").c_str(), 0700);
		BOOST_REQUIRE(symlink(("socket:[" + std::to_string(inode) + "]").c_str(), (dir + "/fd/" + std::to_string(fd)).c_str()) == 0);
	}
};

sockaddr_in v4(const char *address, int port)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(uint16_t(port));
	inet_pton(AF_INET, address, &a.sin_addr);
	return a;
}

const sockaddr *as_sockaddr(const sockaddr_in &a)
{
	return reinterpret_cast<const sockaddr *>(&a);
}

OurProcesses pids(std::vector<pid_t> list)
{
	return [list] { return list; };
}

} // namespace

BOOST_AUTO_TEST_SUITE(port_sharing)

BOOST_AUTO_TEST_CASE(a_port_nobody_listens_on_is_free)
{
	FakeProc proc;
	proc.socket("tcp", "0100007F", 6380, "0A", 11); /* another port */
	proc.socket("tcp", "0100007F", 6379, "01", 12); /* a connection, not a listener */
	BOOST_TEST(only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100}), proc.root.c_str()));
}

BOOST_AUTO_TEST_CASE(our_workers_listeners_are_ours_anyone_elses_are_not)
{
	FakeProc proc;
	proc.socket("tcp", "0100007F", 6379, "0A", 21);
	proc.holds(100, 7, 21);
	BOOST_TEST(only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100, 101}), proc.root.c_str()));
	proc.socket("tcp", "0100007F", 6379, "0A", 22);
	proc.holds(200, 7, 22); /* another server's worker */
	BOOST_TEST(!only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100, 101}), proc.root.c_str()));
	BOOST_TEST(only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100, 200}), proc.root.c_str()));
}

BOOST_AUTO_TEST_CASE(addresses_overlap_when_equal_or_either_is_the_wildcard)
{
	FakeProc proc;
	proc.socket("tcp", "00000000", 6379, "0A", 31); /* 0.0.0.0 */
	proc.holds(200, 3, 31);
	BOOST_TEST(!only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100}), proc.root.c_str()));
	FakeProc other;
	other.socket("tcp", "0200007F", 6379, "0A", 32); /* 127.0.0.2 */
	other.holds(200, 3, 32);
	BOOST_TEST(only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100}), other.root.c_str()));
	BOOST_TEST(!only_ours_listen(as_sockaddr(v4("0.0.0.0", 6379)), pids({100}), other.root.c_str()));
}

BOOST_AUTO_TEST_CASE(ipv6_listeners_are_read_from_tcp6)
{
	FakeProc proc;
	proc.socket("tcp6", "00000000000000000000000001000000", 6379, "0A", 41); /* ::1 */
	proc.holds(200, 3, 41);
	sockaddr_in6 a{};
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(6379);
	inet_pton(AF_INET6, "::1", &a.sin6_addr);
	BOOST_TEST(!only_ours_listen(reinterpret_cast<const sockaddr *>(&a), pids({100}), proc.root.c_str()));
	BOOST_TEST(only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), pids({100}), proc.root.c_str()));
}

/*
 * Two workers of one server start together: worker 101 records itself and listens while worker
 * 100 checks the port. Asked for the workers before the listeners were read, worker 100 knew 101
 * not yet, saw its listener, and refused the port of its own server for 5 s. The workers are
 * asked after the listeners were read: a listener seen then belongs to a worker recorded already.
 */
BOOST_AUTO_TEST_CASE(a_sibling_that_starts_listening_during_the_check_is_not_another_server)
{
	FakeProc proc;
	bool asked = false;
	OurProcesses recorded_so_far = [&] {
		asked = true;
		std::vector<pid_t> now{100}; /* 101 records itself after this answer, then listens */
		proc.holds(101, 5, 51);
		proc.socket("tcp", "0100007F", 6379, "0A", 51);
		return now;
	};
	proc.socket("tcp", "0100007F", 6379, "0A", 50);
	proc.holds(100, 4, 50);
	BOOST_TEST(only_ours_listen(as_sockaddr(v4("127.0.0.1", 6379)), recorded_so_far, proc.root.c_str()));
	BOOST_TEST(asked);
}

BOOST_AUTO_TEST_SUITE_END()

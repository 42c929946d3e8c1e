/*
 * port_sharing.cpp — who else listens on a RESP port (port_sharing.h).
 */
#include "resp_server/net/port_sharing.h"

#include <dirent.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>

namespace local_cache::resp {

namespace {

constexpr const char *kListenState = "0A";

/* The 4 or 16 address bytes of /proc/net/tcp's hex text (each 32-bit word in host order). */
std::string address_bytes(const std::string &hex)
{
	std::string bytes;
	for (size_t word = 0; word + 8 <= hex.size(); word += 8) {
		uint32_t value = uint32_t(std::stoul(hex.substr(word, 8), nullptr, 16));
		bytes.append(reinterpret_cast<const char *>(&value), 4);
	}
	return bytes;
}

bool is_wildcard(const std::string &bytes)
{
	return bytes.find_first_not_of('\0') == std::string::npos;
}

/* The inodes of the sockets listening on `port` at an address overlapping `ours`. */
std::unordered_set<unsigned long> listeners(const std::string &table, const std::string &ours, int port)
{
	std::unordered_set<unsigned long> inodes;
	std::ifstream in(table);
	std::string line;
	std::getline(in, line); /* the header */
	while (std::getline(in, line)) {
		std::istringstream fields(line);
		std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
		unsigned long inode = 0;
		if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
			continue;
		size_t colon = local.find(':');
		if (state != kListenState || colon == std::string::npos || std::stoi(local.substr(colon + 1), nullptr, 16) != port)
			continue;
		std::string bytes = address_bytes(local.substr(0, colon));
		if (bytes == ours || is_wildcard(bytes) || is_wildcard(ours))
			inodes.insert(inode);
	}
	return inodes;
}

/* The socket inodes among the open descriptors of `pid`. */
void socket_inodes(const std::string &proc, pid_t pid, std::unordered_set<unsigned long> &out)
{
	std::string dir = proc + "/" + std::to_string(pid) + "/fd";
	DIR *fds = opendir(dir.c_str());
	if (fds == nullptr)
		return;
	while (dirent *entry = readdir(fds)) {
		char target[64];
		std::string link = dir + "/" + entry->d_name;
		ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
		unsigned long inode;
		if (n > 0 && (target[n] = '\0', sscanf(target, "socket:[%lu]", &inode) == 1))
			out.insert(inode);
	}
	closedir(fds);
}

} // namespace

bool only_ours_listen(const sockaddr *address, const OurProcesses &our_processes, const char *proc)
{
	std::string root(proc);
	std::unordered_set<unsigned long> found;
	if (address->sa_family == AF_INET) {
		const sockaddr_in *v4 = reinterpret_cast<const sockaddr_in *>(address);
		found = listeners(root + "/net/tcp", std::string(reinterpret_cast<const char *>(&v4->sin_addr), 4),
						  ntohs(v4->sin_port));
	} else if (address->sa_family == AF_INET6) {
		const sockaddr_in6 *v6 = reinterpret_cast<const sockaddr_in6 *>(address);
		found = listeners(root + "/net/tcp6", std::string(reinterpret_cast<const char *>(&v6->sin6_addr), 16),
						  ntohs(v6->sin6_port));
	}
	if (found.empty())
		return true;
	std::unordered_set<unsigned long> ours;
	for (pid_t pid : our_processes())
		socket_inodes(root, pid, ours);
	for (unsigned long inode : found)
		if (ours.count(inode) == 0)
			return false;
	return true;
}

} // namespace local_cache::resp

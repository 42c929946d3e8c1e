/*
 * write_pool.cpp — a RESP worker's side of the write workers (write_pool.h): claiming one,
 * sending a write over its socket, taking the reply back to the connection that waits for it.
 */
#include "resp_server/clients/write_pool.h"

#include "resp_server/clients/server.h"
#include "resp_server/commands/write_job.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace local_cache::resp {

namespace {

/* A job frame bigger than this is not kept for the next one. */
constexpr size_t kKeptFrameBytes = 1 << 20;
/* How long sending a job may wait for the write worker to take its bytes. */
constexpr int kSendTimeoutMs = 10000;

const char kWriteWorkerEnded[] =
	"-ERR the write worker running this command ended; whether it committed is not known\r\n";

} // namespace

struct WritePool::Link {
	WritePool *pool;
	int number;
	int fd = -1;
	FdWatch watch;        /* while fd is open */
	bool closing = false; /* the watch is closing: the descriptor is closed once it has */
	uint64_t session = 0; /* the connection whose write it runs; 0: none */
	std::string input;    /* reply bytes read so far */
};

socklen_t write_worker_address(int postmaster_pid, int number, sockaddr_un *address)
{
	memset(address, 0, sizeof(*address));
	address->sun_family = AF_UNIX;
	/* Abstract (a leading NUL): no file to clean up; named after the postmaster, one server's. */
	int length = snprintf(address->sun_path + 1, sizeof(address->sun_path) - 1, "local_cache.%d.write.%d",
						  postmaster_pid, number);
	return socklen_t(offsetof(sockaddr_un, sun_path) + 1 + size_t(length));
}

void on_link_readable(WritePool::Link *link)
{
	link->pool->take_reply(*link);
}

namespace {

/* The link's watch has closed: so does its descriptor. */
void close_link(WritePool::Link *link)
{
	link->watch.close([link] {
		::close(link->fd);
		link->fd = -1;
		link->closing = false;
	});
}

} // namespace

WritePool::WritePool(Server *server, WriteWorkers &workers, int write_workers) : server_(server), workers_(workers)
{
	for (int i = 0; i < write_workers; i++) {
		links_.push_back(std::make_unique<Link>());
		links_.back()->pool = this;
		links_.back()->number = i;
	}
}

WritePool::~WritePool() = default;

WriteOffload::Outcome WritePool::run(const Request &request, const Session &session, ReplyBuffer &out)
{
	if (auto done = done_.find(session.id); done != done_.end()) {
		out.append(done->second.reply);
		Outcome outcome{Status::Done, done->second.duration_us, std::move(done->second.tracked_keys),
						std::move(done->second.uncaptured_keys)};
		done_.erase(done);
		return outcome;
	}
	bool any_running = false;
	if (in_flight(session.id))
		return Outcome{Status::Pending, 0};
	for (const auto &link : links_) {
		if (!workers_.running(link->number))
			continue;
		any_running = true;
		if (link->session != 0 || link->closing || !workers_.claim(link->number))
			continue;
		if (send_job(*link, request, session))
			return Outcome{Status::Pending, 0};
		workers_.release(link->number);
	}
	if (!any_running)
		return Outcome{Status::RunHere, 0};
	/* Every write worker is busy: the write runs when one is free (finish), or at the latest from
	 * the worker's retry timer. */
	if (std::find(waiting_.begin(), waiting_.end(), session.id) == waiting_.end())
		waiting_.push_back(session.id);
	return Outcome{Status::Pending, 0};
}

bool WritePool::in_flight(uint64_t session_id) const
{
	for (const auto &link : links_)
		if (link->session == session_id)
			return true;
	return false;
}

bool WritePool::send_job(Link &link, const Request &request, const Session &session)
{
	if (link.fd < 0) {
		sockaddr_un address;
		socklen_t length = workers_.address(link.number, &address);
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return false;
		/* A local connect: done at once, or refused (the write worker is not listening yet). */
		Link *watched = &link;
		if (connect(fd, reinterpret_cast<sockaddr *>(&address), length) != 0 || fcntl(fd, F_SETFL, O_NONBLOCK) != 0 ||
			!link.watch.open(server_->loop, fd, [watched] { on_link_readable(watched); })) {
			::close(fd);
			return false;
		}
		link.fd = fd;
	}
	frame_.clear();
	encode_write_job(request, session, frame_);
	if (!send_frame(link.fd, frame_, kSendTimeoutMs)) {
		drop(link, "could not send it a write");
		return false;
	}
	if (frame_.capacity() > kKeptFrameBytes)
		std::string().swap(frame_);
	link.session = session.id;
	return true;
}

void WritePool::take_reply(Link &link)
{
	if (!receive_available(link.fd, link.input)) {
		drop(link, "it ended");
		return;
	}
	while (std::optional<size_t> size = complete_write_frame(link.input)) {
		std::string_view payload = std::string_view(link.input).substr(kWriteFrameHeader, *size - kWriteFrameHeader);
		WriteReply reply;
		if (link.session == 0 || !decode_write_reply(payload, &reply)) {
			drop(link, "it sent a reply for no write");
			return;
		}
		Done done{std::string(reply.reply), reply.duration_us, std::move(reply.tracked_keys),
				  std::move(reply.uncaptured_keys)};
		link.input.erase(0, *size);
		finish(link, std::move(done));
	}
}

void WritePool::finish(Link &link, Done done)
{
	uint64_t session = link.session;
	link.session = 0;
	workers_.release(link.number);
	if (server_->connections_by_id.count(session) > 0)
		done_[session] = std::move(done);
	/* The connection's request runs again and takes the reply; then the writes waiting for a
	 * write worker, in the order they came, until one has taken the one now free. */
	retry(session);
	/* Each at most once: one that finds every write worker busy again (another RESP worker's
	 * write took this one) goes back to the end of the queue. */
	for (size_t n = waiting_.size(); n > 0 && link.session == 0 && !link.closing; n--) {
		uint64_t next = waiting_.front();
		waiting_.pop_front();
		retry(next);
	}
}

void WritePool::retry(uint64_t session_id)
{
	auto found = server_->connections_by_id.find(session_id);
	if (found != server_->connections_by_id.end())
		retry_connection(found->second);
}

void WritePool::drop(Link &link, const char *why)
{
	if (link.fd < 0 || link.closing)
		return;
	log_line(server_, "local_cache RESP worker %d: closing its link to write worker %d: %s", server_->worker_number,
			 link.number, why);
	link.closing = true;
	link.input.clear();
	link.watch.stop();
	close_link(&link);
	if (link.session != 0)
		finish(link, Done{kWriteWorkerEnded, 0, {}});
}

void WritePool::close()
{
	for (const auto &link : links_) {
		if (link->fd >= 0 && !link->closing) {
			link->closing = true;
			link->watch.stop();
			close_link(link.get());
		}
	}
}

} // namespace local_cache::resp

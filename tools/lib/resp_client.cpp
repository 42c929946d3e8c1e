// tools/lib/resp_client.cpp: owns the sockets of RespClient (resp_client.h): connecting,
// blocking and non-blocking sends and receives, and the time limit of a blocking call.
#include "tools/lib/resp_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace tooling {

namespace {

std::runtime_error sys_error(const std::string &what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

}  // namespace

RespClient::RespClient(std::string host, int port, std::string unix_path, int timeout_ms)
    : host_(std::move(host)), unix_path_(std::move(unix_path)), port_(port), timeout_ms_(timeout_ms) {}

RespClient RespClient::tcp(std::string host, int port, int timeout_ms) {
    return RespClient(std::move(host), port, "", timeout_ms);
}

RespClient RespClient::unix_socket(std::string path, int timeout_ms) { return RespClient("", 0, std::move(path), timeout_ms); }

RespClient::~RespClient() { close(); }

RespClient::RespClient(RespClient &&o) noexcept
    : host_(std::move(o.host_)), unix_path_(std::move(o.unix_path_)), port_(o.port_), timeout_ms_(o.timeout_ms_),
      fd_(std::exchange(o.fd_, -1)), out_(std::move(o.out_)), in_(std::move(o.in_)), in_pos_(o.in_pos_) {}

RespClient &RespClient::operator=(RespClient &&o) noexcept {
    if (this != &o) {
        close();
        host_ = std::move(o.host_);
        unix_path_ = std::move(o.unix_path_);
        port_ = o.port_;
        timeout_ms_ = o.timeout_ms_;
        fd_ = std::exchange(o.fd_, -1);
        out_ = std::move(o.out_);
        in_ = std::move(o.in_);
        in_pos_ = o.in_pos_;
    }
    return *this;
}

std::string RespClient::address() const {
    return unix_path_.empty() ? host_ + ":" + std::to_string(port_) : unix_path_;
}

void RespClient::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    out_.clear();
    in_.clear();
    in_pos_ = 0;
}

void RespClient::connect() {
    close();
    if (!unix_path_.empty()) {
        sockaddr_un a{};
        if (unix_path_.size() >= sizeof a.sun_path) throw std::runtime_error("RESP: socket path too long: " + unix_path_);
        fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd_ < 0) throw sys_error("RESP: socket");
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, unix_path_.c_str(), unix_path_.size() + 1);
        if (::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
            std::runtime_error e = sys_error("connect to " + address());
            close();
            throw e;
        }
    } else {
        addrinfo hints{}, *found = nullptr;
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
        if (rc != 0) throw std::runtime_error("connect to " + address() + ": " + gai_strerror(rc));
        std::string last = "no address";
        for (addrinfo *ai = found; ai; ai = ai->ai_next) {
            fd_ = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
            if (fd_ < 0) continue;
            if (::connect(fd_, ai->ai_addr, ai->ai_addrlen) == 0) break;
            last = std::strerror(errno);
            ::close(fd_);
            fd_ = -1;
        }
        ::freeaddrinfo(found);
        if (fd_ < 0) throw std::runtime_error("connect to " + address() + ": " + last);
        int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (timeout_ms_ > 0) {  // a blocked send must not hang either (requests are small, so it never should)
        timeval tv{timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000};
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
}

void RespClient::send_all(const std::string &bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
        ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw sys_error("RESP send to " + address());
        off += static_cast<size_t>(n);
    }
}

void RespClient::send(const std::vector<std::string> &args) {
    if (fd_ < 0) connect();
    send_all(encode_command(args));
}

bool RespClient::wait_readable(long left_ms) {
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, left_ms < 0 ? -1 : static_cast<int>(left_ms));
    if (n < 0 && errno != EINTR) throw sys_error("RESP poll");
    return n > 0;
}

Reply RespClient::call(const std::vector<std::string> &args) {
    try {
        if (fd_ < 0) connect();
        if (buffered()) throw std::runtime_error("RESP: unread bytes before a request: " + std::string(input().substr(0, 200)));
        in_.clear();
        in_pos_ = 0;
        send_all(encode_command(args));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
        Reply r;
        for (;;) {
            if (take(&r) == ParseStatus::Complete) break;
            long left = -1;
            if (timeout_ms_ > 0) {
                left = static_cast<long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
                if (left <= 0)
                    throw std::runtime_error("RESP: no complete reply within " + std::to_string(timeout_ms_) +
                                             " ms (got so far: " + std::string(input().substr(0, 200)) + ")");
            }
            if (!wait_readable(left)) continue;
            char tmp[65536];
            ssize_t got = ::recv(fd_, tmp, sizeof tmp, 0);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got < 0) throw sys_error("RESP recv from " + address());
            if (got == 0) throw std::runtime_error("RESP: the server " + address() + " closed the connection");
            in_.append(tmp, static_cast<size_t>(got));
        }
        if (buffered())
            throw std::runtime_error("RESP: " + std::to_string(buffered()) +
                                     " unexpected bytes after the reply: " + std::string(input().substr(0, 200)));
        return r;
    } catch (...) {
        close();
        throw;
    }
}

void RespClient::auth(const std::string &user, const std::string &password) {
    Reply r = call({"AUTH", user, password});
    if (!r.is_simple("OK"))
        throw std::runtime_error("AUTH " + user + " on " + address() + ": " + (r.is_error() ? r.text : "unexpected reply"));
}

bool RespClient::flush() {
    while (!out_.empty()) {
        ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
            if (errno == EINTR) continue;
            throw sys_error("RESP send");
        }
        out_.erase(0, static_cast<size_t>(n));
    }
    return true;
}

void RespClient::receive() {
    if (in_pos_ == in_.size()) {
        in_.clear();
        in_pos_ = 0;
    }
    char tmp[65536];
    for (;;) {
        ssize_t n = ::recv(fd_, tmp, sizeof tmp, MSG_DONTWAIT);
        if (n > 0) {
            in_.append(tmp, static_cast<size_t>(n));
            continue;
        }
        if (n == 0) throw std::runtime_error("RESP server closed the connection");
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR) continue;
        throw sys_error("RESP recv");
    }
}

ParseStatus RespClient::take(Reply *out, ReplyShape *shape) {
    std::string error;
    size_t pos = in_pos_;
    ParseStatus st = parse_reply(in_, &pos, out, shape, &error);
    if (st == ParseStatus::Malformed) throw std::runtime_error("RESP protocol error from " + address() + ": " + error);
    if (st == ParseStatus::Complete) {
        in_pos_ = pos;
        if (in_pos_ == in_.size()) {
            in_.clear();
            in_pos_ = 0;
        }
    }
    return st;
}

}  // namespace tooling

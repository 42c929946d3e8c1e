// tools/lib/resp_client.h: owns the RESP connection of the C++ tools: connect by host and port
// (TCP_NODELAY) or by unix socket, blocking request/reply with an optional time limit, AUTH, and
// the non-blocking pieces a poll() loop drives (queue, flush, receive, take). Errors throw
// std::runtime_error; a blocking call that fails closes the connection, so the next one
// reconnects instead of reading a stream that is out of step.
#pragma once

#include "tools/lib/resp_reply.h"

#include <string>
#include <vector>

namespace tooling {

class RespClient {
  public:
    // TCP to host:port; timeout_ms bounds a blocking call's wait for its reply (0: no bound).
    // Nothing connects before the first call or connect().
    static RespClient tcp(std::string host, int port, int timeout_ms = 0);
    // A unix socket.
    static RespClient unix_socket(std::string path, int timeout_ms = 0);
    ~RespClient();
    RespClient(RespClient &&other) noexcept;
    RespClient &operator=(RespClient &&other) noexcept;
    RespClient(const RespClient &) = delete;
    RespClient &operator=(const RespClient &) = delete;

    void connect();  // a call connects on first use; this connects now
    void close();
    bool connected() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    std::string address() const;  // host:port or the socket's path, for messages

    // Sends one request and reads its reply; throws when no reply came, when it is malformed,
    // or when bytes follow it.
    Reply call(const std::vector<std::string> &args);
    // AUTH user password; throws unless +OK.
    void auth(const std::string &user, const std::string &password);
    // Sends a request without waiting for its reply (blocking send).
    void send(const std::vector<std::string> &args);

    // Non-blocking use. queue() appends a request to the output; flush() sends what the socket
    // takes now and says whether everything went; receive() appends what the socket holds now
    // (throws when the server closed the connection); take() reads one reply from what was
    // received (out and shape as in parse_reply), consuming it when Complete; Malformed throws.
    void queue(const std::vector<std::string> &args) { append_command(out_, args); }
    bool flush();
    bool output_pending() const { return !out_.empty(); }
    void receive();
    ParseStatus take(Reply *out, ReplyShape *shape = nullptr);
    size_t buffered() const { return in_.size() - in_pos_; }
    std::string_view input() const { return std::string_view(in_).substr(in_pos_); }

  private:
    RespClient(std::string host, int port, std::string unix_path, int timeout_ms);
    void send_all(const std::string &bytes);
    bool wait_readable(long deadline_ms_left);

    std::string host_, unix_path_;
    int port_ = 0, timeout_ms_ = 0, fd_ = -1;
    std::string out_, in_;
    size_t in_pos_ = 0;
};

}  // namespace tooling

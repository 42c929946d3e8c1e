/*
 * write_job.h — a RESP write on its way to a write worker, and its reply on the way back
 * (resp_server/clients/write_pool.cpp sends it, resp_server/write_worker.cpp runs it): the
 * request's arguments and what of the connection's session a write command reads (its client id,
 * role and protocol; for EXEC, the MULTI queue, the WATCHed versions and the CLIENT TRACKING mode
 * its reads are noted by), then the reply's bytes, how long the command ran, and the keys its reads noted
 * for CLIENT TRACKING. A frame is its payload's length (8 bytes) then the payload; numbers are
 * little-endian. No PostgreSQL header: unit-tested alone (tests/write_offload_test.cpp).
 */
#pragma once

#include "resp_server/commands/data_source.h"
#include "resp_server/protocol/request_parser.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

constexpr size_t kWriteFrameHeader = 8;

/* Appends the frame of `request`, run for `session`, to `out`. */
void encode_write_job(const Request &request, const Session &session, std::string &out);

/* A job as the write worker runs it: a session of its own and the request's arguments, which
 * point into the payload it was decoded from. */
struct WriteJob {
	Session session;
	std::vector<std::string_view> argv;
	Request request() const { return Request{argv.data(), argv.size()}; }
};
/* Decodes a job frame's payload; false if it is not one. */
bool decode_write_job(std::string_view payload, WriteJob *job);

/* A write worker's answer: the reply, how long the command ran, the keys it noted. */
struct WriteReply {
	std::string_view reply; /* into the payload it was decoded from */
	int64_t duration_us = 0;
	std::vector<std::string> tracked_keys;
	std::vector<std::string> uncaptured_keys; /* TrackingTable::take_uncaptured_keys */
};
/* Appends the frame of a reply. */
void encode_write_reply(const WriteReply &reply, std::string &out);
/* Decodes a reply frame's payload; false if it is not one. */
bool decode_write_reply(std::string_view payload, WriteReply *reply);

/* The size of the frame `bytes` begins with (header included) once all of it is there. */
std::optional<size_t> complete_write_frame(std::string_view bytes);

/* Both ends' socket I/O. receive_available appends what the socket holds now (without
 * waiting) to `input`; false when the peer closed or the socket failed. send_frame sends all of
 * `frame`, waiting up to timeout_ms whenever the socket is full; false when the peer is gone or
 * does not take it. */
bool receive_available(int fd, std::string &input);
bool send_frame(int fd, std::string_view frame, int timeout_ms);

} // namespace local_cache::resp

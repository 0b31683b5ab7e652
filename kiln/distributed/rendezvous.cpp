// The TCP rendezvous of launches without mpirun: rank 0 listens on the coordinator's port,
// every other rank connects and sends (rank, size, payload); rank 0 answers with all the
// payloads. Used once per process, to share NCCL's unique id (bootstrap only: the data
// itself travels through NCCL).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "kiln/distributed/backend.h"
#include "kiln/utils.h"

namespace kiln::distributed::detail {

namespace {

using Clock = std::chrono::steady_clock;

int parse_int(const char* name, const char* value) {
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (!*value || *end || v < 0 || v > (1 << 24)) {
    throw std::invalid_argument(
        msg("[distributed.init] ", name, "='", value, "' is not a non-negative integer."));
  }
  return static_cast<int>(v);
}

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

// Waits for `events` on fd until the deadline; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  while (true) {
    double left = seconds_left(deadline);
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min(left * 1000, 1000.0)) + 1);
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

void write_all(int fd, const void* data, size_t n, Clock::time_point deadline, const char* what) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    if (!wait_fd(fd, POLLOUT, deadline))
      throw std::runtime_error(msg("[distributed.init] Timed out sending ", what, "."));
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0)
      throw std::runtime_error(
          msg("[distributed.init] Sending ", what, " failed: ", std::strerror(errno), "."));
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void read_all(int fd, void* data, size_t n, Clock::time_point deadline, const char* what) {
  char* p = static_cast<char*>(data);
  while (n) {
    if (!wait_fd(fd, POLLIN, deadline))
      throw std::runtime_error(msg("[distributed.init] Timed out receiving ", what, "."));
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k == 0)
      throw std::runtime_error(
          msg("[distributed.init] The peer closed the connection while sending ", what,
              " (did it fail?)."));
    if (k < 0)
      throw std::runtime_error(
          msg("[distributed.init] Receiving ", what, " failed: ", std::strerror(errno), "."));
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void write_blob(int fd, const std::string& s, Clock::time_point deadline, const char* what) {
  uint64_t n = s.size();
  write_all(fd, &n, 8, deadline, what);
  write_all(fd, s.data(), s.size(), deadline, what);
}

std::string read_blob(int fd, Clock::time_point deadline, const char* what) {
  uint64_t n = 0;
  read_all(fd, &n, 8, deadline, what);
  if (n > (1u << 24))
    throw std::runtime_error(msg("[distributed.init] Malformed ", what, " (", n, " bytes)."));
  std::string s(n, '\0');
  read_all(fd, s.data(), n, deadline, what);
  return s;
}

addrinfo* resolve(const LaunchEnv& env, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string port = std::to_string(env.port);
  int rc = ::getaddrinfo(passive ? nullptr : env.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    throw std::runtime_error(msg("[distributed.init] Cannot resolve the coordinator ", env.host,
                                 ":", env.port, ": ", gai_strerror(rc), "."));
  }
  return res;
}

struct Magic {
  uint32_t magic = 0x6b696c6e;  // "kiln"
  int32_t rank = 0, size = 0;
};

}  // namespace

std::optional<LaunchEnv> launch_env() {
  const char* rank = std::getenv("KILN_RANK");
  const char* size = std::getenv("KILN_WORLD_SIZE");
  const char* coord = std::getenv("KILN_COORDINATOR");
  std::string host, port_s;
  if (!rank && !size) {
    rank = std::getenv("RANK");
    size = std::getenv("WORLD_SIZE");
    const char* a = std::getenv("MASTER_ADDR");
    const char* p = std::getenv("MASTER_PORT");
    if (!rank || !size) return std::nullopt;
    host = a ? a : "127.0.0.1";
    port_s = p ? p : "";
  } else {
    if (!rank || !size) {
      throw std::invalid_argument(
          "[distributed.init] KILN_RANK and KILN_WORLD_SIZE must be set together.");
    }
    if (coord) {
      std::string c(coord);
      auto colon = c.rfind(':');
      if (colon == std::string::npos) {
        throw std::invalid_argument(
            msg("[distributed.init] KILN_COORDINATOR='", c, "' is not host:port."));
      }
      host = c.substr(0, colon);
      port_s = c.substr(colon + 1);
    }
  }
  LaunchEnv env;
  env.rank = parse_int("the rank", rank);
  env.size = parse_int("the world size", size);
  if (env.size < 1 || env.rank >= env.size) {
    throw std::invalid_argument(msg("[distributed.init] Rank ", env.rank,
                                    " is out of range for a world of size ", env.size, "."));
  }
  if (env.size > 1) {
    if (port_s.empty()) {
      throw std::invalid_argument(
          "[distributed.init] A launch of several processes needs KILN_COORDINATOR=host:port "
          "(or MASTER_ADDR and MASTER_PORT).");
    }
    env.port = parse_int("the coordinator's port", port_s.c_str());
  }
  env.host = host.empty() ? "127.0.0.1" : host;
  if (const char* t = std::getenv("KILN_RENDEZVOUS_TIMEOUT")) env.timeout_s = std::atof(t);
  return env;
}

std::vector<std::string> tcp_all_gather(const LaunchEnv& env, const std::string& payload) {
  std::vector<std::string> all(env.size);
  all[env.rank] = payload;
  if (env.size == 1) return all;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(env.timeout_s));
  if (env.rank == 0) {
    addrinfo* res = resolve(env, true);
    Fd lsock(::socket(res->ai_family, res->ai_socktype, res->ai_protocol));
    int one = 1;
    ::setsockopt(lsock.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = ::bind(lsock.fd, res->ai_addr, res->ai_addrlen);
    ::freeaddrinfo(res);
    if (rc != 0) {
      throw std::runtime_error(msg("[distributed.init] Rank 0 cannot listen on port ", env.port,
                                   ": ", std::strerror(errno), "."));
    }
    ::listen(lsock.fd, env.size);
    std::vector<Fd> peers(env.size);
    for (int got = 1; got < env.size;) {
      if (!wait_fd(lsock.fd, POLLIN, deadline)) {
        std::string missing;
        for (int r = 1; r < env.size; ++r) {
          if (peers[r].fd < 0) missing += msg(missing.empty() ? "" : ", ", r);
        }
        throw std::runtime_error(msg("[distributed.init] Timed out after ", env.timeout_s,
                                     " s waiting for rank(s) ", missing, " at port ", env.port,
                                     "."));
      }
      Fd c(::accept(lsock.fd, nullptr, nullptr));
      if (c.fd < 0) continue;
      Magic m;
      read_all(c.fd, &m, sizeof(m), deadline, "a peer's greeting");
      if (m.magic != Magic{}.magic) continue;  // not ours
      if (m.size != env.size || m.rank <= 0 || m.rank >= env.size || peers[m.rank].fd >= 0) {
        throw std::runtime_error(msg(
            "[distributed.init] A peer claims rank ", m.rank, " of ", m.size,
            " but this launch has ", env.size, " ranks",
            peers[m.rank > 0 && m.rank < env.size ? m.rank : 0].fd >= 0 ? " (duplicate rank)" : "",
            "."));
      }
      all[m.rank] = read_blob(c.fd, deadline, "a peer's payload");
      peers[m.rank] = std::move(c);
      ++got;
    }
    std::string packed;
    for (const auto& s : all) {
      uint64_t n = s.size();
      packed.append(reinterpret_cast<const char*>(&n), 8);
      packed += s;
    }
    for (int r = 1; r < env.size; ++r) write_blob(peers[r].fd, packed, deadline, "the payloads");
    // Wait for every peer to close first, so rank 0's port is not reused too early.
    for (int r = 1; r < env.size; ++r) {
      char b;
      if (wait_fd(peers[r].fd, POLLIN, deadline)) (void)::recv(peers[r].fd, &b, 1, 0);
    }
    return all;
  }
  // Other ranks: connect, retrying while rank 0 starts.
  Fd sock;
  std::string last_error;
  while (true) {
    addrinfo* res = resolve(env, false);
    Fd s(::socket(res->ai_family, res->ai_socktype, res->ai_protocol));
    int rc = ::connect(s.fd, res->ai_addr, res->ai_addrlen);
    ::freeaddrinfo(res);
    if (rc == 0) {
      sock = std::move(s);
      break;
    }
    last_error = std::strerror(errno);
    if (seconds_left(deadline) <= 0) {
      throw std::runtime_error(msg("[distributed.init] Rank ", env.rank, " timed out after ",
                                   env.timeout_s, " s connecting to rank 0 at ", env.host, ":",
                                   env.port, " (", last_error, ")."));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int one = 1;
  ::setsockopt(sock.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Magic m;
  m.rank = env.rank;
  m.size = env.size;
  write_all(sock.fd, &m, sizeof(m), deadline, "the greeting");
  write_blob(sock.fd, payload, deadline, "the payload");
  std::string packed = read_blob(sock.fd, deadline, "the payloads from rank 0");
  size_t pos = 0;
  for (int r = 0; r < env.size; ++r) {
    uint64_t n = 0;
    if (pos + 8 > packed.size())
      throw std::runtime_error("[distributed.init] Malformed payloads from rank 0.");
    std::memcpy(&n, packed.data() + pos, 8);
    pos += 8;
    if (pos + n > packed.size())
      throw std::runtime_error("[distributed.init] Malformed payloads from rank 0.");
    all[r] = packed.substr(pos, n);
    pos += n;
  }
  return all;
}

}  // namespace kiln::distributed::detail

// kiln::distributed in one process: the group of one (collectives are identities, send and
// recv refuse), argument errors with their tags, backend names, and the TCP rendezvous with
// several ranks played by threads. The multi-process collectives are tested from Python
// (python/tests/test_distributed.py, through mpirun and python -m kiln.launch).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "kiln/distributed/backend.h"
#include "kiln/distributed/distributed.h"
#include "test_utils.h"

using namespace kiln;
using namespace kiln::test;
namespace dist = kiln::distributed;

namespace {

template <typename E, typename F>
void expect_throw(F f, const std::string& needle) {
  test::expect_throw_with<E>(f, {needle});
}

// A port nobody listens on now (the kernel's choice for a bound socket).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A launch by KILN_RANK & co. would make init connect; these tests need none.
bool launched() {
  return std::getenv("KILN_WORLD_SIZE") || std::getenv("OMPI_COMM_WORLD_SIZE") ||
         std::getenv("WORLD_SIZE");
}

}  // namespace

TEST(Distributed, SingletonGroupAndIdentities) {
  if (launched()) GTEST_SKIP() << "running inside a distributed launch";
  auto g = dist::init();
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.size(), 1);
  auto sub = g.split(3);
  EXPECT_EQ(sub.size(), 1);
  array x = random_array({3, 5}, float32);
  for (auto f :
       {&dist::all_sum, &dist::all_max, &dist::all_min, &dist::all_gather, &dist::sum_scatter}) {
    array y = f(x, g, {});
    expect_allclose(y, x.shape(), to_double(x));
  }
  auto ys = dist::grouped_all_sum({x, astype(x, int32)}, g);
  ASSERT_EQ(ys.size(), 2u);
  expect_allclose(ys[0], x.shape(), to_double(x));
  EXPECT_EQ(ys[1].dtype(), int32);
  EXPECT_TRUE(dist::grouped_all_sum({}, g).empty());
}

TEST(Distributed, ArgumentErrors) {
  if (launched()) GTEST_SKIP() << "running inside a distributed launch";
  auto g = dist::init();
  array x = random_array({4}, float32);
  expect_throw<std::invalid_argument>([&] { (void)dist::send(x, 1, g); }, "[send]");
  expect_throw<std::invalid_argument>([&] { (void)dist::recv({4}, float32, 0, g); }, "[recv]");
  expect_throw<std::invalid_argument>([&] { (void)dist::recv_like(x, 2, g); }, "[recv]");
  expect_throw<std::invalid_argument>([&] { (void)dist::sum_scatter(array(1.0f), g); },
                                      "[sum_scatter]");
  expect_throw<std::invalid_argument>([&] { (void)dist::all_max(astype(x, complex64), g); },
                                      "[all_max]");
  expect_throw<std::invalid_argument>([&] { (void)dist::all_min(astype(x, complex64), g); },
                                      "[all_min]");
  expect_throw<std::invalid_argument>([&] { (void)g.split(-1); }, "[split]");
  expect_throw<std::invalid_argument>([&] { (void)dist::init(false, "gloo"); },
                                      "[distributed.init]");
  expect_throw<std::invalid_argument>([&] { (void)dist::is_available("ring"); },
                                      "[distributed.is_available]");
  // Whatever is installed, the answers are booleans and "any" is their or.
  EXPECT_EQ(dist::is_available("any"), dist::is_available("mpi") || dist::is_available("nccl"));
}

TEST(Distributed, TcpRendezvousWithThreads) {
  // Each thread plays one rank; payloads of different lengths, rank 0 included.
  const int n = 4;
  const int port = free_port();
  std::vector<std::vector<std::string>> got(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      dist::detail::LaunchEnv env;
      env.rank = r;
      env.size = n;
      env.host = "127.0.0.1";
      env.port = port;
      env.timeout_s = 30;
      try {
        got[r] = dist::detail::tcp_all_gather(env, std::string(r + 1, static_cast<char>('a' + r)));
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(errors[r].empty()) << "rank " << r << ": " << errors[r];
    ASSERT_EQ(got[r].size(), static_cast<size_t>(n));
    for (int q = 0; q < n; ++q)
      EXPECT_EQ(got[r][q], std::string(q + 1, static_cast<char>('a' + q)));
  }
}

TEST(Distributed, TcpRendezvousTimesOutNamingMissingRanks) {
  dist::detail::LaunchEnv env;
  env.rank = 0;
  env.size = 3;
  env.host = "127.0.0.1";
  env.port = free_port();
  env.timeout_s = 0.5;
  expect_throw<std::runtime_error>([&] { (void)dist::detail::tcp_all_gather(env, "x"); },
                                   "rank(s) 1, 2");
}

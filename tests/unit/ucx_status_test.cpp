// The words of a failed UCX request (runtime/transport/ucx_status.hpp): "PE n failed or exited"
// only when the peer is gone; a request UCX cancels or refuses while the peer is connected (UCX
// 1.16's "cannot find remote protocol", UCS_ERR_CANCELED) is named as a UCX transport or protocol
// failure with UCX's status and a hint.
#include "runtime/transport/ucx_status.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace vshmem {
namespace {

int random_pe() {
  std::random_device rd;
  return static_cast<int>(rd() % 1000) + 1;
}

TEST(UcxStatus, CancelledWhilePeerConnectedIsATransportFailure) {
  const int pe = random_pe();
  const std::string text =
      ucx_failure_text("atomic on", pe, UCS_ERR_CANCELED, false, "UCX_TLS=tcp");
  const std::string p = std::to_string(pe);
  EXPECT_EQ(text.find("failed or exited"), std::string::npos) << text;
  EXPECT_NE(text.find("atomic on PE " + p + ":"), std::string::npos) << text;
  EXPECT_NE(text.find(ucs_status_string(UCS_ERR_CANCELED)), std::string::npos) << text;
  EXPECT_NE(text.find("transport or protocol failure"), std::string::npos) << text;
  EXPECT_NE(text.find("not of PE " + p), std::string::npos) << text;
  EXPECT_NE(text.find("UCX_TLS=tcp"), std::string::npos) << text;
  EXPECT_NE(text.find("UCX_PROTO_ENABLE"), std::string::npos) << text;
}

TEST(UcxStatus, OtherRefusalsAreTransportFailuresToo) {
  for (ucs_status_t s : {UCS_ERR_UNSUPPORTED, UCS_ERR_NO_ELEM, UCS_ERR_NO_MEMORY,
                         UCS_ERR_INVALID_PARAM, UCS_ERR_MESSAGE_TRUNCATED}) {
    EXPECT_FALSE(ucx_status_means_peer_lost(s)) << ucs_status_string(s);
    const std::string text = ucx_failure_text("get from", 3, s, false, "UCX's default");
    EXPECT_EQ(text.find("failed or exited"), std::string::npos) << text;
    EXPECT_NE(text.find(ucs_status_string(s)), std::string::npos) << text;
  }
}

TEST(UcxStatus, ConnectionFailuresNameThePeerAsFailed) {
  const int pe = random_pe();
  for (ucs_status_t s : {UCS_ERR_ENDPOINT_TIMEOUT, UCS_ERR_CONNECTION_RESET, UCS_ERR_UNREACHABLE,
                         UCS_ERR_NOT_CONNECTED, UCS_ERR_IO_ERROR}) {
    EXPECT_TRUE(ucx_status_means_peer_lost(s)) << ucs_status_string(s);
    const std::string text = ucx_failure_text("put to", pe, s, false, "UCX_TLS=tcp");
    const std::string p = std::to_string(pe);
    EXPECT_NE(text.find("put to PE " + p + ": PE " + p +
                        " failed or exited (UCX: " + ucs_status_string(s) + ")"),
              std::string::npos)
        << text;
  }
}

TEST(UcxStatus, ThePeersErrorHandlerWinsOverTheStatus) {
  // The endpoint's error handler reported the peer: a cancelled request is then the peer's
  // failure (UCX cancels the requests of a failed endpoint).
  const std::string text = ucx_failure_text("atomic on", 7, UCS_ERR_CANCELED, true, "UCX_TLS=tcp");
  EXPECT_NE(text.find("atomic on PE 7: PE 7 failed or exited (UCX: "), std::string::npos) << text;
}

}  // namespace
}  // namespace vshmem

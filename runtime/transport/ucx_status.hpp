// What a failed UCX request means, in words for the user (plugin_ucx.cpp). A request can fail
// because the peer is gone (its process exited or hung, the connection broke: UCX's endpoint
// error handler reports it) or because UCX itself could not carry the operation while the peer
// is alive: e.g. UCX 1.16 cancels a request (UCS_ERR_CANCELED, proto_reconfig.c "cannot find
// remote protocol") when no protocol of its selection fits the endpoint. Only the first is "PE n
// failed or exited"; the second names UCX's status and says it is a transport or protocol
// failure, with what to try. Header-only: the plugin and its unit test include it.
#pragma once

#include <ucs/type/status.h>

#include <cstdio>
#include <string>

namespace vshmem {

// Statuses with which UCX completes requests to a peer whose connection failed (uct_set_ep_failed
// / ucp_ep_set_failed purge the endpoint's requests with the transport's error).
inline bool ucx_status_means_peer_lost(ucs_status_t s) {
  switch (s) {
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_SHMEM_SEGMENT: return true;
    default: return false;
  }
}

// The message for `what` ("atomic on") to PE pe that UCX completed with status s. peer_failed:
// the endpoint's error handler has reported the peer (wins over the status). transports: what
// UCX may use, for the hint ("UCX_TLS=tcp").
inline std::string ucx_failure_text(const char* what, int pe, ucs_status_t s, bool peer_failed,
                                    const std::string& transports) {
  char buf[768];
  if (peer_failed || ucx_status_means_peer_lost(s)) {
    std::snprintf(buf, sizeof(buf), "%s PE %d: PE %d failed or exited (UCX: %s)", what, pe, pe,
                  ucs_status_string(s));
  } else {
    std::snprintf(buf, sizeof(buf),
                  "%s PE %d: UCX failed the request: %s. A transport or protocol failure of "
                  "UCX, not of PE %d (its connection is up). Transports: %s; another "
                  "UCX_TLS (e.g. sm,self or tcp) or UCX_PROTO_ENABLE=n may avoid it; "
                  "UCX_LOG_LEVEL=debug shows UCX's reason",
                  what, pe, ucs_status_string(s), pe, transports.c_str());
  }
  return buf;
}

}  // namespace vshmem
